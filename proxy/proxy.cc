// The proxy's I/O shell: accepts, reads and parses requests with the pure
// parsers, asks decision.h, resolves, connects and pipes bytes. One io thread,
// one coroutine per connection; every session object is touched only on that
// thread, so no locking is needed below the Impl.
//
// Bytes are never lost: a tunnel direction that reads EOF first writes
// everything it has read to the other side, then half-closes that side
// (shutdown(SHUT_WR)) and lets the other direction run to its own EOF. A
// client connection is closed only after a lingering read drains what the
// client still sends, so the kernel never answers unread data with an RST
// that would destroy a response still in flight.

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include "proxy/proxy.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "policy/domain.h"
#include "proxy/decision.h"
#include "proxy/http_request.h"
#include "proxy/socks5.h"

namespace stockade::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;

std::string_view protocolName(Protocol p) noexcept {
  switch (p) {
    case Protocol::kHttp: return "http";
    case Protocol::kConnect: return "connect";
    case Protocol::kSocks5: return "socks5";
    case Protocol::kSocks4: return "socks4";
    case Protocol::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view eventVerdictName(EventVerdict v) noexcept {
  switch (v) {
    case EventVerdict::kAllowed: return "allowed";
    case EventVerdict::kDenied: return "denied";
    case EventVerdict::kRefused: return "refused";
  }
  return "unknown";
}

namespace {

// Per-direction buffer. Large reads halve the syscalls of 64 KiB ones on
// loopback; the memory is allocated uninitialised, so the pages of an idle
// tunnel's buffers are never committed.
constexpr std::size_t kIoChunk = 256 * 1024;
constexpr auto kLinger = std::chrono::milliseconds(1000);
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
// What a splice pipe that filled up is asked to hold (F_SETPIPE_SZ); see
// growPipe().
constexpr std::size_t kPipeBytes = 1024 * 1024;
// Bodies with fewer bytes left than this after the head are copied: the
// copy costs less than making the pipe.
constexpr std::uint64_t kSpliceMinBody = 64 * 1024;

auto tok(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Client text for logs and error bodies: printable ASCII, the rest escaped.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 256)) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 256) out += "...";
  return out;
}

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

std::string_view errorKind(int status) {
  switch (status) {
    case 403: return "blocked-by-policy";
    case 408: return "request-timeout";
    case 431: return "header-too-large";
    case 501: return "not-implemented";
    case 502: return "bad-gateway";
    case 503: return "tunnel-limit";
    case 504: return "gateway-timeout";
    case 505: return "version-not-supported";
  }
  return "bad-request";
}

std::string httpError(int status, std::string_view message) {
  std::string body = "stockade proxy: " + std::string(message) + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reasonPhrase(status)) +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\nX-Proxy-Error: " + std::string(errorKind(status)) + "\r\n\r\n";
  return out + body;
}

// A byte buffer with a read and a write position, of fixed capacity.
class Buffer {
 public:
  explicit Buffer(std::size_t capacity) : capacity_(capacity) {}
  std::string_view view() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  void consume(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Free space at the end, compacting first; empty when full.
  asio::mutable_buffer prepare(std::size_t max = SIZE_MAX) {
    if (!data_) data_ = std::make_unique_for_overwrite<char[]>(capacity_);
    if (end_ == capacity_ && begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    return asio::buffer(data_.get() + end_, std::min(max, capacity_ - end_));
  }
  void commit(std::size_t n) noexcept { end_ += n; }

 private:
  std::size_t capacity_;
  std::unique_ptr<char[]> data_;  // allocated on first use, uninitialised
  std::size_t begin_ = 0, end_ = 0;
};

// A pipe through which splice(2) moves bytes from one socket to another, and
// how many bytes it holds now.
struct SplicePipe {
  platform::UniqueFd read, write;
  std::size_t capacity = 0;
  std::size_t held = 0;
  bool grown = false;  // asked for kPipeBytes once (growPipe)
};

}  // namespace

class Session;

struct ListenerState {
  std::uint64_t id = 0;
  ListenerContext context;  // resolveOverrides normalised
  tcp::acceptor acceptor;
  std::unordered_map<std::uint64_t, std::weak_ptr<Session>> sessions;
  std::uint64_t nextSession = 1;
  bool closed = false;
  ListenerState(asio::io_context& ioc) : acceptor(ioc) {}
};

namespace detail {
struct ProxyState {
  explicit ProxyState(ProxyOptions o) : options(o) {}

  ProxyOptions options;
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  std::thread thread;
  std::atomic<bool> stopped{false};
  std::once_flag joinOnce;

  mutable std::mutex mu;  // guards sink, tunnels, nextListenerId
  std::shared_ptr<const AuditSink> sink;
  std::unordered_map<std::string, std::size_t> tunnels;
  std::uint64_t nextListenerId = 1;

  // io thread only
  std::unordered_map<std::uint64_t, std::shared_ptr<ListenerState>> listeners;

  void emit(const ProxyEvent& event) {
    std::shared_ptr<const AuditSink> s;
    {
      std::lock_guard lock(mu);
      s = sink;
    }
    if (!s || !*s) return;
    try {
      (*s)(event);
    } catch (const std::exception& e) {
      spdlog::error("stockade proxy: the audit sink threw: {}", e.what());
    } catch (...) {
      spdlog::error("stockade proxy: the audit sink threw a non-standard exception");
    }
  }
  bool acquireTunnel(const std::string& sandbox) {
    std::lock_guard lock(mu);
    std::size_t& n = tunnels[sandbox];
    if (n >= options.limits.maxTunnelsPerSandbox) return false;
    ++n;
    return true;
  }
  void releaseTunnel(const std::string& sandbox) {
    std::lock_guard lock(mu);
    auto it = tunnels.find(sandbox);
    if (it == tunnels.end()) return;
    if (--it->second == 0) tunnels.erase(it);
  }
  // Runs fn on the io thread and waits for it (inline when already there).
  void runOnIo(const std::function<void()>& fn) {
    if (ioc.get_executor().running_in_this_thread()) {
      fn();
      return;
    }
    std::promise<void> done;
    asio::post(ioc, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  void closeListener(std::uint64_t id);
  void shutdown();
};
}  // namespace detail
using detail::ProxyState;

// One client connection, from accept to close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ProxyState& impl, std::shared_ptr<ListenerState> listener, std::uint64_t id, tcp::socket client)
      : impl_(impl),
        limits_(impl.options.limits),
        listener_(std::move(listener)),
        id_(id),
        client_(std::move(client)),
        upstream_(impl.ioc),
        resolver_(impl.ioc),
        timer_(impl.ioc),
        doneTimer_(impl.ioc),
        inbuf_(std::max<std::size_t>(kIoChunk, limits_.maxHeaderBytes)),
        upbuf_(std::max<std::size_t>(kIoChunk, limits_.maxHeaderBytes)) {}

  static awaitable<void> start(std::shared_ptr<Session> self) {
    try {
      co_await self->run();
    } catch (const std::exception& e) {
      spdlog::error("stockade proxy: session of sandbox {} failed: {}", self->listener_->context.sandboxId, e.what());
    }
    self->close();
  }

  // Cancels every operation and closes both sockets. Idempotent.
  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ec;
    timer_.cancel();
    resolver_.cancel();
    client_.close(ec);
    closeUpstream();
    listener_->sessions.erase(id_);
  }

 private:
  enum class Deadline { kNone, kIdle, kHeader, kConnect, kLinger };

  // ---- deadlines -------------------------------------------------------
  static awaitable<void> watchdog(std::shared_ptr<Session> self) {
    while (!self->closed_) {
      self->timer_.expires_at(self->deadline_);
      error_code ec;
      co_await self->timer_.async_wait(tok(ec));
      if (self->closed_) break;
      if (self->kind_ != Deadline::kNone && Clock::now() >= self->deadline_) {
        self->fired_ = self->kind_;
        self->kind_ = Deadline::kNone;
        self->deadline_ = Clock::time_point::max();
        self->resolver_.cancel();
        self->client_.cancel(ec);
        self->upstream_.cancel(ec);
      }
    }
  }
  void arm(Deadline kind, std::chrono::milliseconds d) {
    fired_ = Deadline::kNone;
    kind_ = kind;
    deadline_ = Clock::now() + d;
    if (deadline_ < timer_.expiry()) timer_.expires_at(deadline_);  // wakes the watchdog
  }
  void disarm() {
    kind_ = Deadline::kNone;
    deadline_ = Clock::time_point::max();
  }
  // Progress on an idle deadline pushes it back.
  void touch() {
    if (kind_ == Deadline::kIdle) deadline_ = Clock::now() + limits_.idleTimeout;
  }
  bool timedOut() const noexcept { return fired_ != Deadline::kNone; }

  // ---- small I/O helpers -----------------------------------------------
  awaitable<std::size_t> readInto(tcp::socket& s, Buffer& b, error_code& ec, std::size_t max = SIZE_MAX) {
    auto space = b.prepare(max);
    if (space.size() == 0) {
      ec = asio::error::no_buffer_space;
      co_return 0;
    }
    std::size_t n = co_await s.async_read_some(space, tok(ec));
    b.commit(n);
    co_return n;
  }
  awaitable<bool> writeAll(tcp::socket& s, std::string_view data, error_code& ec) {
    co_await asio::async_write(s, asio::buffer(data.data(), data.size()), tok(ec));
    co_return !ec;
  }

  ProxyEvent event(Protocol p) const {
    ProxyEvent e;
    e.sandboxId = listener_->context.sandboxId;
    e.runId = listener_->context.runId;
    e.protocol = p;
    return e;
  }
  void emit(ProxyEvent& e, Clock::time_point started) {
    e.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    impl_.emit(e);
  }

  // Sends an HTTP error reply and audits it.
  // `rule` goes to the audit log; the client reads `message` (the rule when empty).
  awaitable<void> refuseHttp(ProxyEvent& e, Clock::time_point started, EventVerdict verdict, int status,
                             std::string rule, std::string message = {}) {
    e.verdict = verdict;
    e.status = status;
    e.rule = rule;
    emit(e, started);
    arm(Deadline::kIdle, limits_.idleTimeout);
    error_code ec;
    co_await writeAll(client_, httpError(status, message.empty() ? rule : message), ec);
  }

  // Shuts down our sending side, then reads and discards what the client
  // still sends (bounded in time and bytes) before the socket is closed.
  awaitable<void> lingeringClose() {
    error_code ec;
    if (!client_.is_open()) co_return;
    client_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) co_return;
    arm(Deadline::kLinger, kLinger);
    std::size_t drained = 0;
    Buffer sink(16 * 1024);
    while (drained < kMaxLingerBytes) {
      std::size_t n = co_await readInto(client_, sink, ec);
      sink.consume(n);
      drained += n;
      if (ec) break;
    }
    disarm();
  }

  // ---- the connection --------------------------------------------------
  awaitable<void> run() {
    started_ = Clock::now();
    error_code ec;
    client_.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(impl_.ioc, watchdog(shared_from_this()), asio::detached);

    arm(Deadline::kHeader, limits_.headerTimeout);
    co_await readInto(client_, inbuf_, ec);
    if (inbuf_.size() == 0) co_return;  // closed or silent: nothing to answer
    auto first = static_cast<unsigned char>(inbuf_.view()[0]);
    if (first == socks5::kVersion) {
      co_await serveSocks5();
    } else if (first == socks5::kVersion4) {
      ProxyEvent e = event(Protocol::kSocks4);
      e.status = 0x5B;
      e.rule = "SOCKS4 and SOCKS4a are refused; use SOCKS5 (socks5h://)";
      emit(e, started_);
      arm(Deadline::kIdle, limits_.idleTimeout);
      co_await writeAll(client_, socks5::socks4Rejected(), ec);
      co_await lingeringClose();
    } else {
      co_await serveHttp();
    }
  }

  // ---- HTTP ----------------------------------------------------------------
  enum class HeadResult { kOk, kClosed, kTooLarge, kTimeout };

  // Reads until `buf` starts with a whole message head. The head deadline
  // starts at the first byte of the head.
  awaitable<HeadResult> readHead(tcp::socket& s, Buffer& buf, std::size_t& length, bool armHeader) {
    bool started = false;
    while (true) {
      buf.consume(http::skipLeadingEmptyLines(buf.view()));
      if (buf.size() > 0 && !started) {
        started = true;
        if (armHeader) arm(Deadline::kHeader, limits_.headerTimeout);
      }
      if (auto len = http::headLength(buf.view())) {
        if (*len > limits_.maxHeaderBytes) co_return HeadResult::kTooLarge;
        length = *len;
        co_return HeadResult::kOk;
      }
      if (buf.size() >= limits_.maxHeaderBytes) co_return HeadResult::kTooLarge;
      error_code ec;
      co_await readInto(s, buf, ec);
      if (ec) co_return timedOut() && started ? HeadResult::kTimeout : HeadResult::kClosed;
    }
  }

  awaitable<void> serveHttp() {
    bool firstRequest = true;
    while (!closed_) {
      Clock::time_point started = firstRequest ? started_ : Clock::now();
      ProxyEvent e = event(Protocol::kHttp);
      if (!firstRequest) arm(Deadline::kIdle, limits_.idleTimeout);
      std::size_t length = 0;
      HeadResult r = co_await readHead(client_, inbuf_, length, true);
      if (r == HeadResult::kClosed) co_return;
      if (r == HeadResult::kTimeout) {
        co_await refuseHttp(e, started, EventVerdict::kRefused, 408,
                            "the request head did not arrive within " +
                                std::to_string(limits_.headerTimeout.count()) + " ms");
        co_return co_await lingeringClose();
      }
      if (r == HeadResult::kTooLarge) {
        co_await refuseHttp(e, started, EventVerdict::kRefused, 431,
                            "the request head is larger than " + std::to_string(limits_.maxHeaderBytes) + " bytes");
        co_return co_await lingeringClose();
      }
      firstRequest = false;
      http::Request request;
      http::Refusal why;
      if (!http::parseRequest(inbuf_.view().substr(0, length), request, why)) {
        co_await refuseHttp(e, started, EventVerdict::kRefused, why.status, why.message);
        co_return co_await lingeringClose();
      }
      inbuf_.consume(length);
      if (request.kind == http::Request::Kind::kConnect) {
        co_return co_await serveConnect(request, started);
      }
      bool again = co_await forward(request, started);
      if (!again || !request.keepAlive) co_return co_await lingeringClose();
    }
  }

  // The outcome of the decision, resolution and address checks.
  struct Target {
    bool ok = false;
    Verdict verdict;
    std::vector<tcp::endpoint> endpoints;
    EventVerdict eventVerdict = EventVerdict::kDenied;
    int httpStatus = 403;
    socks5::Reply socksReply = socks5::Reply::kNotAllowedByRuleset;
    std::string message;  // for the client and the audit log
  };

  // What an HTTP client is told when `t` was refused: a policy denial names
  // the host, port and rule; other refusals say why.
  static std::string clientMessage(const Target& t, const ProxyEvent& e, std::uint16_t port) {
    if (t.httpStatus != 403) return t.message;
    return "blocked by policy: host \"" + e.host + "\" port " + std::to_string(port) + ": " + t.message;
  }

  awaitable<Target> resolveTarget(std::string_view rawHost, std::uint16_t port, ProxyEvent& e) {
    Target t;
    e.host = printable(rawHost);
    e.port = port;
    std::shared_ptr<const DerivedRules::Network> rules;
    try {
      rules = listener_->context.rules();
    } catch (const std::exception& ex) {
      t.message = std::string("the rules provider failed: ") + ex.what();
      co_return t;
    }
    if (!rules) {
      t.message = "no network rules are available for this sandbox";
      co_return t;
    }
    t.verdict = decide(*rules, rawHost, port);
    if (!t.verdict.host.text.empty()) e.host = t.verdict.host.text;
    if (!t.verdict.allowed()) {
      t.message = t.verdict.rule;
      co_return t;
    }
    std::vector<std::pair<std::string, AddressSource>> addresses;
    const Host& h = t.verdict.host;
    const auto& overrides = listener_->context.resolveOverrides;
    if (h.isAddress) {
      addresses.emplace_back(h.text, AddressSource::kLiteral);
    } else if (auto it = overrides.find(h.text); it != overrides.end()) {
      addresses.emplace_back(it->second, AddressSource::kOperatorOverride);
    } else if (h.text == "localhost") {
      // RFC 6761: localhost is loopback; never asked of DNS.
      addresses.emplace_back("127.0.0.1", AddressSource::kResolved);
      addresses.emplace_back("::1", AddressSource::kResolved);
    } else {
      arm(Deadline::kConnect, limits_.connectTimeout);
      error_code ec;
      auto results = co_await resolver_.async_resolve(h.text, std::to_string(port),
                                                     tcp::resolver::numeric_service, tok(ec));
      bool timeout = timedOut();
      disarm();
      if (ec || results.empty()) {
        t.eventVerdict = EventVerdict::kAllowed;
        t.httpStatus = timeout ? 504 : 502;
        t.socksReply = socks5::Reply::kHostUnreachable;
        t.message = "could not resolve \"" + h.text + "\": " +
                    (timeout ? "timed out after " + std::to_string(limits_.connectTimeout.count()) + " ms"
                             : ec ? ec.message() : std::string("no addresses"));
        co_return t;
      }
      for (const auto& r : results) {
        std::string a = r.endpoint().address().to_string();
        bool seen = false;
        for (const auto& [known, src] : addresses) seen = seen || known == a;
        if (!seen) addresses.emplace_back(a, AddressSource::kResolved);
      }
    }
    // Every address must pass: the connection goes only to checked addresses,
    // and a name that resolves to any special address is refused as a whole.
    std::string rule = t.verdict.rule;
    for (const auto& [address, source] : addresses) {
      Verdict v = decideAddress(*rules, t.verdict, address, source);
      if (!v.allowed()) {
        t.verdict = v;
        t.message = v.rule;
        if (!address.empty()) e.address = address;
        co_return t;
      }
      rule = v.rule;
      auto canonical = policy::canonicalIp(address);
      error_code ec;
      auto ip = asio::ip::make_address(canonical ? *canonical : address, ec);
      if (ec) {
        t.message = "address \"" + printable(address) + "\" cannot be connected to";
        co_return t;
      }
      t.endpoints.emplace_back(ip, port);
    }
    t.verdict.rule = rule;
    t.ok = true;
    t.eventVerdict = EventVerdict::kAllowed;
    t.message = rule;
    co_return t;
  }

  void closeUpstream() {
    error_code ec;
    upstream_.close(ec);
    upbuf_.consume(upbuf_.size());
    upstreamAddress_.clear();
    if (holdingSlot_) {
      holdingSlot_ = false;
      impl_.releaseTunnel(listener_->context.sandboxId);
    }
  }

  struct ConnectResult {
    bool ok = false;
    int httpStatus = 502;
    socks5::Reply socksReply = socks5::Reply::kGeneralFailure;
    std::string message;
  };
  // Connects upstream_ to the first endpoint that accepts.
  awaitable<ConnectResult> connectUpstream(const std::vector<tcp::endpoint>& endpoints) {
    ConnectResult r;
    closeUpstream();
    if (!impl_.acquireTunnel(listener_->context.sandboxId)) {
      r.httpStatus = 503;
      r.socksReply = socks5::Reply::kGeneralFailure;
      r.message = "sandbox " + listener_->context.sandboxId + " already has " +
                  std::to_string(limits_.maxTunnelsPerSandbox) + " upstream connections open";
      co_return r;
    }
    holdingSlot_ = true;
    for (const auto& ep : endpoints) {
      error_code ec;
      upstream_ = tcp::socket(impl_.ioc);
      arm(Deadline::kConnect, limits_.connectTimeout);
      co_await upstream_.async_connect(ep, tok(ec));
      bool timeout = timedOut();
      disarm();
      if (closed_) {
        r.message = "the listener was closed";
        co_return r;
      }
      std::string where = ep.address().to_string() + " port " + std::to_string(ep.port());
      if (!ec) {
        upstream_.set_option(tcp::no_delay(true), ec);
        upstreamAddress_ = ep.address().to_string();
        r.ok = true;
        co_return r;
      }
      error_code ignore;
      upstream_.close(ignore);
      if (timeout) {
        r.httpStatus = 504;
        r.socksReply = socks5::Reply::kHostUnreachable;
        r.message = "connecting to " + where + " timed out after " + std::to_string(limits_.connectTimeout.count()) + " ms";
      } else {
        r.httpStatus = 502;
        r.socksReply = ec == asio::error::connection_refused ? socks5::Reply::kConnectionRefused
                       : ec == asio::error::network_unreachable ? socks5::Reply::kNetworkUnreachable
                                                                : socks5::Reply::kHostUnreachable;
        r.message = "connecting to " + where + " failed: " + ec.message();
      }
    }
    if (holdingSlot_) {
      holdingSlot_ = false;
      impl_.releaseTunnel(listener_->context.sandboxId);
    }
    co_return r;
  }

  enum class BodyResult { kOk, kSourceClosed, kMalformed, kFailed };

  // Forwards one body delimited by `framing` from `from` (bytes already in
  // `buf` first) to `to`, unchanged. Large stretches whose length is known
  // (a Content-Length body, the data of a large chunk, a body that ends at
  // EOF) move with splice(2) through `pipe` instead of through `buf`.
  awaitable<BodyResult> forwardBody(tcp::socket& from, Buffer& buf, tcp::socket& to, SplicePipe& pipe,
                                    http::Framing framing, std::uint64_t& counter) {
    error_code ec;
    auto spliceBody = [&](std::uint64_t n) { return spliceBytes(from, to, pipe, n, counter); };
    switch (framing.kind) {
      case http::Framing::kNone:
        co_return BodyResult::kOk;
      case http::Framing::kLength: {
        std::uint64_t remaining = framing.length;
        while (true) {
          if (buf.size() > 0) {
            std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, buf.size()));
            if (!co_await writeAll(to, buf.view().substr(0, n), ec)) co_return BodyResult::kFailed;
            buf.consume(n);
            remaining -= n;
            counter += n;
            touch();
          }
          if (remaining == 0) co_return BodyResult::kOk;
          if (remaining >= kSpliceMinBody && openPipe(pipe)) {
            switch (co_await spliceBody(remaining)) {
              case SpliceResult::kDone: co_return BodyResult::kOk;
              case SpliceResult::kEof: co_return BodyResult::kSourceClosed;
              case SpliceResult::kFailed: co_return BodyResult::kFailed;
            }
          }
          co_await readInto(from, buf, ec, static_cast<std::size_t>(std::min<std::uint64_t>(remaining, SIZE_MAX)));
          if (ec == asio::error::eof) co_return BodyResult::kSourceClosed;
          if (ec) co_return BodyResult::kFailed;
          touch();
        }
      }
      case http::Framing::kChunked: {
        http::ChunkedScanner scanner;
        while (true) {
          if (buf.size() > 0) {
            auto n = scanner.feed(buf.view());
            if (!n) co_return BodyResult::kMalformed;
            if (!co_await writeAll(to, buf.view().substr(0, *n), ec)) co_return BodyResult::kFailed;
            buf.consume(*n);
            counter += *n;
            touch();
          }
          if (scanner.done()) co_return BodyResult::kOk;
          // The rest of a large chunk's data needs no scanning: splice it.
          if (std::uint64_t data = scanner.dataRemaining(); data >= kSpliceMinBody && openPipe(pipe)) {
            switch (co_await spliceBody(data)) {
              case SpliceResult::kDone: scanner.skipData(data); continue;
              case SpliceResult::kEof: co_return BodyResult::kSourceClosed;
              case SpliceResult::kFailed: co_return BodyResult::kFailed;
            }
          }
          co_await readInto(from, buf, ec);
          if (ec == asio::error::eof) co_return BodyResult::kSourceClosed;
          if (ec) co_return BodyResult::kFailed;
          touch();
        }
      }
      case http::Framing::kUntilClose: {
        while (true) {
          if (buf.size() > 0) {
            if (!co_await writeAll(to, buf.view(), ec)) co_return BodyResult::kFailed;
            counter += buf.size();
            buf.consume(buf.size());
            touch();
          }
          if (openPipe(pipe)) {
            co_return co_await spliceBody(kUntilEof) == SpliceResult::kEof ? BodyResult::kOk : BodyResult::kFailed;
          }
          co_await readInto(from, buf, ec);
          if (ec == asio::error::eof && buf.size() == 0) co_return BodyResult::kOk;
          if (ec && ec != asio::error::eof) co_return BodyResult::kFailed;
          touch();
        }
      }
    }
    co_return BodyResult::kFailed;
  }

  // One absolute-form request and its response. Returns whether the client
  // connection may carry another request.
  awaitable<bool> forward(http::Request& request, Clock::time_point started) {
    ProxyEvent e = event(Protocol::kHttp);
    Target t = co_await resolveTarget(request.host, request.port, e);
    if (!t.ok) {
      std::string message = clientMessage(t, e, request.port);
      co_await refuseHttp(e, started, t.eventVerdict, t.httpStatus, t.message, message);
      co_return false;
    }
    e.rule = t.message;
    // Reuse the upstream connection when it goes to an address just checked.
    bool reuse = false;
    if (upstream_.is_open() && upstreamPort_ == request.port) {
      for (const auto& ep : t.endpoints) reuse = reuse || ep.address().to_string() == upstreamAddress_;
      // An idle upstream connection must have nothing to say: EOF or stray
      // bytes mean it cannot carry this request.
      char probe;
      ssize_t n = ::recv(upstream_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
      if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) reuse = false;
    }
    if (!reuse) {
      ConnectResult c = co_await connectUpstream(t.endpoints);
      if (!c.ok) {
        co_await refuseHttp(e, started, EventVerdict::kAllowed, c.httpStatus, c.message);
        co_return false;
      }
      upstreamPort_ = request.port;
    }
    e.address = upstreamAddress_;

    error_code ec;
    arm(Deadline::kIdle, limits_.idleTimeout);
    if (request.expectContinue && request.framing.kind != http::Framing::kNone) {
      // The proxy accepts the body itself; Expect is not forwarded.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      if (!co_await writeAll(client_, kContinue, ec)) co_return false;
    }
    std::string head = http::originHead(request);
    if (!co_await writeAll(upstream_, head, ec)) {
      co_await refuseHttp(e, started, EventVerdict::kAllowed, 502, "writing the request upstream failed: " + ec.message());
      co_return false;
    }
    e.bytesUp += head.size();
    BodyResult body = co_await forwardBody(client_, inbuf_, upstream_, upPipe_, request.framing, e.bytesUp);
    if (body != BodyResult::kOk) {
      e.verdict = EventVerdict::kAllowed;
      e.status = 0;
      e.rule = t.message + "; the request body was " +
               (body == BodyResult::kMalformed ? "malformed" : timedOut() ? "idle too long" : "cut short");
      emit(e, started);
      co_return false;
    }

    // Response heads: interim 1xx heads are forwarded and followed by more.
    http::ResponseHead response;
    while (true) {
      std::size_t length = 0;
      HeadResult r = co_await readHead(upstream_, upbuf_, length, false);
      if (r != HeadResult::kOk) {
        int status = timedOut() ? 504 : 502;
        std::string what = r == HeadResult::kTooLarge ? "the upstream response head is too large"
                           : timedOut() ? "no upstream response within " + std::to_string(limits_.idleTimeout.count()) + " ms"
                                        : "the upstream closed the connection without a response";
        if (e.bytesDown == 0) {
          co_await refuseHttp(e, started, EventVerdict::kAllowed, status, what);
        } else {
          e.status = status;
          e.rule = t.message + "; " + what;
          emit(e, started);
        }
        co_return false;
      }
      http::Refusal why;
      if (!http::parseResponseHead(upbuf_.view().substr(0, length), request.method, response, why)) {
        if (e.bytesDown == 0) co_await refuseHttp(e, started, EventVerdict::kAllowed, 502, why.message);
        else emit(e, started);
        co_return false;
      }
      if (!co_await writeAll(client_, upbuf_.view().substr(0, length), ec)) {
        e.rule = t.message + "; the client went away";
        emit(e, started);
        co_return false;
      }
      e.bytesDown += length;
      upbuf_.consume(length);
      touch();
      if (response.status == 101) {
        // Upgrade was stripped from the request; a 101 is a protocol violation.
        e.status = 101;
        e.rule = t.message + "; the upstream switched protocols without being asked";
        emit(e, started);
        co_return false;
      }
      if (response.status >= 200) break;
    }
    e.status = response.status;
    e.verdict = EventVerdict::kAllowed;
    BodyResult rb = co_await forwardBody(upstream_, upbuf_, client_, downPipe_, response.framing, e.bytesDown);
    if (rb != BodyResult::kOk) {
      e.rule = t.message + "; the response body was " +
               (rb == BodyResult::kMalformed ? "malformed" : timedOut() ? "idle too long" : "cut short");
      emit(e, started);
      co_return false;  // the client sees the connection close before the body's end
    }
    emit(e, started);
    if (!response.keepAlive || upbuf_.size() > 0) closeUpstream();
    co_return response.framing.kind != http::Framing::kUntilClose;
  }

  // ---- CONNECT and SOCKS5 tunnels -------------------------------------------
  awaitable<void> serveConnect(http::Request& request, Clock::time_point started) {
    ProxyEvent e = event(Protocol::kConnect);
    Target t = co_await resolveTarget(request.host, request.port, e);
    if (!t.ok) {
      std::string message = clientMessage(t, e, request.port);
      co_await refuseHttp(e, started, t.eventVerdict, t.httpStatus, t.message, message);
      co_return co_await lingeringClose();
    }
    ConnectResult c = co_await connectUpstream(t.endpoints);
    if (!c.ok) {
      co_await refuseHttp(e, started, EventVerdict::kAllowed, c.httpStatus, c.message);
      co_return co_await lingeringClose();
    }
    e.address = upstreamAddress_;
    e.rule = t.message;
    e.verdict = EventVerdict::kAllowed;
    e.status = 200;
    error_code ec;
    arm(Deadline::kIdle, limits_.idleTimeout);
    static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (co_await writeAll(client_, kEstablished, ec)) co_await tunnel(e);
    emit(e, started);
  }

  awaitable<void> serveSocks5() {
    ProxyEvent e = event(Protocol::kSocks5);
    error_code ec;
    socks5::Greeting greeting;
    std::string error;
    while (true) {
      auto st = socks5::parseGreeting(inbuf_.view(), greeting, error);
      if (st == socks5::Status::kOk) break;
      if (st == socks5::Status::kError) {
        e.rule = "malformed SOCKS5 greeting: " + error;
        emit(e, started_);
        co_return;
      }
      co_await readInto(client_, inbuf_, ec);
      if (ec) co_return;  // closed or timed out before a greeting: nothing to answer
    }
    inbuf_.consume(greeting.length);
    if (!greeting.noAuthOffered) {
      e.rule = "the SOCKS5 client offered no acceptable method (only no-authentication is served)";
      emit(e, started_);
      co_await writeAll(client_, socks5::methodReply(false), ec);
      co_return co_await lingeringClose();
    }
    if (!co_await writeAll(client_, socks5::methodReply(true), ec)) co_return;

    socks5::Request request;
    socks5::Reply code = socks5::Reply::kGeneralFailure;
    arm(Deadline::kHeader, limits_.headerTimeout);
    while (true) {
      auto st = socks5::parseRequest(inbuf_.view(), request, code, error);
      if (st == socks5::Status::kOk) break;
      if (st == socks5::Status::kError) {
        e.host = printable(request.host);
        e.port = request.port;
        e.status = static_cast<int>(code);
        e.rule = "SOCKS5 request refused: " + error;
        emit(e, started_);
        co_await writeAll(client_, socks5::reply(code), ec);
        co_return co_await lingeringClose();
      }
      co_await readInto(client_, inbuf_, ec);
      if (ec) {
        if (timedOut()) {
          e.status = static_cast<int>(socks5::Reply::kTtlExpired);
          e.rule = "the SOCKS5 request did not arrive within " + std::to_string(limits_.headerTimeout.count()) + " ms";
          emit(e, started_);
          arm(Deadline::kIdle, limits_.idleTimeout);
          co_await writeAll(client_, socks5::reply(socks5::Reply::kTtlExpired), ec);
        }
        co_return;
      }
    }
    inbuf_.consume(request.length);
    disarm();

    Target t = co_await resolveTarget(request.host, request.port, e);
    auto refuse = [&](EventVerdict v, socks5::Reply r, const std::string& why) -> awaitable<void> {
      e.verdict = v;
      e.status = static_cast<int>(r);
      e.rule = why;
      emit(e, started_);
      arm(Deadline::kIdle, limits_.idleTimeout);
      error_code wec;
      co_await writeAll(client_, socks5::reply(r), wec);
      co_await lingeringClose();
    };
    if (!t.ok) co_return co_await refuse(t.eventVerdict, t.socksReply, t.message);
    ConnectResult c = co_await connectUpstream(t.endpoints);
    if (!c.ok) co_return co_await refuse(EventVerdict::kAllowed, c.socksReply, c.message);
    e.address = upstreamAddress_;
    e.rule = t.message;
    e.verdict = EventVerdict::kAllowed;
    e.status = static_cast<int>(socks5::Reply::kSucceeded);
    arm(Deadline::kIdle, limits_.idleTimeout);
    if (co_await writeAll(client_, socks5::reply(socks5::Reply::kSucceeded), ec)) co_await tunnel(e);
    emit(e, started_);
  }

  // Pipes bytes both ways until both directions reached EOF, or one failed.
  awaitable<void> tunnel(ProxyEvent& e) {
    arm(Deadline::kIdle, limits_.idleTimeout);
    pumpsRunning_ = 2;
    doneTimer_.expires_at(Clock::time_point::max());
    auto self = shared_from_this();
    asio::co_spawn(
        impl_.ioc, splicePump(self, upstream_, client_, upbuf_, downPipe_, &e.bytesDown),
        [self](std::exception_ptr) {
          if (--self->pumpsRunning_ == 0) self->doneTimer_.cancel();
        });
    co_await splicePump(self, client_, upstream_, inbuf_, upPipe_, &e.bytesUp);
    if (--pumpsRunning_ > 0) {
      while (pumpsRunning_ > 0) {
        error_code ec;
        co_await doneTimer_.async_wait(tok(ec));
      }
    }
    if (timedOut()) e.rule += "; closed after " + std::to_string(limits_.idleTimeout.count()) + " ms idle";
    closeUpstream();
  }

  // One direction of a tunnel. Bytes already in `buf` (read with the request
  // head) are written first, then the rest moves through a pipe with
  // splice(2), never entering user space. On EOF everything read has been
  // written (the pipe is drained) before `to` is half-closed; on any error
  // both sockets are closed, which ends the other direction too. When no
  // pipe can be made (fd limit) the copying pump below carries the tunnel.
  static awaitable<void> splicePump(std::shared_ptr<Session> self, tcp::socket& from, tcp::socket& to, Buffer& buf,
                                    SplicePipe& pipe, std::uint64_t* counter) {
    if (!self->openPipe(pipe)) co_return co_await pump(self, from, to, buf, counter);
    error_code ec;
    bool ok = true;
    if (buf.size() > 0) {
      ok = co_await self->writeAll(to, buf.view(), ec);
      *counter += buf.size();
      buf.consume(buf.size());
    }
    if (ok && co_await self->spliceBytes(from, to, pipe, kUntilEof, *counter) == SpliceResult::kEof) {
      to.shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    error_code ignore;
    from.close(ignore);
    to.close(ignore);
  }

  // Makes `pipe` on first use. False when no pipe can be made (fd limit):
  // the caller copies through user space instead, and the log says so once
  // per session.
  bool openPipe(SplicePipe& pipe) {
    if (pipe.write) return true;
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
      if (!pipeWarned_) {
        pipeWarned_ = true;
        spdlog::warn("stockade proxy: pipe2() failed ({}); connection of sandbox {} copies through user space",
                     std::strerror(errno), listener_->context.sandboxId);
      }
      return false;
    }
    pipe.read = platform::UniqueFd(fds[0]);
    pipe.write = platform::UniqueFd(fds[1]);
    int size = ::fcntl(pipe.write.get(), F_GETPIPE_SZ);
    pipe.capacity = size > 0 ? static_cast<std::size_t>(size) : 4096;
    pipe.held = 0;
    return true;
  }

  // A pipe that filled up carries a bulk transfer: growing it from 64 KiB to
  // 1 MiB moves more per splice() (a 100 MB download then takes about a
  // tenth of the splice calls). Only pipes that fill up grow, once, because
  // pipe pages count against a per-user quota (fs.pipe-user-pages-soft)
  // that other pipes of the same user share; when the kernel refuses, the
  // pipe keeps its size: slower, not wrong.
  static void growPipe(SplicePipe& pipe) {
    pipe.grown = true;
    int size = ::fcntl(pipe.write.get(), F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
    if (size > 0) pipe.capacity = static_cast<std::size_t>(size);
  }

  enum class SpliceResult { kDone, kEof, kFailed };
  static constexpr std::uint64_t kUntilEof = UINT64_MAX;

  // Moves `limit` bytes (kUntilEof: until EOF) from `from` to `to` through
  // `pipe` with splice(2). Never reads past `limit`, so the next message on
  // `from` stays in its socket. kDone: `limit` bytes were written. kEof:
  // `from` reached EOF first, and everything read from it was written.
  // kFailed: a socket failed or the deadline fired; the pipe is discarded.
  awaitable<SpliceResult> spliceBytes(tcp::socket& from, tcp::socket& to, SplicePipe& pipe, std::uint64_t limit,
                                      std::uint64_t& counter) {
    error_code ec;
    if (!from.native_non_blocking()) from.native_non_blocking(true, ec);
    if (!ec && !to.native_non_blocking()) to.native_non_blocking(true, ec);
    std::uint64_t left = limit;
    bool eof = false;
    while (!ec) {
      if (!eof && left > 0 && pipe.held < pipe.capacity) {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, pipe.capacity - pipe.held));
        ssize_t n = ::splice(from.native_handle(), nullptr, pipe.write.get(), nullptr, want,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
          pipe.held += static_cast<std::size_t>(n);
          if (left != kUntilEof) left -= static_cast<std::uint64_t>(n);
          if (pipe.held >= pipe.capacity && !pipe.grown) growPipe(pipe);
          touch();
        } else if (n == 0) {
          eof = true;
        } else if (errno == EINTR) {
          continue;
        } else if (errno != EAGAIN) {
          break;
        } else if (pipe.held == 0) {
          co_await from.async_wait(tcp::socket::wait_read, tok(ec));
          continue;
        }
      }
      if (pipe.held > 0) {
        ssize_t n = ::splice(pipe.read.get(), nullptr, to.native_handle(), nullptr, pipe.held,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
          pipe.held -= static_cast<std::size_t>(n);
          counter += static_cast<std::uint64_t>(n);
          touch();
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else if (n < 0 && errno == EAGAIN) {
          co_await to.async_wait(tcp::socket::wait_write, tok(ec));
        } else {
          break;
        }
        continue;
      }
      if (eof) co_return SpliceResult::kEof;
      if (left == 0) co_return SpliceResult::kDone;
    }
    pipe = SplicePipe{};  // may still hold bytes of a message that failed
    co_return SpliceResult::kFailed;
  }

  // One direction of a tunnel, copying through `buf`. On EOF, everything
  // read has already been written; the other side is then half-closed. On
  // any error both sockets are closed, which ends the other direction too.
  static awaitable<void> pump(std::shared_ptr<Session> self, tcp::socket& from, tcp::socket& to, Buffer& buf,
                              std::uint64_t* counter) {
    error_code ec;
    while (true) {
      if (buf.size() > 0) {
        if (!co_await self->writeAll(to, buf.view(), ec)) break;
        *counter += buf.size();
        buf.consume(buf.size());
        self->touch();
      }
      co_await self->readInto(from, buf, ec, kIoChunk);
      if (ec == asio::error::eof && buf.size() == 0) {
        to.shutdown(tcp::socket::shutdown_send, ec);
        co_return;
      }
      if (ec && ec != asio::error::eof) break;
      self->touch();
    }
    // A failure (reset, timeout, listener closed): tear both sides down.
    error_code ignore;
    from.close(ignore);
    to.close(ignore);
  }

  ProxyState& impl_;
  const ProxyLimits& limits_;
  std::shared_ptr<ListenerState> listener_;
  std::uint64_t id_;
  tcp::socket client_;
  tcp::socket upstream_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  asio::steady_timer doneTimer_;
  Buffer inbuf_;  // client -> upstream
  Buffer upbuf_;  // upstream -> client
  SplicePipe upPipe_;    // client -> upstream, made on first use
  SplicePipe downPipe_;  // upstream -> client, made on first use
  bool pipeWarned_ = false;
  std::string upstreamAddress_;
  std::uint16_t upstreamPort_ = 0;
  bool holdingSlot_ = false;
  bool closed_ = false;
  int pumpsRunning_ = 0;
  Deadline kind_ = Deadline::kNone;
  Deadline fired_ = Deadline::kNone;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point started_{};
};

namespace {

awaitable<void> acceptLoop(ProxyState& impl, std::shared_ptr<ListenerState> listener) {
  asio::steady_timer backoff(impl.ioc);
  while (!listener->closed) {
    error_code ec;
    tcp::socket socket = co_await listener->acceptor.async_accept(tok(ec));
    if (listener->closed) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
      // EMFILE and friends: wait instead of spinning; the listener stays up.
      spdlog::warn("stockade proxy: accept on the listener of sandbox {} failed: {}", listener->context.sandboxId,
                   ec.message());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(tok(ec));
      continue;
    }
    std::uint64_t id = listener->nextSession++;
    auto session = std::make_shared<Session>(impl, listener, id, std::move(socket));
    listener->sessions.emplace(id, session);
    asio::co_spawn(impl.ioc, Session::start(session), asio::detached);
  }
}

}  // namespace

void ProxyState::closeListener(std::uint64_t id) {
  auto it = listeners.find(id);
  if (it == listeners.end()) return;
  std::shared_ptr<ListenerState> l = it->second;
  listeners.erase(it);
  l->closed = true;
  error_code ec;
  l->acceptor.close(ec);
  // close() erases the session from the map: iterate over a copy.
  auto sessions = l->sessions;
  for (auto& [sid, weak] : sessions) {
    if (auto s = weak.lock()) s->close();
  }
}

void ProxyState::shutdown() {
  if (!stopped.exchange(true)) {
    asio::post(ioc, [this] {
      std::vector<std::uint64_t> ids;
      for (auto& [id, l] : listeners) ids.push_back(id);
      for (auto id : ids) closeListener(id);
    });
    work.reset();
  }
  if (ioc.get_executor().running_in_this_thread()) {
    throw std::logic_error("stockade::proxy::Proxy::shutdown() called from the proxy's own thread");
  }
  std::call_once(joinOnce, [this] {
    if (thread.joinable()) thread.join();
  });
}

// ---- public API ---------------------------------------------------------------

Proxy::Proxy(ProxyOptions options) : impl_(std::make_shared<ProxyState>(options)) {
  if (options.limits.maxHeaderBytes < 1024)
    throw std::invalid_argument("ProxyLimits.maxHeaderBytes must be at least 1024");
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

Proxy::~Proxy() {
  if (impl_) impl_->shutdown();
}

void Proxy::shutdown() { impl_->shutdown(); }

void Proxy::setAuditSink(AuditSink sink) {
  auto s = std::make_shared<const AuditSink>(std::move(sink));
  std::lock_guard lock(impl_->mu);
  impl_->sink = std::move(s);
}

std::size_t Proxy::activeTunnels(const std::string& sandboxId) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->tunnels.find(sandboxId);
  return it == impl_->tunnels.end() ? 0 : it->second;
}

ListenerHandle Proxy::addListener(platform::UniqueFd listeningSocket, ListenerContext context) {
  if (impl_->stopped) throw std::logic_error("stockade::proxy::Proxy::addListener after shutdown()");
  if (!context.rules) throw std::invalid_argument("ListenerContext.rules: a rules provider is required");
  int fd = listeningSocket.get();
  int accepting = 0, type = 0;
  socklen_t len = sizeof accepting;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting)
    throw std::invalid_argument("addListener: fd " + std::to_string(fd) + " is not a listening socket");
  len = sizeof type;
  sockaddr_storage addr{};
  socklen_t addrLen = sizeof addr;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addrLen) != 0 ||
      (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
    throw std::invalid_argument("addListener: fd " + std::to_string(fd) + " is not a TCP socket");

  std::map<std::string, std::string> overrides;
  for (const auto& [name, address] : context.resolveOverrides) {
    auto h = normaliseHost(name);
    if (auto* why = std::get_if<std::string>(&h))
      throw std::invalid_argument("resolve override \"" + name + "\": " + *why);
    if (std::get<Host>(h).isAddress)
      throw std::invalid_argument("resolve override \"" + name + "\": the key must be a host name, not an address");
    auto ip = policy::canonicalIp(address);
    if (!ip) throw std::invalid_argument("resolve override \"" + name + "\" -> \"" + address + "\": not an IP address");
    overrides[std::get<Host>(h).text] = *ip;
  }
  context.resolveOverrides = std::move(overrides);

  auto state = std::make_shared<ListenerState>(impl_->ioc);
  {
    std::lock_guard lock(impl_->mu);
    state->id = impl_->nextListenerId++;
  }
  state->context = std::move(context);
  error_code ec;
  state->acceptor.assign(addr.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
  if (ec) throw std::invalid_argument("addListener: cannot use fd " + std::to_string(fd) + ": " + ec.message());
  listeningSocket.release();  // owned by the acceptor now
  impl_->runOnIo([&] {
    impl_->listeners.emplace(state->id, state);
    asio::co_spawn(impl_->ioc, acceptLoop(*impl_, state), asio::detached);
  });
  return ListenerHandle(std::weak_ptr<void>(impl_), state->id);
}

ListenerHandle::ListenerHandle(ListenerHandle&& other) noexcept
    : proxy_(std::move(other.proxy_)), id_(std::exchange(other.id_, 0)) {}

ListenerHandle& ListenerHandle::operator=(ListenerHandle&& other) noexcept {
  if (this != &other) {
    close();
    proxy_ = std::move(other.proxy_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

ListenerHandle::~ListenerHandle() { close(); }

void ListenerHandle::close() {
  std::uint64_t id = std::exchange(id_, 0);
  if (id == 0) return;
  auto locked = proxy_.lock();
  proxy_.reset();
  if (!locked) return;
  auto impl = std::static_pointer_cast<ProxyState>(locked);
  if (impl->stopped) return;  // shutdown closes everything
  impl->runOnIo([&] { impl->closeListener(id); });
}

}  // namespace stockade::proxy
