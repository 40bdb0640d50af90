// Limits, hostile clients and volume: every limit answers with its status and
// never hangs; garbage and slowloris clients do not hurt other clients; 1,000
// concurrent tunnels; 200 sequential large downloads without truncation.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <filesystem>

#include <random>
#include <thread>

#include "proxy_fixture.h"

namespace stockade::proxy::testing {
namespace {

using namespace std::chrono_literals;

class ProxyRobustnessTest : public ProxyFixture {
 protected:
  std::string p() const { return std::to_string(origin_->port()); }
  bool stillServes() {
    CurlResult r = runCurl({"--proxy", httpProxy(), "-sS", "-o", "/dev/null", "-w", "%{http_code}", url("/bytes/100/1")});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "200");
    return r.exitCode == 0 && r.out == "200";
  }
  std::string connectTo(int fd, const std::string& target) {
    sendAll(fd, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
    return readHead(fd);
  }
  // 1,000 tunnels at once through a proxy with `limits`, each carrying its
  // own bytes both ways at the same time (defined below).
  void thousandTunnels(ProxyLimits limits);
};

// The readers the proxy tests use tell a peer that closed without a reply
// from one that hung (here: a 100 ms receive timeout instead of 10 s).
TEST(ProxyTestSupportTest, ReadAllTellsAHangFromACloseAndFailsTheTestOnAHang) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  platform::UniqueFd a(sv[0]), b(sv[1]);
  timeval tv{0, 100'000};
  ::setsockopt(a.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sendAll(b.get(), "partial");
  Received hung = receiveAll(a.get());
  EXPECT_EQ(hung.end, ReadEnd::kHung);
  EXPECT_EQ(hung.bytes, "partial");
  EXPECT_NONFATAL_FAILURE(readAll(a.get()), "hung");
  EXPECT_NONFATAL_FAILURE(readN(a.get(), 4), "hung");
  EXPECT_NONFATAL_FAILURE(readHead(a.get()), "hung");
  ::shutdown(b.get(), SHUT_WR);
  Received closed = receiveAll(a.get());
  EXPECT_EQ(closed.end, ReadEnd::kClosed);
  EXPECT_EQ(closed.bytes, "");
}

TEST_F(ProxyRobustnessTest, OversizedRequestHeadGets431) {
  ProxyLimits limits;
  limits.maxHeaderBytes = 8 * 1024;
  start({files()}, {}, limits);
  std::string request = "GET " + url("/") + " HTTP/1.1\r\nHost: " + files() + "\r\nX-Big: " + std::string(9000, 'a') +
                        "\r\n\r\n";
  EXPECT_TRUE(roundTrip(port_, request).starts_with("HTTP/1.1 431")) << "head over the limit";
  // A head that never ends is refused too, once it passes the limit.
  EXPECT_TRUE(roundTrip(port_, "GET " + url("/") + " HTTP/1.1\r\nX: " + std::string(20000, 'b')).starts_with("HTTP/1.1 431"));
  EXPECT_TRUE(stillServes());
}

TEST_F(ProxyRobustnessTest, SlowlorisPartialHeadGets408AndOthersAreServedMeanwhile) {
  ProxyLimits limits;
  limits.headerTimeout = 500ms;
  start({files()}, {}, limits);
  std::vector<platform::UniqueFd> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(connectLoopback(port_));
    sendAll(slow.back().get(), "GET " + url("/") + " HTTP/1.1\r\nHost: fil");
  }
  EXPECT_TRUE(stillServes());
  for (auto& fd : slow) {
    sendAll(fd.get(), "e");  // trickling bytes does not extend the head deadline
    std::string reply = readAll(fd.get());
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 408")) << reply;
    EXPECT_NE(reply.find("X-Proxy-Error: request-timeout"), std::string::npos);
  }
  // A connection that never sends a byte is closed without a reply (not left hanging).
  auto silent = connectLoopback(port_);
  Received r = receiveAll(silent.get());
  EXPECT_EQ(r.end, ReadEnd::kClosed) << readEndName(r.end);
  EXPECT_EQ(r.bytes, "");
}

TEST_F(ProxyRobustnessTest, TunnelLimitPerSandboxGets503AndFreesSlotsOnClose) {
  EchoServer echo;
  ProxyLimits limits;
  limits.maxTunnelsPerSandbox = 2;
  std::string target = "echo.test:" + std::to_string(echo.port());
  start({target}, {}, limits, {{"echo.test", "127.0.0.1"}});
  auto a = connectLoopback(port_);
  auto b = connectLoopback(port_);
  EXPECT_TRUE(connectTo(a.get(), target).starts_with("HTTP/1.1 200"));
  EXPECT_TRUE(connectTo(b.get(), target).starts_with("HTTP/1.1 200"));
  EXPECT_EQ(proxy_->activeTunnels("sb-1"), 2u);
  auto c = connectLoopback(port_);
  std::string refused = connectTo(c.get(), target);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("X-Proxy-Error: tunnel-limit"), std::string::npos);
  // SOCKS5 is refused with "general failure".
  auto s = connectLoopback(port_);
  sendAll(s.get(), std::string("\x05\x01\x00", 3));
  ASSERT_EQ(readN(s.get(), 2), std::string("\x05\x00", 2));
  sendAll(s.get(), std::string("\x05\x01\x00\x03\x09", 5) + "echo.test" + char(echo.port() >> 8) + char(echo.port() & 0xff));
  std::string reply = readN(s.get(), 10);
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x01);
  // Closing one tunnel frees its slot.
  ::shutdown(a.get(), SHUT_WR);
  EXPECT_EQ(readAll(a.get()), "");
  a.reset();
  auto d = connectLoopback(port_);
  std::string again;
  for (int i = 0; i < 100 && !again.starts_with("HTTP/1.1 200"); ++i) {  // the slot frees when the proxy sees EOF
    d = connectLoopback(port_);
    again = connectTo(d.get(), target);
    if (!again.starts_with("HTTP/1.1 200")) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(again.starts_with("HTTP/1.1 200")) << again;
}

// A second sandbox's listener on the same proxy, with the same rules.
struct SecondSandbox {
  std::uint16_t port = 0;
  ListenerHandle handle;
};

class ProxyAdmissionTest : public ProxyRobustnessTest {
 protected:
  SecondSandbox addSecondSandbox() {
    SecondSandbox b;
    auto fd = listenLoopback(b.port);
    b.handle = proxy_->addListener(
        std::move(fd), ListenerContext{"sb-2", "run-2", [this] { return std::atomic_load(&rules_); },
                                       {{"files.test", "127.0.0.1"}, {"echo.test", "127.0.0.1"}}});
    return b;
  }
  // A CONNECT tunnel through `port` that echoes a message.
  bool tunnelEchoes(std::uint16_t port, const std::string& target) {
    auto fd = connectLoopback(port);
    if (!fd || !connectTo(fd.get(), target).starts_with("HTTP/1.1 200")) return false;
    sendAll(fd.get(), "ping");
    return readN(fd.get(), 4) == "ping";
  }
  std::string socks5Connect(int fd, std::uint16_t echoPort) {
    sendAll(fd, std::string("\x05\x01\x00\x05\x01\x00\x03\x09", 8) + "echo.test" + char(echoPort >> 8) +
                    char(echoPort & 0xff));
    return readN(fd, 12);
  }
  // Waits (bounded) until the audit log holds `n` events whose rule contains `what`.
  std::size_t waitForEvents(const std::string& what, std::size_t n) {
    std::size_t found = 0;
    for (int i = 0; i < 500; ++i) {
      found = 0;
      for (const auto& e : events()) found += e.rule.find(what) != std::string::npos;
      if (found >= n) break;
      std::this_thread::sleep_for(20ms);
    }
    return found;
  }
};

std::size_t openFds() {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                                std::filesystem::directory_iterator()));
}

TEST_F(ProxyAdmissionTest, ConnectionsBeyondTheSandboxLimitAreRefusedWhileAnotherSandboxIsServed) {
  EchoServer echo;
  std::string target = "echo.test:" + std::to_string(echo.port());
  ProxyLimits limits;
  limits.maxConnectionsPerSandbox = 4;
  start({target, files()}, {}, limits, {{"echo.test", "127.0.0.1"}});
  SecondSandbox b = addSecondSandbox();
  std::vector<platform::UniqueFd> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(connectLoopback(port_));
    ASSERT_TRUE(connectTo(open.back().get(), target).starts_with("HTTP/1.1 200")) << i;
  }
  EXPECT_EQ(proxy_->activeConnections("sb-1"), 4u);

  // HTTP: 503 naming the limit, without the request being read.
  auto over = connectLoopback(port_);
  sendAll(over.get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  std::string reply = readAll(over.get());
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("X-Proxy-Error: connection-limit"), std::string::npos) << reply;
  EXPECT_NE(reply.find("maxConnectionsPerSandbox"), std::string::npos) << reply;
  // SOCKS5: the method reply, then a general failure.
  auto socks = connectLoopback(port_);
  std::string r = socks5Connect(socks.get(), echo.port());
  ASSERT_EQ(r.size(), 12u);
  EXPECT_EQ(r.substr(0, 2), std::string("\x05\x00", 2));
  EXPECT_EQ(r[3], 0x01) << "general failure";
  // The second sandbox is served all the while, and so are the tunnels open.
  EXPECT_TRUE(tunnelEchoes(b.port, target));
  sendAll(open[0].get(), "still");
  EXPECT_EQ(readN(open[0].get(), 5), "still");
  // Each refusal is audited, naming the limit.
  EXPECT_EQ(waitForEvents("ProxyLimits.maxConnectionsPerSandbox", 2), 2u);
  for (const auto& e : events()) {
    if (e.rule.find("maxConnectionsPerSandbox") == std::string::npos) continue;
    EXPECT_EQ(e.verdict, EventVerdict::kRefused);
    EXPECT_EQ(e.sandboxId, "sb-1");
  }
  // Closing a connection frees its slot.
  ::shutdown(open[0].get(), SHUT_WR);
  EXPECT_EQ(readAll(open[0].get()), "");
  open.erase(open.begin());
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {  // the slot frees when the proxy has seen the close
    served = tunnelEchoes(port_, target);
    if (!served) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(served);
}

TEST_F(ProxyAdmissionTest, ConnectionsWaitingForAHeadBeyondTheListenerLimitAreRefused) {
  EchoServer echo;
  std::string target = "echo.test:" + std::to_string(echo.port());
  ProxyLimits limits;
  limits.maxPendingPerListener = 3;
  start({target, files()}, {}, limits, {{"echo.test", "127.0.0.1"}});
  SecondSandbox b = addSecondSandbox();
  std::vector<platform::UniqueFd> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(connectLoopback(port_));
    sendAll(idle.back().get(), "GET " + url("/") + " HTTP/1.1\r\nHost: fil");  // a head that never ends
  }
  auto over = connectLoopback(port_);
  sendAll(over.get(), "GET " + url("/") + " HTTP/1.1\r\nHost: " + files() + "\r\n\r\n");
  std::string reply = readAll(over.get());
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("X-Proxy-Error: pending-limit"), std::string::npos) << reply;
  EXPECT_NE(reply.find("maxPendingPerListener"), std::string::npos) << reply;
  EXPECT_EQ(waitForEvents("ProxyLimits.maxPendingPerListener", 1), 1u);
  // Another sandbox's listener serves meanwhile.
  CurlResult other = runCurl({"--proxy", "http://127.0.0.1:" + std::to_string(b.port), "-sS", url("/")});
  EXPECT_EQ(other.exitCode, 0) << other.err;
  EXPECT_EQ(other.out, "hello\n");
  // Once a waiting connection finishes its head, the listener admits again.
  sendAll(idle[0].get(), "es.test:" + p() + "\r\n\r\n");
  EXPECT_TRUE(readHead(idle[0].get()).starts_with("HTTP/1.1 200"));
  EXPECT_TRUE(stillServes());
}

TEST_F(ProxyAdmissionTest, AFloodOfIdleConnectionsHoldsOnlyTheLimitsInDescriptors) {
  EchoServer echo;
  std::string target = "echo.test:" + std::to_string(echo.port());
  ProxyLimits limits;
  limits.maxConnectionsPerSandbox = 8;
  limits.maxPendingPerListener = 4;
  start({target, files()}, {}, limits, {{"echo.test", "127.0.0.1"}});
  SecondSandbox b = addSecondSandbox();
  std::size_t before = openFds();
  constexpr std::size_t kFlood = 600;
  std::vector<platform::UniqueFd> flood;
  for (std::size_t i = 0; i < kFlood; ++i) {
    flood.push_back(connectLoopback(port_));
    ASSERT_TRUE(flood.back()) << i;
  }
  // All but the pending ones are refused: answered (after a second of
  // silence) or dropped at once; each refusal is audited.
  std::size_t refused = waitForEvents("ProxyLimits.max", kFlood - limits.maxPendingPerListener);
  EXPECT_GE(refused, kFlood - limits.maxPendingPerListener);
  std::size_t proxyFds = openFds() - before - kFlood;
  EXPECT_LE(proxyFds, limits.maxPendingPerListener * 2 + 2) << "the pending and the refusals being answered, at most";
  EXPECT_EQ(proxy_->activeConnections("sb-1"), limits.maxPendingPerListener);
  // The other sandbox is unaffected.
  EXPECT_TRUE(tunnelEchoes(b.port, target));
}

TEST_F(ProxyRobustnessTest, ConnectTimeoutGets504) {
  // A listener whose accept queue is full drops further SYNs, so connecting
  // to it hangs: the proxy must give up and say so.
  std::uint16_t blackhole = 0;
  auto full = listenLoopback(blackhole, false, 0);
  std::vector<platform::UniqueFd> fillers;
  for (int i = 0; i < 4; ++i) {
    platform::UniqueFd f(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(blackhole);
    ::connect(f.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(std::move(f));
  }
  ProxyLimits limits;
  limits.connectTimeout = 300ms;
  std::string target = "hole.test:" + std::to_string(blackhole);
  start({target}, {}, limits, {{"hole.test", "127.0.0.1"}});
  auto fd = connectLoopback(port_);
  std::string reply = connectTo(fd.get(), target);
  if (reply.starts_with("HTTP/1.1 200")) GTEST_SKIP() << "this kernel accepted beyond the backlog; cannot provoke a connect timeout";
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 504")) << reply;
}

TEST_F(ProxyRobustnessTest, IdleTunnelIsClosedAfterTheIdleTimeout) {
  EchoServer echo;
  ProxyLimits limits;
  limits.idleTimeout = 300ms;
  std::string target = "echo.test:" + std::to_string(echo.port());
  start({target}, {}, limits, {{"echo.test", "127.0.0.1"}});
  auto fd = connectLoopback(port_);
  ASSERT_TRUE(connectTo(fd.get(), target).starts_with("HTTP/1.1 200"));
  sendAll(fd.get(), "ping");
  EXPECT_EQ(readN(fd.get(), 4), "ping");
  Received r = receiveAll(fd.get());
  EXPECT_EQ(r.end, ReadEnd::kClosed) << "closed by the proxy, not hung: " << readEndName(r.end);
  EXPECT_EQ(r.bytes, "");
  proxy_->shutdown();
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_NE(ev.back().rule.find("idle"), std::string::npos) << ev.back().rule;
  EXPECT_EQ(ev.back().bytesUp, 4u);
  EXPECT_EQ(ev.back().bytesDown, 4u);
}

// TCP urgent data (send(MSG_OOB)) in a tunnel, from either side. splice()
// never reads past the urgent mark, so a relay that only splices sees the
// socket readable and moves nothing, forever: the tunnel carried no byte
// after the mark and the proxy's io thread spun until the idle timeout. The
// urgent byte travels inline, in its place in the stream.
TEST_F(ProxyRobustnessTest, TcpUrgentDataInATunnelIsRelayedInlineFromEitherSide) {
  EchoServer echo;
  std::uint16_t urgentPort = 0;
  auto urgentListener = listenLoopback(urgentPort);
  std::thread urgentServer([fd = urgentListener.get()] {  // sends "x", urgent "!", "yz"
    platform::UniqueFd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) return;
    sendAll(c.get(), "x");
    std::this_thread::sleep_for(50ms);
    ::send(c.get(), "!", 1, MSG_OOB);
    std::this_thread::sleep_for(50ms);
    sendAll(c.get(), "yz");
    char drain[64];
    while (::recv(c.get(), drain, sizeof drain, 0) > 0) {
    }
  });
  const std::string up = "echo.test:" + std::to_string(echo.port());
  const std::string down = "urgent.test:" + std::to_string(urgentPort);
  start({up, down, files()}, {}, {}, {{"echo.test", "127.0.0.1"}, {"urgent.test", "127.0.0.1"}});

  // Client to upstream: an urgent byte between ordinary ones, echoed back.
  auto a = connectLoopback(port_);
  ASSERT_TRUE(connectTo(a.get(), up).starts_with("HTTP/1.1 200"));
  sendAll(a.get(), "a");
  EXPECT_EQ(readN(a.get(), 1), "a");
  ASSERT_EQ(::send(a.get(), "!", 1, MSG_OOB), 1);
  sendAll(a.get(), "bcd");
  EXPECT_EQ(readN(a.get(), 4), "!bcd") << "the bytes after the urgent mark never reached the upstream";

  // Upstream to client.
  auto b = connectLoopback(port_);
  ASSERT_TRUE(connectTo(b.get(), down).starts_with("HTTP/1.1 200"));
  EXPECT_EQ(readN(b.get(), 4), "x!yz") << "the bytes after the upstream's urgent mark never reached the client";
  b.reset();
  urgentServer.join();
  // The neighbour on the same proxy: an ordinary exchange.
  sendAll(a.get(), "ping");
  EXPECT_EQ(readN(a.get(), 4), "ping");
  EXPECT_TRUE(stillServes());
}

TEST_F(ProxyRobustnessTest, GarbageNeverCrashesOrHangsTheProxy) {
  start({files()});
  std::mt19937_64 rng(1234);
  std::vector<std::string> inputs = {
      "",
      "\r\n\r\n",
      "\x05",
      std::string("\x05\x00", 2),
      std::string("\x05\x01\x00\x05\x01\x00\x03\xff", 8),
      std::string("\x05\x01\x00\x05\x01\x00\x03\x00\x00\x50", 10),
      "GET",
      "GET http://files.test HTTP/1.1\r\n\r\n",
      "CONNECT\r\n\r\n",
      "CONNECT files.test:99999 HTTP/1.1\r\n\r\n",
      "CONNECT [::1 HTTP/1.1\r\n\r\n",
      std::string("GET http://files.test\0:1/ HTTP/1.1\r\n\r\n", 36),
      "POST " + url("/sha") + " HTTP/1.1\r\nHost: " + files() + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "POST " + url("/sha") + " HTTP/1.1\r\nHost: " + files() + "\r\nContent-Length: 99999999999999999999999\r\n\r\n",
  };
  for (int i = 0; i < 200; ++i) {
    std::string junk(rng() % 2000, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    inputs.push_back(junk);
  }
  for (const auto& in : inputs) {
    auto fd = connectLoopback(port_);
    ASSERT_TRUE(fd);
    sendAll(fd.get(), in);
    ::shutdown(fd.get(), SHUT_WR);  // no more input: the proxy must answer or close, never wait
    std::string reply = readAll(fd.get());
    EXPECT_FALSE(reply.starts_with("HTTP/1.1 200")) << in;
  }
  EXPECT_TRUE(stillServes());
}

// Drives every tunnel at once from one poll loop: each sends `bytesEach`
// bytes of its own generated stream and must read back exactly those bytes
// from the echo server behind the proxy. Returns "" when all complete, or
// which tunnels went wrong: wrong bytes, a close before the end, or no byte
// moving on any unfinished tunnel for `stallLimit` (a stall, not slowness:
// any progress anywhere restarts the clock).
// Pipe fds open in this process now: the proxy's splice pipes, and whatever
// pipes the test runner gave the process (stdout and stderr under ctest).
std::size_t openPipes() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.native().starts_with("pipe:")) ++n;
  }
  return n;
}

// `maxPipes`: the most pipe fds open at once, sampled while the bytes move.
std::string exchangeOnAll(std::vector<platform::UniqueFd>& fds, std::size_t bytesEach,
                          std::chrono::seconds stallLimit, std::size_t& maxPipes) {
  struct Flow {
    std::size_t sent = 0, received = 0;
    bool failed = false;
  };
  std::vector<Flow> flows(fds.size());
  std::vector<char> chunk(64 * 1024), expect(64 * 1024);
  for (auto& fd : fds) ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  auto lastProgress = std::chrono::steady_clock::now();
  std::string problems;
  std::size_t done = 0;
  maxPipes = 0;
  for (std::size_t round = 0; done < fds.size(); ++round) {
    if (round % 64 == 0) maxPipes = std::max(maxPipes, openPipes());
    std::vector<pollfd> pfds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Flow& f = flows[i];
      if (f.failed || f.received == bytesEach) continue;
      short events = POLLIN;
      if (f.sent < bytesEach) events |= POLLOUT;
      pfds.push_back({fds[i].get(), events, 0});
      which.push_back(i);
    }
    int ready = ::poll(pfds.data(), pfds.size(), 200);
    if (ready < 0 && errno != EINTR) return std::string("poll failed: ") + std::strerror(errno);
    bool progressed = false;
    for (std::size_t k = 0; k < pfds.size() && ready > 0; ++k) {
      std::size_t i = which[k];
      Flow& f = flows[i];
      int fd = pfds[k].fd;
      if ((pfds[k].revents & POLLOUT) && f.sent < bytesEach) {
        std::size_t n = std::min(chunk.size(), bytesEach - f.sent);
        generate(i, f.sent, chunk.data(), n);
        ssize_t w = ::send(fd, chunk.data(), n, MSG_NOSIGNAL);
        if (w > 0) {
          f.sent += static_cast<std::size_t>(w);
          progressed = true;
        }
      }
      if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = ::recv(fd, chunk.data(), std::min(chunk.size(), bytesEach - f.received), 0);
        if (r > 0) {
          generate(i, f.received, expect.data(), static_cast<std::size_t>(r));
          if (std::memcmp(chunk.data(), expect.data(), static_cast<std::size_t>(r)) != 0) {
            problems += "tunnel " + std::to_string(i) + ": wrong bytes at offset " + std::to_string(f.received) + "\n";
            f.failed = true;
          }
          f.received += static_cast<std::size_t>(r);
          progressed = true;
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          problems += "tunnel " + std::to_string(i) + ": closed after " + std::to_string(f.received) + " of " +
                      std::to_string(bytesEach) + " bytes\n";
          f.failed = true;
        }
        if (f.failed || f.received == bytesEach) ++done;
      }
    }
    if (progressed) {
      lastProgress = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - lastProgress > stallLimit) {
      std::size_t stalled = 0;
      for (const Flow& f : flows) stalled += !f.failed && f.received < bytesEach;
      problems += std::to_string(stalled) + " tunnels stalled: no byte moved on any of them for " +
                  std::to_string(stallLimit.count()) + " s\n";
      for (std::size_t i = 0, shown = 0; i < flows.size() && shown < 5; ++i) {
        if (flows[i].failed || flows[i].received == bytesEach) continue;
        problems += "  tunnel " + std::to_string(i) + ": sent " + std::to_string(flows[i].sent) + ", received " +
                    std::to_string(flows[i].received) + "\n";
        ++shown;
      }
      break;
    }
  }
  return problems;
}

// 1,000 tunnels open at once (half CONNECT, half SOCKS5), then every one of
// them carries 256 KiB each way at the same time: more than a default pipe
// holds, so pipes fill. Two pipes per tunnel (2,000 pipes of 16 pages) would
// exceed an unprivileged user's fs.pipe-user-pages-soft (16,384 pages); the
// proxy holds pipes only within ProxyLimits.splicePipeBytes, copies the rest,
// and must move every byte intact with no tunnel stalling, as root and as
// the unprivileged user (the unprivileged_proxy_tunnels test).
TEST_F(ProxyRobustnessTest, AThousandConcurrentTunnelsAllCarryTheirOwnBytes) {
  thousandTunnels(ProxyLimits{});
}

// The same with room for two pipes: nearly every direction copies, beside
// the few that splice, on the same io thread.
TEST_F(ProxyRobustnessTest, AThousandConcurrentTunnelsWithTwoPipesBetweenThemCarryTheirOwnBytes) {
  ProxyLimits limits;
  limits.splicePipeBytes = 2 * 64 * 1024;
  thousandTunnels(limits);
}

void ProxyRobustnessTest::thousandTunnels(ProxyLimits limits) {
  EchoServer echo;
  std::string target = "echo.test:" + std::to_string(echo.port());
  limits.maxConnectionsPerSandbox = 1000;
  limits.maxPendingPerListener = 1000;
  limits.maxTunnelsPerSandbox = 1000;
  std::size_t pipesBefore = openPipes();
  start({target, files()}, {}, limits, {{"echo.test", "127.0.0.1"}});
  constexpr int kTunnels = 1000;
  std::vector<platform::UniqueFd> fds;
  for (int i = 0; i < kTunnels; ++i) {
    fds.push_back(connectLoopback(port_));
    ASSERT_TRUE(fds.back()) << "connection " << i;
    if (i % 2 == 0) {
      sendAll(fds.back().get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
    } else {
      sendAll(fds.back().get(), std::string("\x05\x01\x00\x05\x01\x00\x03\x09", 8) + "echo.test" +
                                    char(echo.port() >> 8) + char(echo.port() & 0xff));
    }
  }
  for (int i = 0; i < kTunnels; ++i) {
    if (i % 2 == 0) {
      ASSERT_TRUE(readHead(fds[i].get()).starts_with("HTTP/1.1 200")) << i;
    } else {
      std::string r = readN(fds[i].get(), 12);
      ASSERT_EQ(r.size(), 12u) << i;
      ASSERT_EQ(r[3], 0x00) << i;
    }
  }
  EXPECT_EQ(proxy_->activeTunnels("sb-1"), static_cast<std::size_t>(kTunnels));
  std::size_t maxPipes = 0;
  EXPECT_EQ(exchangeOnAll(fds, 256 * 1024, 20s, maxPipes), "");
  ASSERT_GE(maxPipes, pipesBefore);
  std::size_t proxyPipeFds = maxPipes - pipesBefore;
  // Every pipe is at least 64 KiB (PipePool::kMinPipeBytes): the budget caps their number.
  EXPECT_LE(proxyPipeFds, limits.splicePipeBytes / (64 * 1024) * 2) << "two fds per pipe";
  EXPECT_GT(proxyPipeFds, 0u) << "no tunnel spliced at all";
  RecordProperty("proxyPipeFds", std::to_string(proxyPipeFds));
  fds.clear();
  // Every tunnel is torn down once the proxy has seen its client close, and
  // gives its connection and tunnel slots back.
  for (int i = 0; i < 1000 && proxy_->activeConnections("sb-1") > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(proxy_->activeConnections("sb-1"), 0u);
  EXPECT_EQ(proxy_->activeTunnels("sb-1"), 0u);
  EXPECT_TRUE(stillServes());
}

TEST_F(ProxyRobustnessTest, TwoHundredSequentialFourMegabyteDownloadsAreNeverTruncated) {
  // 200 x 4 MB (800 MB in all) keeps the suite fast; each body is
  // close-delimited and its tunnel or connection closes right after the last
  // byte, which is exactly where a proxy that drops buffered bytes on
  // half-close truncates.
  start({files()});
  TempDir dir;
  constexpr std::uint64_t kSize = 4ull << 20;
  constexpr int kDownloads = 200;
  struct Batch {
    std::vector<std::string> via;
    int count;
  };
  std::vector<Batch> batches = {{{"--proxy", httpProxy()}, 67},
                                {{"--proxy", httpProxy(), "--proxytunnel"}, 67},
                                {{"--proxy", socksProxy()}, kDownloads - 134}};
  std::uint64_t seed = 1000;
  int total = 0;
  for (const auto& batch : batches) {
    std::vector<std::string> args = batch.via;
    args.insert(args.end(), {"-sS", "-w", "%{http_code}\\n"});
    std::vector<std::pair<std::string, std::uint64_t>> files;
    for (int i = 0; i < batch.count; ++i) {
      std::uint64_t s = seed++;
      std::string out = dir.path() + "/d" + std::to_string(s);
      // Alternate close-delimited and length-delimited bodies.
      std::string route = i % 2 == 0 ? "/close/" : "/bytes/";
      args.insert(args.end(), {"-o", out, url(route + std::to_string(kSize) + "/" + std::to_string(s))});
      files.emplace_back(out, s);
    }
    CurlResult r = runCurl(args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    for (const auto& [path, s] : files) {
      std::uint64_t size = 0;
      std::string sha = fileSha(path, &size);
      EXPECT_EQ(size, kSize) << path;
      EXPECT_EQ(sha, expectedSha(s, kSize)) << path;
      std::remove(path.c_str());
      ++total;
    }
  }
  EXPECT_EQ(total, kDownloads);
}

TEST_F(ProxyRobustnessTest, ClosingTheListenerHandleClosesTheListenerAndItsTunnels) {
  EchoServer echo;
  std::string target = "echo.test:" + std::to_string(echo.port());
  start({target}, {}, {}, {{"echo.test", "127.0.0.1"}});
  auto fd = connectLoopback(port_);
  ASSERT_TRUE(connectTo(fd.get(), target).starts_with("HTTP/1.1 200"));
  handle_.close();
  EXPECT_EQ(readAll(fd.get()), "");  // the tunnel was closed
  EXPECT_FALSE(connectLoopback(port_));  // nobody listens any more
  EXPECT_EQ(proxy_->activeTunnels("sb-1"), 0u);
}

}  // namespace
}  // namespace stockade::proxy::testing
