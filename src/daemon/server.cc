// The server's I/O shell, and the only file of the daemon that includes Asio
// and Beast. One coroutine per connection on its own strand; a request's
// checks are the pure functions of routes.h and auth.h; handlers run on the
// worker pool; streams, deferred replies and WebSockets are pumped here with
// a wake signal (a timer cancelled by the Waker), so nothing here ever blocks
// an io thread.

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include "src/daemon/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "platform/unique_fd.h"
#include "src/daemon/socket_body.h"

namespace stockade::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Proto = asio::generic::stream_protocol;
using Socket = Proto::socket;
using Stream = beast::basic_stream<Proto>;
using WsStream = websocket::stream<Stream>;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;

// ---- values ----------------------------------------------------------------

std::string ListenAddress::text() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::variant<ListenAddress, std::string> parseListenAddress(std::string_view text) {
  ListenAddress a;
  if (text.starts_with("unix:")) {
    a.kind = ListenAddress::Kind::kUnix;
    a.path = std::string(text.substr(5));
    if (a.path.empty() || a.path.front() != '/')
      return "--listen " + std::string(text) + ": give an absolute socket path, unix:/run/stockade/stockaded.sock";
    if (a.path.size() >= sizeof(sockaddr_un{}.sun_path))
      return "--listen " + std::string(text) + ": the socket path is longer than " +
             std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes";
    return a;
  }
  a.kind = ListenAddress::Kind::kTcp;
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return "--listen " + std::string(text) + ": give unix:PATH or ADDRESS:PORT, such as 127.0.0.1:7070";
  std::string host(text.substr(0, colon));
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long p = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  if (digits) p = std::stoul(std::string(port));
  if (!digits || p > 65535) return "--listen " + std::string(text) + ": the port must be 0 to 65535";
  a.port = static_cast<std::uint16_t>(p);
  in_addr v4{};
  in6_addr v6{};
  bool loopback = false;
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    loopback = (ntohl(v4.s_addr) >> 24) == 127;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    loopback = IN6_IS_ADDR_LOOPBACK(&v6);
  } else {
    return "--listen " + std::string(text) + ": \"" + host + "\" is not an IP address; give 127.0.0.1 or [::1]";
  }
  if (!loopback)
    return "--listen " + std::string(text) +
           ": only loopback addresses are served (127.0.0.0/8, ::1); other hosts reach the daemon through "
           "its unix socket or a proxy you run in front of it";
  a.host = host;
  return a;
}

Response Response::json(std::string body, int status) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response Response::noContent() {
  Response r;
  r.status = 204;
  r.contentType.clear();
  return r;
}

Response Response::error(const ApiError& e) {
  Response r;
  r.status = e.status();
  r.body = e.toJson();
  return r;
}

// ---- the listening socket ----------------------------------------------------

namespace {

[[noreturn]] void fail(const std::string& call) {
  throw std::runtime_error(call + " failed: " + std::strerror(errno));
}

// True when something accepts connections on the unix socket at `path`.
bool someoneListens(const std::string& path) {
  platform::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
}

// The socket file this server created, so that stop() removes that one only
// (never a socket another daemon put at the same path since).
struct SocketFile {
  dev_t dev = 0;
  ino_t ino = 0;
};

platform::UniqueFd listenUnix(const std::string& path, SocketFile& created) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw std::runtime_error("--listen unix:" + path + ": the path exists and is not a socket; remove it or pick another");
    if (someoneListens(path))
      throw std::runtime_error("--listen unix:" + path + ": another process is listening on it (a daemon already running?)");
    if (::unlink(path.c_str()) != 0) fail("unlink(\"" + path + "\") of the stale socket");
  }
  platform::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) fail("socket(AF_UNIX)");
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  // bind() creates the node with mode 0777 & ~umask: 0600 from the start.
  // umask is per process; the server is created before any thread of the
  // daemon creates files. Nobody can connect before listen() anyway, and
  // chmod() makes the mode independent of what umask was.
  mode_t old = ::umask(0177);
  int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  int bindErrno = errno;
  ::umask(old);
  if (rc != 0) {
    errno = bindErrno;
    fail("bind(\"" + path + "\")");
  }
  if (::chmod(path.c_str(), 0600) != 0) fail("chmod(\"" + path + "\", 0600)");
  if (::lstat(path.c_str(), &st) != 0 || (st.st_mode & 0777) != 0600)
    throw std::runtime_error("--listen unix:" + path + ": the socket's mode is not 0600 after chmod()");
  created = {st.st_dev, st.st_ino};
  if (::listen(fd.get(), SOMAXCONN) != 0) fail("listen(\"" + path + "\")");
  return fd;
}

platform::UniqueFd listenTcp(ListenAddress& a) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = a.host.find(':') != std::string::npos ? AF_INET6 : AF_INET;
  if (family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(a.port);
    ::inet_pton(AF_INET, a.host.c_str(), &sin->sin_addr);
    len = sizeof *sin;
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(a.port);
    ::inet_pton(AF_INET6, a.host.c_str(), &sin6->sin6_addr);
    len = sizeof *sin6;
  }
  platform::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) fail("socket(" + std::string(family == AF_INET ? "AF_INET" : "AF_INET6") + ")");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) fail("bind(" + a.text() + ")");
  if (::listen(fd.get(), SOMAXCONN) != 0) fail("listen(" + a.text() + ")");
  socklen_t got = sizeof ss;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &got) == 0)
    a.port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                     : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return fd;
}

Peer peerOf(int fd, int family) {
  Peer p;
  if (family == AF_UNIX) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      p.uid = cred.uid;
      p.pid = cred.pid;
    }
    return p;
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return p;
  char host[INET6_ADDRSTRLEN] = {};
  std::uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
    port = ntohs(sin->sin_port);
    p.address = std::string(host) + ":" + std::to_string(port);
  } else if (ss.ss_family == AF_INET6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
    port = ntohs(sin6->sin6_port);
    p.address = "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return p;
}

auto tok(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// The wake signal behind a Waker: a timer that never expires, cancelled to
// wake the coroutine waiting on it. `pending` keeps a wake that arrives
// while nobody waits; both flags are touched on the connection's strand only.
struct WakeSignal {
  explicit WakeSignal(const asio::any_io_executor& ex) : timer(ex) {}
  asio::steady_timer timer;
  bool pending = false;
  bool closed = false;  // the client went away
  void fire() {
    pending = true;
    timer.cancel();
  }
};

// Whether the server's io_context still takes work. Wakers run on other
// threads (a ThreadedReply's, a body's producer) and can outlive it.
struct IoLife {
  std::mutex mu;
  bool open = true;
};

// A waker holds nothing of the io_context's: not the signal (its timer) and
// not its strand executor, whose last copy destroyed on the waker's thread
// after the io_context touched the freed strand service (ASan, at daemon
// shutdown, twice: first through the timer, then through the executor). It
// takes the signal only under the lock, while the io_context still takes
// work, and lets go of it there.
Waker makeWaker(const std::shared_ptr<WakeSignal>& signal, std::shared_ptr<IoLife> life) {
  std::weak_ptr<WakeSignal> weak = signal;
  return [weak, life = std::move(life)] {
    std::lock_guard lock(life->mu);
    if (!life->open) return;
    if (auto held = weak.lock())
      asio::post(held->timer.get_executor(), [weak] {
        if (auto s = weak.lock()) s->fire();
      });
  };
}

awaitable<void> waitForWake(WakeSignal& s) {
  if (!s.pending && !s.closed) {
    s.timer.expires_at(asio::steady_timer::time_point::max());
    error_code ec;
    co_await s.timer.async_wait(tok(ec));
  }
  s.pending = false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool iequals(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

}  // namespace

// ---- streamed request bodies -------------------------------------------------

// The queue between a connection's coroutine, which reads a chunked kRaw
// body off the socket through Beast's parser, and the handler's thread,
// which read()s it (a body of announced length skips it: SocketBody): at most
// kCapacity bytes wait in it, so the client is held back (TCP flow control)
// and memory stays bounded whatever the body's size.
class BodyPipe final : public BodyReader {
 public:
  static constexpr std::size_t kCapacity = std::size_t{1} << 20;
  explicit BodyPipe(std::optional<std::uint64_t> length) : length_(length) {}

  std::variant<std::size_t, ApiError> read(std::span<char> buf) override {
    Waker wake;
    std::size_t n = 0;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [&] { return !chunks_.empty() || finished_ || failure_ || abandoned_; });
      if (chunks_.empty()) {
        if (failure_) return *failure_;
        if (abandoned_ && !finished_) return ApiError{ApiCode::kUnavailable, "the request was answered before its body was read"};
        return std::size_t{0};
      }
      const std::string& front = chunks_.front();
      n = std::min(buf.size(), front.size() - offset_);
      std::memcpy(buf.data(), front.data() + offset_, n);
      offset_ += n;
      bool wasFull = queued_ >= kCapacity;
      queued_ -= n;
      if (offset_ == front.size()) {
        chunks_.pop_front();
        offset_ = 0;
      }
      // The pump waits while the pipe is full, and is woken once it is down
      // to half: one hand-over per half pipe, not per piece (on a loaded
      // machine each hand-over costs a scheduling delay).
      if (queued_ <= kCapacity / 2 && (wasFull || pumpWaiting_)) {
        pumpWaiting_ = false;
        wake = wake_;
      }
    }
    if (wake) wake();
    return n;
  }
  std::optional<std::uint64_t> announcedLength() const override { return length_; }

  // The connection's side (its strand).
  void setWaker(Waker w) {
    std::lock_guard lock(mu_);
    wake_ = std::move(w);
  }
  // True when the pump must wait for room; read() wakes it at half.
  bool full() {
    std::lock_guard lock(mu_);
    if (queued_ < kCapacity) return false;
    pumpWaiting_ = true;
    return true;
  }
  void push(std::string bytes) {
    std::lock_guard lock(mu_);
    queued_ += bytes.size();
    chunks_.push_back(std::move(bytes));
    ready_.notify_all();
  }
  void finish() {
    std::lock_guard lock(mu_);
    finished_ = true;
    ready_.notify_all();
  }
  void fail(ApiError e) {
    std::lock_guard lock(mu_);
    if (!failure_) failure_ = std::move(e);
    ready_.notify_all();
  }
  // The reply is out: the pump stops, a reader still waiting gets an error.
  void abandon() {
    Waker wake;
    {
      std::lock_guard lock(mu_);
      abandoned_ = true;
      wake = wake_;
      ready_.notify_all();
    }
    if (wake) wake();
  }
  bool abandoned() const {
    std::lock_guard lock(mu_);
    return abandoned_;
  }
  // The whole body was read off the socket (the connection can carry another request).
  bool complete() const {
    std::lock_guard lock(mu_);
    return finished_;
  }

 private:
  const std::optional<std::uint64_t> length_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::string> chunks_;
  std::size_t offset_ = 0;  // read of chunks_.front()
  std::size_t queued_ = 0;
  bool finished_ = false;
  bool abandoned_ = false;
  bool pumpWaiting_ = false;
  std::optional<ApiError> failure_;
  Waker wake_;
};

// ---- the server --------------------------------------------------------------

struct Conn : std::enable_shared_from_this<Conn> {
  explicit Conn(Socket s) : executor(s.get_executor()), stream(std::move(s)) {}
  asio::any_io_executor executor;  // the connection's strand (the stream moves into `ws` on an upgrade)
  Stream stream;
  std::optional<WsStream> ws;  // after an upgrade, it owns the socket
  beast::flat_buffer buffer;
  Peer peer;
  int family = AF_UNIX;
  std::uint64_t id = 0;

  void close() {
    error_code ec;
    if (ws) {
      beast::get_lowest_layer(*ws).socket().shutdown(Socket::shutdown_both, ec);
      beast::get_lowest_layer(*ws).close();
    } else {
      stream.socket().shutdown(Socket::shutdown_both, ec);
      stream.close();
    }
  }
};

struct Server::Impl {
  Impl(ServerOptions o, std::shared_ptr<Handler> h, AccessLog l)
      : options(std::move(o)), handler(std::move(h)), log(std::move(l)), ioc(options.ioThreads),
        workers(static_cast<std::size_t>(options.workerThreads)), acceptor(ioc) {}

  ServerOptions options;
  // options.auth as requests see it: replaced whole by replaceToken(), read
  // once per request.
  mutable std::mutex authMu;
  std::shared_ptr<const AuthPolicy> auth = std::make_shared<const AuthPolicy>(options.auth);
  std::shared_ptr<const AuthPolicy> currentAuth() const {
    std::lock_guard lock(authMu);
    return auth;
  }
  std::shared_ptr<Handler> handler;
  AccessLog log;
  asio::io_context ioc;
  std::shared_ptr<IoLife> ioLife = std::make_shared<IoLife>();  // closed by stop(), before ioc goes
  asio::thread_pool workers;
  asio::basic_socket_acceptor<Proto> acceptor;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  SocketFile socketFile;
  std::atomic<std::size_t> inFlight{0};
  std::atomic<std::uint64_t> served{0};
  mutable std::mutex mu;  // guards conns
  std::condition_variable drained;
  std::unordered_map<std::uint64_t, std::weak_ptr<Conn>> conns;
  std::uint64_t nextConn = 0;

  // Counts a request from its head until its reply is complete.
  struct InFlight {
    explicit InFlight(Impl& i) : impl(i) { impl.inFlight.fetch_add(1); }
    ~InFlight() { impl.inFlight.fetch_sub(1); }
    Impl& impl;
  };

  // What the access log gets, filled in as the exchange goes.
  struct Exchange {
    Clock::time_point started = Clock::now();
    AccessRecord record;
  };

  void finish(Exchange& x) {
    served.fetch_add(1);
    if (!log) return;
    x.record.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - x.started);
    try {
      log(x.record);
    } catch (...) {
      // The access log never takes a request down.
    }
  }

  // Holds no reference to the Impl: a frame still queued when the io
  // context stops is destroyed with it, and must not keep it alive.
  awaitable<void> acceptLoop() {
    for (;;) {
      Socket sock(asio::make_strand(ioc));
      error_code ec;
      co_await acceptor.async_accept(sock, tok(ec));
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) {
        // EMFILE and friends: wait a little rather than spin.
        asio::steady_timer t(ioc, std::chrono::milliseconds(50));
        co_await t.async_wait(tok(ec));
        continue;
      }
      auto c = std::make_shared<Conn>(std::move(sock));
      c->family = options.listen.kind == ListenAddress::Kind::kUnix ? AF_UNIX : AF_INET;
      if (c->family != AF_UNIX) {
        int one = 1;
        ::setsockopt(c->stream.socket().native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      c->peer = peerOf(c->stream.socket().native_handle(), c->family);
      bool full = false;
      {
        std::lock_guard lock(mu);
        full = conns.size() >= options.limits.maxConnections;
        if (!full) {
          c->id = ++nextConn;
          conns.emplace(c->id, c);
        }
      }
      if (full) {
        asio::co_spawn(c->stream.get_executor(), refuseConnection(c), asio::detached);
        continue;
      }
      asio::co_spawn(c->stream.get_executor(), serve(c), asio::detached);
    }
  }

  void forget(const Conn& c) {
    std::lock_guard lock(mu);
    conns.erase(c.id);
    if (conns.empty()) drained.notify_all();
  }

  awaitable<void> refuseConnection(std::shared_ptr<Conn> c) {
    Exchange x;
    x.record.method = "-";
    x.record.path = "-";
    Response busy = Response::error({ApiCode::kUnavailable, "the daemon has " +
                                                                std::to_string(options.limits.maxConnections) +
                                                                " connections open (stockaded --max-connections); retry later"});
    co_await writeResponse(*c, busy, 11, false, x);
    // A lingering close: the client's request may still be unread, and closing
    // over unread bytes answers them with a reset that can destroy the 503
    // before the client reads it (its write then fails with EPIPE). Stop
    // sending, drain what it sent for a short while, then close.
    error_code ec;
    c->stream.socket().shutdown(Socket::shutdown_send, ec);
    c->stream.expires_after(std::chrono::milliseconds(500));
    std::array<char, 4096> sink;
    for (std::size_t sunk = 0; !ec && sunk < 64 * 1024;)
      sunk += co_await c->stream.async_read_some(asio::buffer(sink), tok(ec));
    c->close();
    finish(x);
  }

  // The reply to a head that could not be read; nullopt when the client
  // simply went away (or idled out).
  std::optional<Response> headError(const error_code& ec) const {
    if (ec == http::error::header_limit)
      return Response::error({ApiCode::kTooLarge, "the request line and headers exceed " +
                                                      std::to_string(options.limits.maxHeaderBytes) + " bytes"});
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof || ec == asio::error::bad_descriptor)
      return std::nullopt;
    return Response::error(invalidArgument("request", "malformed HTTP/1.1: " + ec.message()));
  }

  // The connection's keep-alive loop.
  awaitable<void> serve(std::shared_ptr<Conn> c) {
    struct Forget {
      Impl& impl;
      Conn& conn;
      ~Forget() { impl.forget(conn); }
    } forget{*this, *c};
    try {
      for (;;) {
        http::request_parser<http::empty_body> head;
        head.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(options.limits.maxHeaderBytes, UINT32_MAX)));
        // Not boost::none: Beast 1.74 compares the length with an empty optional as "over".
        head.body_limit(std::numeric_limits<std::uint64_t>::max());
        c->stream.expires_after(options.limits.headerTimeout);
        error_code ec;
        co_await http::async_read_header(c->stream, c->buffer, head, tok(ec));
        if (ec) {
          std::optional<Response> reply = headError(ec);
          if (reply) {
            Exchange x;
            x.record.method = "-";
            x.record.path = "-";
            co_await writeResponse(*c, *reply, 11, false, x);
            finish(x);
          }
          break;
        }
        if (!co_await serveOne(c, head)) break;
      }
    } catch (const std::exception&) {
      // A connection's failure ends that connection only.
    }
    c->close();
  }

  // What the head of a request decides, before any body is read: the
  // request to hand over, or the refusal to send. Not a coroutine: GCC 12
  // mishandles temporaries inside co_await expressions, so every decision
  // is made here and the coroutines below only move bytes.
  struct Verdict {
    std::optional<ApiError> refusal;
    Request request;
    std::size_t bodyLimit = 0;
  };

  Verdict examine(const Conn& c, const http::request<http::empty_body>& req, std::string_view path,
                  std::string_view query, bool hasBody, std::optional<std::uint64_t> contentLength) const {
    Verdict v;
    auto header = [&](http::field f) -> std::optional<std::string_view> {
      auto it = req.find(f);
      if (it == req.end()) return std::nullopt;
      return std::string_view(it->value().data(), it->value().size());
    };
    auto refuse = [&](ApiError e) {
      v.refusal = std::move(e);
      return std::move(v);
    };
    const std::shared_ptr<const AuthPolicy> authNow = currentAuth();
    // 1. Origin: before anything else, for every route (DNS rebinding).
    if (auto e = checkOrigin(*authNow, header(http::field::origin))) return refuse(*e);
    // 2. The peer of a unix socket: the daemon's own user or root.
    if (c.peer.uid && *c.peer.uid != ::geteuid() && *c.peer.uid != 0)
      return refuse({ApiCode::kPermissionDenied, "uid " + std::to_string(*c.peer.uid) +
                                                     " may not use this daemon (it serves uid " +
                                                     std::to_string(::geteuid()) + " and root)"});
    // 3. The route.
    std::string_view methodText(req.method_string().data(), req.method_string().size());
    auto method = parseMethod(methodText);
    if (!method) {
      std::string allowed = allowedMethods(options.routes, path);
      if (allowed.empty()) return refuse({ApiCode::kNotFound, "no route for " + quoteValue(path)});
      return refuse({ApiCode::kMethodNotAllowed,
                     quoteValue(methodText) + " is not served on " + quoteValue(path) + "; allowed: " + allowed});
    }
    auto matched = matchRoute(options.routes, *method, path);
    if (auto* e = std::get_if<ApiError>(&matched)) return refuse(*e);
    v.request.method = *method;
    v.request.match = std::move(std::get<RouteMatch>(matched));
    const Route& route = *v.request.match.route;
    // 4. The token.
    if (route.access == Access::kToken) {
      if (auto e = checkToken(*authNow, header(http::field::authorization))) return refuse(*e);
    }
    // 5. Limits and the shape of the exchange.
    if (inFlight.load() > options.limits.maxConcurrentRequests)
      return refuse({ApiCode::kUnavailable, "the daemon is serving " +
                                                std::to_string(options.limits.maxConcurrentRequests) +
                                                " requests at once (stockaded --max-requests); retry later"});
    if (route.reply == ReplyKind::kWebSocket && !websocket::is_upgrade(req))
      return refuse(invalidArgument(
          "Upgrade", "this route is a WebSocket: send \"Connection: Upgrade\" and \"Upgrade: websocket\""));
    auto q = parseQuery(query);
    if (auto* e = std::get_if<ApiError>(&q)) return refuse(*e);
    v.request.query = std::move(std::get<Query>(q));
    // 6. The body's size, as announced.
    v.bodyLimit = route.body == BodyKind::kJson  ? options.limits.maxJsonBodyBytes
                  : route.body == BodyKind::kRaw ? options.limits.maxRawBodyBytes
                                                 : 0;
    if (hasBody && v.bodyLimit == 0) return refuse(invalidArgument("body", "this route takes no body"));
    if (contentLength && *contentLength > v.bodyLimit) return refuse(bodyTooLarge(route.body, *contentLength));
    for (const auto& f : req)
      v.request.headers[lower(std::string_view(f.name_string().data(), f.name_string().size()))] =
          std::string(f.value().data(), f.value().size());
    v.request.peer = c.peer;
    return v;
  }

  ApiError bodyTooLarge(BodyKind kind, std::optional<std::uint64_t> size) const {
    std::string what = size ? "the body is " + std::to_string(*size) + " bytes" : std::string("the body is larger");
    if (kind == BodyKind::kRaw)
      return {ApiCode::kTooLarge, what + "; streamed bodies (files, trees) are limited to " +
                                      std::to_string(options.limits.maxRawBodyBytes) +
                                      " bytes (stockaded --max-raw-body-bytes)"};
    return {ApiCode::kTooLarge, what + "; JSON bodies are limited to " + std::to_string(options.limits.maxJsonBodyBytes) +
                                    " bytes (stockaded --max-body-bytes)"};
  }

  Response refusalResponse(const ApiError& e, std::string_view path) const {
    Response r = Response::error(e);
    if (e.code == ApiCode::kMethodNotAllowed) r.headers.emplace_back("Allow", allowedMethods(options.routes, path));
    if (e.code == ApiCode::kUnauthorized) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }

  static bool expectsContinue(const http::request<http::empty_body>& req) {
    auto it = req.find(http::field::expect);
    return it != req.end() && iequals(std::string_view(it->value().data(), it->value().size()), "100-continue");
  }

  Reply runHandler(Request& r) {
    try {
      return handler->handle(r);
    } catch (const std::exception& e) {
      return Response::error({ApiCode::kInternal, std::string("the handler failed: ") + e.what()});
    } catch (...) {
      return Response::error({ApiCode::kInternal, "the handler failed"});
    }
  }

  // Serves one request whose head has been read. False: close the connection.
  awaitable<bool> serveOne(std::shared_ptr<Conn> c, http::request_parser<http::empty_body>& head) {
    InFlight counted(*this);
    Exchange x;
    const auto& req = head.get();
    unsigned version = req.version();
    Target target = splitTarget(std::string_view(req.target().data(), req.target().size()));
    x.record.method = std::string(req.method_string());
    x.record.path = std::string(target.path.substr(0, 512));
    std::optional<std::uint64_t> contentLength;
    if (head.content_length()) contentLength = *head.content_length();
    bool hasBody = req.chunked() || (contentLength && *contentLength > 0);
    bool continueFirst = expectsContinue(req);
    Verdict v = examine(*c, req, target.path, target.query, hasBody, contentLength);
    if (!v.refusal) x.record.sandboxId = std::string(v.request.match.param("id"));
    if (v.refusal) {
      // The body (if any) is unread: the connection cannot carry another request.
      bool keep = !hasBody && req.keep_alive();
      Response r = refusalResponse(*v.refusal, target.path);
      bool ok = co_await writeResponse(*c, r, version, keep, x);
      finish(x);
      co_return ok && keep;
    }
    Request& r = v.request;
    if (r.match.route->body == BodyKind::kRaw)
      co_return co_await serveStreamedBody(c, head, r, version, hasBody, continueFirst, contentLength, x);
    http::request_parser<http::string_body> parser(std::move(head));
    if (hasBody) {
      error_code ec;
      if (continueFirst) {
        http::response<http::empty_body> cont{http::status::continue_, version};
        c->stream.expires_after(options.limits.writeTimeout);
        co_await http::async_write(c->stream, cont, tok(ec));
        if (ec) co_return false;
      }
      parser.body_limit(v.bodyLimit);
      c->stream.expires_after(options.limits.bodyTimeout);
      co_await http::async_read(c->stream, c->buffer, parser, tok(ec));
      if (ec == http::error::body_limit) {
        Response tooLarge = Response::error(bodyTooLarge(BodyKind::kJson, std::nullopt));
        co_await writeResponse(*c, tooLarge, version, false, x);
        finish(x);
        co_return false;
      }
      if (ec) co_return false;
      r.body = std::move(parser.get().body());
    }
    bool keepAlive = parser.get().keep_alive();

    // The handler, on the worker pool.
    auto job = [this, &r]() -> awaitable<Reply> { co_return runHandler(r); };
    Reply reply = co_await asio::co_spawn(workers.get_executor(), std::move(job), asio::use_awaitable);

    if (auto* resp = std::get_if<Response>(&reply)) {
      bool ok = co_await writeResponse(*c, *resp, version, keepAlive, x);
      finish(x);
      co_return ok && keepAlive;
    }
    if (auto* d = std::get_if<Deferred>(&reply)) {
      std::optional<Response> resp = co_await awaitDeferred(*c, std::move(d->reply));
      bool ok = false;
      if (resp) {
        ok = co_await writeResponse(*c, *resp, version, keepAlive, x);
      } else {
        x.record.status = 499;  // the client went away first
      }
      finish(x);
      co_return ok && keepAlive;
    }
    if (auto* s = std::get_if<StreamReply>(&reply)) {
      co_await pumpStream(*c, std::move(*s), version, x);
      finish(x);
      co_return false;
    }
    auto& up = std::get<Upgrade>(reply);
    co_await runWebSocket(c, std::move(parser.get()), std::move(up.duplex), x);
    finish(x);
    co_return false;
  }

  // A kRaw route: the handler decides first (a refusal comes before any
  // body is read, and before "100 Continue"), then its Deferred reads the
  // body while this coroutine waits for its reply. A body of announced
  // length is read by the handler's thread straight off the socket
  // (SocketBody); a chunked one is decoded by Beast here, pumpBody() filling
  // a bounded pipe the handler reads.
  awaitable<bool> serveStreamedBody(std::shared_ptr<Conn> c, http::request_parser<http::empty_body>& head, Request& r,
                                    unsigned version, bool hasBody, bool continueFirst,
                                    std::optional<std::uint64_t> contentLength, Exchange& x) {
    bool keepAlive = head.get().keep_alive();
    std::shared_ptr<SocketBody> direct;
    std::shared_ptr<BodyPipe> pipe;
    std::shared_ptr<http::request_parser<http::buffer_body>> parser;
    if (head.get().chunked()) {
      parser = std::make_shared<http::request_parser<http::buffer_body>>(std::move(head));
      parser->body_limit(options.limits.maxRawBodyBytes);
      pipe = std::make_shared<BodyPipe>(contentLength);
      r.rawBody = pipe;
    } else {
      direct = std::make_shared<SocketBody>(contentLength.value_or(0), options.limits.bodyTimeout);
      r.rawBody = direct;
    }
    auto job = [this, &r]() -> awaitable<Reply> { co_return runHandler(r); };
    Reply reply = co_await asio::co_spawn(workers.get_executor(), std::move(job), asio::use_awaitable);
    auto* deferred = std::get_if<Deferred>(&reply);
    if (!deferred) {
      // Refused before the body was read: a body sent anyway cannot be skipped.
      Response refusal = std::holds_alternative<Response>(reply)
                             ? std::get<Response>(reply)
                             : Response::error({ApiCode::kInternal, "a streamed-body route answered with a stream"});
      bool ok = co_await writeResponse(*c, refusal, version, keepAlive && !hasBody, x);
      finish(x);
      co_return ok && keepAlive && !hasBody;
    }
    if (direct) {
      co_await handOverSocket(*c, *direct, hasBody, continueFirst, version);
    } else {
      auto signal = std::make_shared<WakeSignal>(c->stream.get_executor());
      pipe->setWaker(makeWaker(signal, ioLife));
      asio::co_spawn(c->stream.get_executor(), pumpBody(c, parser, pipe, signal, continueFirst, version),
                     asio::detached);
    }
    std::optional<Response> resp = co_await awaitDeferred(*c, std::move(deferred->reply), PeerWatch::kOff);
    bool complete = direct ? direct->complete() : pipe->complete();
    if (direct) {
      direct->abandon();
    } else {
      pipe->abandon();
    }
    bool keep = keepAlive && complete;
    bool ok = false;
    if (resp) {
      ok = co_await writeResponse(*c, *resp, version, keep, x);
    } else {
      x.record.status = 499;
    }
    finish(x);
    co_return ok && keep;
  }

  // Lets the handler's thread read a body of announced length off the
  // socket: "100 Continue" first when the client waits for it, then a dup
  // of the socket with the body bytes already buffered past the head.
  // Until the reply is back nothing on this side reads the socket.
  awaitable<void> handOverSocket(Conn& c, SocketBody& body, bool hasBody, bool continueFirst, unsigned version) {
    if (!hasBody) {
      body.open({}, {});
      co_return;
    }
    if (continueFirst) {
      http::response<http::empty_body> cont{http::status::continue_, version};
      c.stream.expires_after(options.limits.writeTimeout);
      error_code ec;
      co_await http::async_write(c.stream, cont, tok(ec));
      if (ec) {
        body.fail({ApiCode::kUnavailable, "the client went away before sending its body"});
        co_return;
      }
    }
    platform::UniqueFd socket(::fcntl(c.stream.socket().native_handle(), F_DUPFD_CLOEXEC, 0));
    if (!socket) {
      body.fail({ApiCode::kUnavailable, std::string("fcntl(F_DUPFD_CLOEXEC) of the connection failed: ") +
                                            std::strerror(errno)});
      co_return;
    }
    auto buffered = c.buffer.data();
    std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(buffered.size(), *body.announcedLength()));
    std::string early(static_cast<const char*>(buffered.data()), take);
    c.buffer.consume(take);
    body.open(std::move(socket), std::move(early));
  }

  // Reads a streamed body off the socket into `pipe`, a piece at a time,
  // waiting whenever the pipe is full. Every way it ends reaches the pipe.
  awaitable<void> pumpBody(std::shared_ptr<Conn> c, std::shared_ptr<http::request_parser<http::buffer_body>> parser,
                           std::shared_ptr<BodyPipe> pipe, std::shared_ptr<WakeSignal> signal, bool continueFirst,
                           unsigned version) {
    constexpr std::size_t kPiece = std::size_t{1} << 18;
    error_code ec;
    if (continueFirst) {
      http::response<http::empty_body> cont{http::status::continue_, version};
      c->stream.expires_after(options.limits.writeTimeout);
      co_await http::async_write(c->stream, cont, tok(ec));
      if (ec) {
        pipe->fail({ApiCode::kUnavailable, "the client went away before sending its body"});
        co_return;
      }
    }
    std::vector<char> buf(kPiece);
    // Beast reads into the connection's buffer's free capacity (sized for
    // heads so far): room for a whole piece, or every read gets a few KiB.
    c->buffer.reserve(kPiece);
    while (!parser->is_done()) {
      while (pipe->full() && !pipe->abandoned()) co_await waitForWake(*signal);
      if (pipe->abandoned()) co_return;
      auto& body = parser->get().body();
      body.data = buf.data();
      body.size = buf.size();
      body.more = true;
      c->stream.expires_after(options.limits.bodyTimeout);
      co_await http::async_read_some(c->stream, c->buffer, *parser, tok(ec));
      if (ec == http::error::need_buffer) ec = {};
      std::size_t got = buf.size() - parser->get().body().size;
      if (got > 0) pipe->push(std::string(buf.data(), got));
      if (ec == http::error::body_limit) {
        pipe->fail(bodyTooLarge(BodyKind::kRaw, std::nullopt));
        co_return;
      }
      if (ec == beast::error::timeout) {
        pipe->fail({ApiCode::kTimeout, "no body bytes arrived for " + std::to_string(options.limits.bodyTimeout.count()) +
                                           " ms (stockaded --body-timeout-ms)"});
        co_return;
      }
      if (ec) {
        pipe->fail(invalidArgument("body", "the body did not arrive whole: " + ec.message()));
        co_return;
      }
    }
    pipe->finish();
  }

  awaitable<bool> writeResponse(Conn& c, const Response& r, unsigned version, bool keepAlive, Exchange& x) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "stockaded");
    if (!r.contentType.empty()) res.set(http::field::content_type, r.contentType);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keepAlive);
    res.body() = r.body;
    res.prepare_payload();
    x.record.status = r.status;
    x.record.bytesOut += r.body.size();
    error_code ec;
    c.stream.expires_after(options.limits.writeTimeout);
    co_await http::async_write(c.stream, res, tok(ec));
    co_return !ec;
  }

  // Watches the socket while a reply is pending: a client that closes its
  // end wakes the pump, which then drops the reply. Data from the client
  // (a pipelined request) ends the watch without consuming it.
  static awaitable<void> watchPeer([[maybe_unused]] std::shared_ptr<Conn> keep, std::shared_ptr<WakeSignal> signal,
                                   Socket& sock) {
    error_code ec;
    co_await sock.async_wait(Socket::wait_read, tok(ec));
    if (ec) co_return;  // cancelled: the reply is done
    char byte;
    ssize_t n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      signal->closed = true;
      signal->fire();
    }
  }

  // kOff while a streamed body is being read: the body's pump owns the
  // socket's reads then, and a client going away fails the body instead.
  enum class PeerWatch { kOn, kOff };

  awaitable<std::optional<Response>> awaitDeferred(Conn& c, std::shared_ptr<DeferredReply> reply,
                                                   PeerWatch watch = PeerWatch::kOn) {
    auto signal = std::make_shared<WakeSignal>(c.stream.get_executor());
    Waker wake = makeWaker(signal, ioLife);
    if (watch == PeerWatch::kOn)
      asio::co_spawn(c.stream.get_executor(), watchPeer(c.shared_from_this(), signal, c.stream.socket()),
                     asio::detached);
    std::optional<Response> out;
    while (!signal->closed) {
      out = reply->poll(wake);
      if (out) break;
      co_await waitForWake(*signal);
    }
    reply.reset();  // frees what the wait held, at once
    error_code ec;
    if (watch == PeerWatch::kOn) c.stream.socket().cancel(ec);  // ends the watch
    if (signal->closed) co_return std::nullopt;
    co_return out;
  }

  awaitable<void> pumpStream(Conn& c, StreamReply s, unsigned version, Exchange& x) {
    http::response<http::empty_body> res{http::status::ok, version};
    res.set(http::field::server, "stockaded");
    res.set(http::field::content_type, s.contentType);
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(false);
    if (s.contentLength) {
      res.content_length(*s.contentLength);
    } else {
      res.chunked(true);
    }
    x.record.status = 200;
    http::response_serializer<http::empty_body> sr{res};
    error_code ec;
    c.stream.expires_after(options.limits.writeTimeout);
    co_await http::async_write_header(c.stream, sr, tok(ec));
    if (ec) co_return;
    auto signal = std::make_shared<WakeSignal>(c.stream.get_executor());
    Waker wake = makeWaker(signal, ioLife);
    asio::co_spawn(c.stream.get_executor(), watchPeer(c.shared_from_this(), signal, c.stream.socket()), asio::detached);
    std::string out;
    bool complete = false;
    while (!signal->closed) {
      out.clear();
      ChunkSource::Step step = s.source->next(out, wake);
      if (step == ChunkSource::Step::kData) {
        if (out.empty()) continue;
        c.stream.expires_after(options.limits.writeTimeout);
        if (s.contentLength) {
          // Never past the announced length (a file that grew is cut at the size it had).
          std::uint64_t room = *s.contentLength - x.record.bytesOut;
          if (out.size() > room) out.resize(static_cast<std::size_t>(room));
          co_await asio::async_write(c.stream, asio::buffer(out), tok(ec));
        } else {
          auto chunk = http::make_chunk(asio::buffer(out));
          co_await asio::async_write(c.stream, chunk, tok(ec));
        }
        if (ec) break;
        x.record.bytesOut += out.size();
      } else if (step == ChunkSource::Step::kPending) {
        co_await waitForWake(*signal);
      } else {
        complete = step == ChunkSource::Step::kEnd;
        if (!complete) x.record.status = 500;
        break;
      }
    }
    s.source.reset();  // a disconnect frees the stream's resources here, at once
    if (complete && s.contentLength) {
      if (x.record.bytesOut != *s.contentLength) x.record.status = 500;  // cut short: the close tells the client
    } else if (complete) {
      c.stream.expires_after(options.limits.writeTimeout);
      auto last = http::make_chunk_last();
      co_await asio::async_write(c.stream, last, tok(ec));
    } else if (signal->closed) {
      x.record.status = 499;
    }
    c.stream.socket().cancel(ec);
  }

  awaitable<void> runWebSocket(std::shared_ptr<Conn> c, http::request<http::string_body> req,
                               std::shared_ptr<Duplex> duplex, Exchange& x) {
    c->ws.emplace(std::move(c->stream));
    WsStream& ws = *c->ws;
    beast::get_lowest_layer(ws).expires_never();
    ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
      res.set(http::field::server, "stockaded");
    }));
    ws.read_message_max(options.limits.maxWebSocketMessageBytes);
    ws.binary(true);
    error_code ec;
    co_await ws.async_accept(req, tok(ec));
    if (ec) {
      x.record.status = 400;
      co_return;
    }
    x.record.status = 101;
    auto signal = std::make_shared<WakeSignal>(ws.get_executor());
    Waker wake = makeWaker(signal, ioLife);
    asio::co_spawn(ws.get_executor(), readWebSocket(c, duplex, signal), asio::detached);
    std::string out;
    bool ended = false;
    while (!signal->closed) {
      out.clear();
      ChunkSource::Step step = duplex->next(out, wake);
      if (step == ChunkSource::Step::kData) {
        co_await ws.async_write(asio::buffer(out), tok(ec));
        if (ec) break;
        x.record.bytesOut += out.size();
      } else if (step == ChunkSource::Step::kPending) {
        co_await waitForWake(*signal);
      } else {
        ended = step == ChunkSource::Step::kEnd;
        break;
      }
    }
    if (ended) co_await ws.async_close(websocket::close_code::normal, tok(ec));
    duplex.reset();
    c->close();
  }

  static awaitable<void> readWebSocket(std::shared_ptr<Conn> c, std::shared_ptr<Duplex> duplex,
                                       std::shared_ptr<WakeSignal> signal) {
    beast::flat_buffer buf;
    for (;;) {
      error_code ec;
      co_await c->ws->async_read(buf, tok(ec));
      if (ec) break;
      auto data = buf.cdata();
      duplex->receive(std::string_view(static_cast<const char*>(data.data()), data.size()));
      buf.consume(buf.size());
    }
    duplex.reset();
    signal->closed = true;
    signal->fire();
  }
};

Server::Server(ServerOptions options, std::shared_ptr<Handler> handler, AccessLog log) {
  if (!handler) throw std::invalid_argument("Server: no handler");
  if (options.listen.kind == ListenAddress::Kind::kTcp && !options.auth.token)
    throw std::invalid_argument("--listen " + options.listen.text() +
                                ": a TCP listener needs --token-file (any local user can connect to a TCP port)");
  if (options.ioThreads < 1 || options.workerThreads < 1) throw std::invalid_argument("Server: no threads");
  impl_ = std::make_shared<Impl>(std::move(options), std::move(handler), std::move(log));
  ListenAddress& a = impl_->options.listen;
  platform::UniqueFd fd = a.kind == ListenAddress::Kind::kUnix ? listenUnix(a.path, impl_->socketFile) : listenTcp(a);
  int family = AF_UNIX;
  if (a.kind == ListenAddress::Kind::kTcp) family = a.host.find(':') != std::string::npos ? AF_INET6 : AF_INET;
  impl_->acceptor.assign(Proto(family, a.kind == ListenAddress::Kind::kUnix ? 0 : IPPROTO_TCP), fd.release());
}

Server::~Server() { stop(); }

void Server::start() {
  if (impl_->started) return;
  impl_->started = true;
  asio::co_spawn(impl_->ioc, impl_->acceptLoop(), asio::detached);
  for (int i = 0; i < impl_->options.ioThreads; ++i) impl_->threads.emplace_back([impl = impl_] { impl->ioc.run(); });
}

void Server::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  Impl& i = *impl_;
  asio::post(i.ioc, [&i] {
    error_code ec;
    i.acceptor.close(ec);
  });
  {
    std::lock_guard lock(i.mu);
    for (auto& [id, weak] : i.conns)
      if (auto c = weak.lock()) asio::post(c->executor, [c] { c->close(); });
  }
  if (i.started) {
    std::unique_lock lock(i.mu);
    i.drained.wait_for(lock, std::chrono::seconds(5), [&] { return i.conns.empty(); });
  }
  i.ioc.stop();
  for (auto& t : i.threads) t.join();
  i.threads.clear();
  {
    std::lock_guard lock(i.ioLife->mu);
    i.ioLife->open = false;
  }
  i.workers.join();
  struct stat st{};
  if (i.options.listen.kind == ListenAddress::Kind::kUnix && ::lstat(i.options.listen.path.c_str(), &st) == 0 &&
      st.st_dev == i.socketFile.dev && st.st_ino == i.socketFile.ino)
    ::unlink(i.options.listen.path.c_str());
}

ListenAddress Server::address() const { return impl_->options.listen; }

void Server::replaceToken(std::string token) {
  std::lock_guard lock(impl_->authMu);
  if (!impl_->auth->token) throw std::logic_error("replaceToken(): this server was started without a token");
  auto next = std::make_shared<AuthPolicy>(*impl_->auth);
  next->token = std::move(token);
  impl_->auth = std::move(next);
}

ServerStats Server::stats() const {
  ServerStats s;
  {
    std::lock_guard lock(impl_->mu);
    s.connections = impl_->conns.size();
  }
  s.requestsInFlight = impl_->inFlight.load();
  s.requestsServed = impl_->served.load();
  return s;
}

}  // namespace stockade::daemon
