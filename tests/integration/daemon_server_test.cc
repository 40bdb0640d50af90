// The daemon's HTTP server (src/daemon/server.h) on a real unix socket (and
// loopback TCP), driven by a real HTTP client, with a handler of the test's
// own behind a table of test routes: JSON, streams, deferred replies and
// WebSockets, and the checks the server makes before any handler runs.
#include "src/daemon/server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/http_test_client.h"
#include "tests/support/sanitizer.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::daemon {
namespace {

using testing::HttpTestClient;
using testing::TempDir;
using testing::WebSocketTestClient;

constexpr Route kTestRoutes[] = {
    {Method::kGet, "/t/public", RouteId::kHealth, Access::kPublic, BodyKind::kNone, ReplyKind::kJson, "public"},
    {Method::kPost, "/t/echo", RouteId::kCreateSandbox, Access::kToken, BodyKind::kJson, ReplyKind::kJson, "echo"},
    {Method::kGet, "/t/stream", RouteId::kProcessLogStream, Access::kToken, BodyKind::kNone, ReplyKind::kStream, "s"},
    {Method::kPost, "/t/wait", RouteId::kWaitProcess, Access::kToken, BodyKind::kJson, ReplyKind::kJson, "deferred"},
    {Method::kGet, "/t/ws", RouteId::kAttachPty, Access::kToken, BodyKind::kNone, ReplyKind::kWebSocket, "ws"},
    {Method::kGet, "/t/block", RouteId::kGetSandbox, Access::kToken, BodyKind::kNone, ReplyKind::kJson, "block"},
};

constexpr const char* kToken = "test-token-0123456789";

// Lines produced by a thread of their own, one every `delay`, handed to the
// server through a Waker: what a live process's log stream looks like.
class TickSource : public ChunkSource {
 public:
  struct Shared {
    std::mutex mu;
    std::deque<std::string> lines;
    bool done = false;
    bool stopped = false;
    Waker wake;
  };

  TickSource(int count, std::chrono::milliseconds delay, std::atomic<int>& live) : live_(live) {
    live_.fetch_add(1);
    shared_ = std::make_shared<Shared>();
    std::thread([s = shared_, count, delay] {
      for (int i = 0; i < count; ++i) {
        std::this_thread::sleep_for(delay);
        Waker w;
        {
          std::lock_guard lock(s->mu);
          if (s->stopped) return;
          s->lines.push_back(nlohmann::json{{"i", i}}.dump() + "\n");
          if (i + 1 == count) s->done = true;
          w = s->wake;
        }
        if (w) w();
      }
    }).detach();
  }
  ~TickSource() override {
    {
      std::lock_guard lock(shared_->mu);
      shared_->stopped = true;
    }
    live_.fetch_sub(1);
  }
  Step next(std::string& out, const Waker& wake) override {
    std::lock_guard lock(shared_->mu);
    if (!shared_->lines.empty()) {
      while (!shared_->lines.empty()) {
        out += shared_->lines.front();
        shared_->lines.pop_front();
      }
      return Step::kData;
    }
    if (shared_->done) return Step::kEnd;
    shared_->wake = wake;
    return Step::kPending;
  }

 private:
  std::shared_ptr<Shared> shared_;
  std::atomic<int>& live_;
};

class TimerReply : public DeferredReply {
 public:
  TimerReply(std::chrono::milliseconds after, std::atomic<int>& live) : live_(live) {
    live_.fetch_add(1);
    due_ = std::chrono::steady_clock::now() + after;
  }
  ~TimerReply() override { live_.fetch_sub(1); }
  std::optional<Response> poll(const Waker& wake) override {
    if (std::chrono::steady_clock::now() >= due_) return Response::json(R"({"done":true})");
    std::thread([wake, due = due_] {
      std::this_thread::sleep_until(due);
      wake();
    }).detach();
    return std::nullopt;
  }

 private:
  std::chrono::steady_clock::time_point due_;
  std::atomic<int>& live_;
};

class EchoDuplex : public Duplex {
 public:
  void receive(std::string_view bytes) override {
    if (bytes == "bye") {
      end_ = true;
    } else {
      pending_.push_back("echo:" + std::string(bytes));
    }
    if (wake_) wake_();
  }
  ChunkSource::Step next(std::string& out, const Waker& wake) override {
    if (!pending_.empty()) {
      out = pending_.front();
      pending_.pop_front();
      return ChunkSource::Step::kData;
    }
    if (end_) return ChunkSource::Step::kEnd;
    wake_ = wake;
    return ChunkSource::Step::kPending;
  }

 private:
  std::deque<std::string> pending_;
  bool end_ = false;
  Waker wake_;
};

class TestHandler : public Handler {
 public:
  std::atomic<int> calls{0};
  std::atomic<int> liveSources{0};
  std::atomic<int> liveDeferred{0};
  std::mutex gateMu;
  std::condition_variable gateCv;
  bool gateOpen = false;

  void openGate() {
    std::lock_guard lock(gateMu);
    gateOpen = true;
    gateCv.notify_all();
  }

  Reply handle(Request& r) override {
    calls.fetch_add(1);
    std::string_view p = r.match.route->pattern;
    if (p == "/t/public") return Response::json(R"({"ok":true})");
    if (p == "/t/echo") return Response::json(r.body.empty() ? "{}" : r.body);
    if (p == "/t/stream") {
      int n = r.query.count("n") ? std::stoi(r.query.at("n")) : 10;
      int delay = r.query.count("delayMs") ? std::stoi(r.query.at("delayMs")) : 1;
      return StreamReply{std::make_shared<TickSource>(n, std::chrono::milliseconds(delay), liveSources)};
    }
    if (p == "/t/wait") {
      int ms = r.query.count("ms") ? std::stoi(r.query.at("ms")) : 50;
      return Deferred{std::make_shared<TimerReply>(std::chrono::milliseconds(ms), liveDeferred)};
    }
    if (p == "/t/ws") return Upgrade{std::make_shared<EchoDuplex>()};
    if (p == "/t/block") {
      // Holds its worker thread until the test opens the gate.
      if (r.query.count("gate")) {
        std::unique_lock lock(gateMu);
        gateCv.wait(lock, [&] { return gateOpen; });
      }
      return Response::json(R"({"blocked":true})");
    }
    return Response::error({ApiCode::kNotFound, "?"});
  }
};

testing::Headers auth() { return {{"Authorization", std::string("Bearer ") + kToken}}; }

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}) {
    o.routes = kTestRoutes;
    if (o.listen.path.empty() && o.listen.kind == ListenAddress::Kind::kUnix) o.listen.path = socketPath();
    if (!o.auth.token) o.auth.token = kToken;
    handler = std::make_shared<TestHandler>();
    server = std::make_unique<Server>(std::move(o), handler);
    server->start();
  }
  std::string socketPath() const { return dir.path() + "/d.sock"; }
  HttpTestClient client() {
    HttpTestClient c(socketPath());
    c.setDefaultHeaders(auth());
    return c;
  }

  TempDir dir;
  std::shared_ptr<TestHandler> handler;
  std::unique_ptr<Server> server;
};

TEST_F(ServerTest, TheUnixSocketIsCreatedMode0600) {
  start();
  struct stat st{};
  ASSERT_EQ(::lstat(socketPath().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ServerTest, AMissingOrWrongTokenIs401AndNoHandlerRuns) {
  start();
  HttpTestClient c(socketPath());
  for (const testing::Headers& h : std::vector<testing::Headers>{
           {}, {{"Authorization", "Bearer wrong-token-000000000"}}, {{"Authorization", kToken}},
           {{"Authorization", std::string("Basic ") + kToken}}}) {
    auto r = c.request("POST", "/t/echo", R"({"a":1})", h);
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "unauthorized");
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
  }
  EXPECT_EQ(handler->calls.load(), 0);
  EXPECT_EQ(c.request("GET", "/t/public").status, 200) << "a public route needs no token";
  EXPECT_EQ(c.request("POST", "/t/echo", R"({"a":1})", auth()).body, R"({"a":1})");
  EXPECT_EQ(handler->calls.load(), 2);
}

TEST_F(ServerTest, ARequestWithAnOriginIsRefusedUnlessAllowed) {
  ServerOptions o;
  o.auth.allowedOrigins = {"http://localhost:5173"};
  start(o);
  auto c = client();
  auto r = c.request("GET", "/t/public", "", {{"Origin", "http://attacker.example"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "permission_denied");
  r = c.request("POST", "/t/echo", "{}", {{"Origin", "null"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(handler->calls.load(), 0);
  EXPECT_EQ(c.request("GET", "/t/public", "", {{"Origin", "http://localhost:5173"}}).status, 200);
}

TEST_F(ServerTest, OversizedBodiesAre413WithoutReachingTheHandler) {
  ServerOptions o;
  o.limits.maxJsonBodyBytes = 1000;
  start(o);
  auto c = client();
  std::string big = "{\"a\":\"" + std::string(2000, 'x') + "\"}";
  auto r = c.request("POST", "/t/echo", big);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "too_large");
  // Chunked, so the length is only known while reading.
  r = c.raw("POST /t/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + std::string(kToken) +
            "\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" + std::string(2000, 'x') + "\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(handler->calls.load(), 0);
  EXPECT_EQ(c.request("POST", "/t/echo", R"({"a":1})").status, 200);
}

TEST_F(ServerTest, CurlGetsAReplyToALargeBodySentWithExpectContinue) {
  start();
  // curl sends "Expect: 100-continue" for bodies over 1 MiB and waits for it.
  std::string body = "{\"a\":\"" + std::string(2 << 20, 'x') + "\"}";
  std::string file = dir.file("body.json", body);
  auto r = testing::runProcess({"curl", "-sS", "--max-time", "20", "--unix-socket", socketPath(), "-H",
                                std::string("Authorization: Bearer ") + kToken, "-H", "Content-Type: application/json",
                                "--data-binary", "@" + file, "-o", "/dev/null", "-w", "%{http_code}",
                                "http://localhost/t/echo"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "200");
}

TEST_F(ServerTest, MalformedRequestsAndUnknownRoutesGetJsonErrors) {
  start();
  auto c = client();
  auto r = c.request("GET", "/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "not_found");
  r = c.request("DELETE", "/t/echo");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "POST");
  r = c.request("GET", "/t/public?bad=%zz");
  EXPECT_EQ(r.status, 400);
  r = c.request("GET", "/t/block", "{\"x\":1}");
  EXPECT_EQ(r.status, 400) << "a route without a body refuses one";
  r = c.raw("GARBAGE\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "invalid_argument");
  r = c.raw("GET /t/public HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(70000, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  r = c.request("GET", "/t/stream", "", {{"Authorization", std::string("Bearer ") + kToken}});
  EXPECT_EQ(r.status, 200) << "a stream read whole still ends";
  r = c.request("GET", "/t/ws");
  EXPECT_EQ(r.status, 400) << "a WebSocket route without an upgrade";
}

TEST_F(ServerTest, ATcpListenerNeedsATokenAndServesLoopback) {
  ServerOptions o;
  o.listen.kind = ListenAddress::Kind::kTcp;
  o.listen.host = "127.0.0.1";
  o.listen.port = 0;
  o.auth.token = std::nullopt;
  o.routes = kTestRoutes;
  EXPECT_THROW(Server(o, std::make_shared<TestHandler>()), std::invalid_argument);
  o.auth.token = kToken;
  start(o);
  ASSERT_NE(server->address().port, 0);
  HttpTestClient c("127.0.0.1", server->address().port);
  EXPECT_EQ(c.request("POST", "/t/echo", "{}").status, 401);
  EXPECT_EQ(c.request("POST", "/t/echo", "{}", auth()).status, 200);
}

TEST_F(ServerTest, ListenAddressesAreUnixPathsOrLoopbackOnly) {
  EXPECT_TRUE(std::holds_alternative<ListenAddress>(parseListenAddress("unix:/run/s.sock")));
  EXPECT_TRUE(std::holds_alternative<ListenAddress>(parseListenAddress("127.0.0.1:7070")));
  EXPECT_TRUE(std::holds_alternative<ListenAddress>(parseListenAddress("[::1]:7070")));
  for (const char* bad : {"unix:", "unix:rel.sock", "0.0.0.0:7070", "10.0.0.1:80", "localhost:7070", "127.0.0.1",
                          "127.0.0.1:99999", "[::]:80", "127.0.0.1:x"})
    EXPECT_TRUE(std::holds_alternative<std::string>(parseListenAddress(bad))) << bad;
}

TEST_F(ServerTest, AStaleSocketIsReplacedAndALiveOneRefused) {
  // A socket file nobody listens on (a daemon killed with -9).
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, socketPath().c_str(), sizeof sa.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ::close(fd);
  }
  start();
  EXPECT_EQ(client().request("GET", "/t/public").status, 200);
  ServerOptions o;
  o.listen.path = socketPath();
  o.auth.token = kToken;
  o.routes = kTestRoutes;
  EXPECT_THROW(Server(o, std::make_shared<TestHandler>()), std::runtime_error);
  EXPECT_EQ(client().request("GET", "/t/public").status, 200) << "the running server keeps its socket";
  std::string file = dir.file("plain");
  o.listen.path = file;
  EXPECT_THROW(Server(o, std::make_shared<TestHandler>()), std::runtime_error);
}

TEST_F(ServerTest, AThousandSequentialRequestsLeakNothing) {
  start();
  auto c = client();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(c.request("POST", "/t/echo", R"({"warm":1})").status, 200);
  c.close();
  ASSERT_TRUE(eventually([&] { return server->stats().connections == 0; }));
  std::size_t fds = testing::openFdCount(), threads = testing::threadCount();
  std::size_t rss = testing::residentKiB();
  for (int i = 0; i < 1000; ++i) {
    auto r = c.request("POST", "/t/echo", R"({"i":)" + std::to_string(i) + "}");
    ASSERT_EQ(r.status, 200);
    ASSERT_EQ(r.body, R"({"i":)" + std::to_string(i) + "}");
    // Every tenth request on a new connection.
    if (i % 10 == 9) c.close();
  }
  c.close();
  EXPECT_TRUE(eventually([&] { return server->stats().connections == 0; }));
  EXPECT_TRUE(eventually([&] { return testing::openFdCount() == fds; })) << testing::openFdCount() << " vs " << fds;
  EXPECT_EQ(testing::threadCount(), threads);
  if (!testing::kSanitized) {  // tests/support/sanitizer.h: the fd and thread counts above still check
    EXPECT_LT(testing::residentKiB(), rss + 4096) << "RSS grew from " << rss << " KiB";
  }
  EXPECT_EQ(server->stats().requestsInFlight, 0u);
}

TEST_F(ServerTest, AHundredConcurrentStreamsGetEveryLineInOrder) {
  start();
  constexpr int kStreams = 100, kLines = 50;
  std::size_t fdsBefore = testing::openFdCount();
  std::vector<std::thread> clients;
  std::atomic<int> complete{0};
  std::vector<std::string> failures(kStreams);
  for (int s = 0; s < kStreams; ++s) {
    clients.emplace_back([&, s] {
      try {
        HttpTestClient c(socketPath());
        std::string got;
        auto r = c.stream("GET", "/t/stream?n=" + std::to_string(kLines) + "&delayMs=2",
                          [&](std::string_view d) {
                            got.append(d);
                            return true;
                          },
                          "", auth());
        std::string want;
        for (int i = 0; i < kLines; ++i) want += nlohmann::json{{"i", i}}.dump() + "\n";
        if (r.status != 200) failures[s] = "status " + std::to_string(r.status);
        else if (got != want) failures[s] = "lines out of order or lost: " + got.substr(0, 200);
        else complete.fetch_add(1);
      } catch (const std::exception& e) {
        failures[s] = e.what();
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int s = 0; s < kStreams; ++s) EXPECT_TRUE(failures[s].empty()) << "stream " << s << ": " << failures[s];
  EXPECT_EQ(complete.load(), kStreams);
  EXPECT_TRUE(eventually([&] { return handler->liveSources.load() == 0; }));
  EXPECT_TRUE(eventually([&] { return server->stats().connections == 0; }));
  EXPECT_TRUE(eventually([&] { return testing::openFdCount() <= fdsBefore; }));
}

TEST_F(ServerTest, AClientThatStallsOrLeavesMidStreamDoesNotHoldUpOthers) {
  start();
  // A: reads one piece, then stops reading without closing (a stalled reader).
  HttpTestClient stalled(socketPath());
  std::thread stall([&] {
    stalled.stream("GET", "/t/stream?n=100000&delayMs=0", [&](std::string_view) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return false;  // then leaves
    }, "", auth());
  });
  // B: disconnects after the first piece.
  HttpTestClient leaver(socketPath());
  leaver.stream("GET", "/t/stream?n=100000&delayMs=1", [](std::string_view) { return false; }, "", auth());
  // C: a normal stream and a normal request complete while A stalls.
  HttpTestClient c(socketPath());
  std::string got;
  auto r = c.stream("GET", "/t/stream?n=20&delayMs=1", [&](std::string_view d) {
    got.append(d);
    return true;
  }, "", auth());
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(got.find("{\"i\":19}"), std::string::npos);
  EXPECT_EQ(client().request("POST", "/t/echo", "{}").status, 200);
  stall.join();
  // Both leavers' sources are freed once their clients are gone.
  EXPECT_TRUE(eventually([&] { return handler->liveSources.load() == 0; })) << handler->liveSources.load();
}

TEST_F(ServerTest, ADeferredReplyArrivesAndIsFreedWhenItsClientLeaves) {
  start();
  auto c = client();
  auto r = c.request("POST", "/t/wait?ms=100", "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"done":true})");
  EXPECT_EQ(c.request("POST", "/t/echo", R"({"after":1})").body, R"({"after":1})") << "keep-alive after a deferred reply";
  // A client that leaves while waiting frees the wait at once, not after 60 s.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, socketPath().c_str(), sizeof sa.sun_path - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    std::string req = "POST /t/wait?ms=60000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + std::string(kToken) +
                      "\r\nContent-Length: 2\r\n\r\n{}";
    ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    ASSERT_TRUE(eventually([&] { return handler->liveDeferred.load() == 1; }));
    ::close(fd);
  }
  EXPECT_TRUE(eventually([&] { return handler->liveDeferred.load() == 0; }, std::chrono::milliseconds(3000)))
      << "the closed client's wait is still held";
}

TEST_F(ServerTest, AWebSocketCarriesBinaryFramesBothWays) {
  start();
  WebSocketTestClient ws(socketPath(), "/t/ws", auth());
  ws.send("hello");
  EXPECT_EQ(ws.receive(), "echo:hello");
  std::string binary("\x00\xff\x01", 3);
  ws.send(binary);
  EXPECT_EQ(ws.receive(), "echo:" + binary);
  ws.send("bye");
  EXPECT_EQ(ws.receive(), std::nullopt) << "the server closed the WebSocket when the duplex ended";
  EXPECT_THROW(WebSocketTestClient(socketPath(), "/t/ws"), std::runtime_error) << "the upgrade needs the token too";
}

TEST_F(ServerTest, TheConcurrentRequestLimitAnswers503) {
  ServerOptions o;
  o.limits.maxConcurrentRequests = 2;
  o.workerThreads = 4;
  start(o);
  std::vector<std::thread> held;
  for (int i = 0; i < 2; ++i) held.emplace_back([&] { client().request("GET", "/t/block?gate=1"); });
  ASSERT_TRUE(eventually([&] { return server->stats().requestsInFlight == 2; }));
  auto r = client().request("GET", "/t/block");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], "unavailable");
  EXPECT_NE(r.body.find("--max-requests"), std::string::npos);
  handler->openGate();
  for (auto& t : held) t.join();
  EXPECT_EQ(client().request("GET", "/t/block").status, 200);
}

TEST_F(ServerTest, TheConnectionLimitAnswers503AndCloses) {
  ServerOptions o;
  o.limits.maxConnections = 2;
  start(o);
  auto a = client(), b = client();
  ASSERT_EQ(a.request("GET", "/t/public").status, 200);
  ASSERT_EQ(b.request("GET", "/t/public").status, 200);
  ASSERT_TRUE(eventually([&] { return server->stats().connections == 2; }));
  auto r = client().request("GET", "/t/public");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("--max-connections"), std::string::npos);
  a.close();
  ASSERT_TRUE(eventually([&] { return server->stats().connections == 1; }));
  EXPECT_EQ(client().request("GET", "/t/public").status, 200);
}

TEST_F(ServerTest, AHandlerBlockingItsWorkerDoesNotHoldUpOtherClients) {
  ServerOptions o;
  o.workerThreads = 2;
  start(o);
  std::thread held([&] { client().request("GET", "/t/block?gate=1"); });
  ASSERT_TRUE(eventually([&] { return server->stats().requestsInFlight == 1; }));
  // Served while the first handler still holds its worker.
  EXPECT_EQ(client().request("GET", "/t/public").status, 200);
  EXPECT_EQ(client().request("POST", "/t/echo", "{}").status, 200);
  EXPECT_TRUE(eventually([&] { return server->stats().requestsInFlight == 1; }))
      << "the first request is still held";
  handler->openGate();
  held.join();
}

}  // namespace
}  // namespace stockade::daemon
