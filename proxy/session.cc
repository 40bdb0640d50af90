// Bytes are never lost: a tunnel direction that reads EOF first writes
// everything it has read to the other side, then half-closes that side
// (shutdown(SHUT_WR)) and lets the other direction run to its own EOF. A
// client connection is closed only after a lingering read drains what the
// client still sends, so the kernel never answers unread data with an RST
// that would destroy a response still in flight.

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include "proxy/session.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>

#include "proxy/socks5.h"
#include "proxy/splice.h"

namespace stockade::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Kind = Deadline::Kind;

namespace {

// Per-direction buffer. Large reads halve the syscalls of 64 KiB ones on
// loopback; the memory is allocated uninitialised on first use (IoBuffer).
constexpr std::size_t kIoChunk = 256 * 1024;
constexpr auto kLinger = std::chrono::milliseconds(1000);
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
// How long a connection refused at admission may take to show which
// protocol it speaks (its first bytes) before it is closed unanswered.
constexpr auto kRefusalWait = std::chrono::milliseconds(1000);
// Bodies with fewer bytes left than this after the head are copied: the
// copy costs less than a pipe's round trip.
constexpr std::uint64_t kSpliceMinBody = 64 * 1024;

auto tok(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

}  // namespace

Session::Session(ProxyState& proxy, std::shared_ptr<ListenerState> listener, std::uint64_t id, tcp::socket client,
                 Admission admission, SandboxCounters::Slot connection)
    : proxy_(proxy),
      limits_(proxy.options.limits),
      listener_(std::move(listener)),
      id_(id),
      admission_(admission),
      connectionSlot_(std::move(connection)),
      client_(std::move(client)),
      upstream_(proxy.ioc),
      lookupDone_(proxy.ioc),
      deadline_(proxy.ioc, limits_.idleTimeout),
      doneTimer_(proxy.ioc),
      inbuf_(std::max<std::size_t>(kIoChunk, limits_.maxHeaderBytes)),
      upbuf_(std::max<std::size_t>(kIoChunk, limits_.maxHeaderBytes)) {
  if (admission_ == Admission::kServe) {
    pending_ = true;
    ++listener_->pending;
  } else {
    ++listener_->refusing;
  }
}

Session::awaitable<void> Session::start(std::shared_ptr<Session> self) {
  try {
    if (self->admission_ == Admission::kServe) {
      co_await self->run();
    } else {
      co_await self->refuseUnread();
    }
  } catch (const std::exception& e) {
    spdlog::error("stockade proxy: session of sandbox {} failed: {}", self->listener_->context.sandboxId, e.what());
  }
  self->close();
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  error_code ec;
  deadline_.stop();
  proxy_.resolver.cancel(lookupId_);
  lookupDone_.cancel();
  client_.close(ec);
  closeUpstream();
  leavePending();
  if (admission_ != Admission::kServe) --listener_->refusing;
  connectionSlot_.reset();
  listener_->sessions.erase(id_);
}

void Session::leavePending() noexcept {
  if (!std::exchange(pending_, false)) return;
  --listener_->pending;
}

Session::awaitable<void> Session::watchdog(std::shared_ptr<Session> self) {
  co_await self->deadline_.watch([s = self.get()] {
    error_code ec;
    s->proxy_.resolver.cancel(s->lookupId_);
    s->lookupDone_.cancel();
    s->client_.cancel(ec);
    s->upstream_.cancel(ec);
  });
}

// ---- small I/O helpers -------------------------------------------------------

Session::awaitable<std::size_t> Session::readInto(tcp::socket& s, IoBuffer& b, error_code& ec, std::size_t max) {
  auto space = b.prepare(max);
  if (space.size() == 0) {
    ec = asio::error::no_buffer_space;
    co_return 0;
  }
  std::size_t n = co_await s.async_read_some(space, tok(ec));
  b.commit(n);
  co_return n;
}

Session::awaitable<bool> Session::writeAll(tcp::socket& s, std::string_view data, error_code& ec) {
  co_await asio::async_write(s, asio::buffer(data.data(), data.size()), tok(ec));
  co_return !ec;
}

ProxyEvent Session::event(Protocol p) const {
  ProxyEvent e;
  e.sandboxId = listener_->context.sandboxId;
  e.runId = listener_->context.runId;
  e.protocol = p;
  return e;
}

void Session::emit(ProxyEvent& e, Clock::time_point started) {
  e.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  proxy_.emit(e);
}

// Sends an HTTP error reply and audits it.
// `rule` goes to the audit log; the client reads `message` (the rule when empty).
Session::awaitable<void> Session::refuseHttp(ProxyEvent& e, Clock::time_point started, EventVerdict verdict,
                                             int status, std::string rule, std::string message) {
  e.verdict = verdict;
  e.status = status;
  e.rule = rule;
  emit(e, started);
  deadline_.arm(Kind::kIdle, limits_.idleTimeout);
  error_code ec;
  co_await writeAll(client_, httpError(status, message.empty() ? rule : message), ec);
}

// Shuts down our sending side, then reads and discards what the client
// still sends (bounded in time and bytes) before the socket is closed.
Session::awaitable<void> Session::lingeringClose() {
  error_code ec;
  if (!client_.is_open()) co_return;
  client_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  deadline_.arm(Kind::kLinger, kLinger);
  std::size_t drained = 0;
  IoBuffer sink(16 * 1024);
  while (drained < kMaxLingerBytes) {
    std::size_t n = co_await readInto(client_, sink, ec);
    sink.consume(n);
    drained += n;
    if (ec) break;
  }
  deadline_.disarm();
}

// ---- the connection ------------------------------------------------------------

Session::awaitable<void> Session::run() {
  started_ = Clock::now();
  error_code ec;
  client_.set_option(tcp::no_delay(true), ec);
  // TCP urgent data is an ordinary byte of the stream here (relay(), splice.cc).
  client_.set_option(tcp::socket::out_of_band_inline(true), ec);
  asio::co_spawn(proxy_.ioc, watchdog(shared_from_this()), asio::detached);

  deadline_.arm(Kind::kHeader, limits_.headerTimeout);
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
    deadline_.arm(Kind::kIdle, limits_.idleTimeout);
    co_await writeAll(client_, socks5::socks4Rejected(), ec);
    co_await lingeringClose();
  } else {
    co_await serveHttp();
  }
}

// A connection over a limit: its first bytes tell its protocol, and the
// refusal is sent in it without reading the request (HTTP: 503 naming the
// limit; SOCKS5: the method reply and a general failure at once).
Session::awaitable<void> Session::refuseUnread() {
  started_ = Clock::now();
  asio::co_spawn(proxy_.ioc, watchdog(shared_from_this()), asio::detached);
  const auto& sandbox = listener_->context.sandboxId;
  ErrorKind kind = ErrorKind::kConnectionLimit;
  std::string rule = "sandbox " + sandbox + " already has " + std::to_string(limits_.maxConnectionsPerSandbox) +
                     " proxy connections open (ProxyLimits.maxConnectionsPerSandbox)";
  if (admission_ == Admission::kRefusePendingLimit) {
    kind = ErrorKind::kPendingLimit;
    rule = "this listener of sandbox " + sandbox + " already has " + std::to_string(limits_.maxPendingPerListener) +
           " connections waiting for a request head (ProxyLimits.maxPendingPerListener)";
  }
  ProxyEvent e = event(Protocol::kUnknown);
  e.verdict = EventVerdict::kRefused;
  deadline_.arm(Kind::kHeader, std::min<std::chrono::milliseconds>(limits_.headerTimeout, kRefusalWait));
  error_code ec;
  co_await readInto(client_, inbuf_, ec);
  if (inbuf_.size() == 0) {
    e.rule = rule + "; the client sent nothing, closed unanswered";
    emit(e, started_);
    co_return;
  }
  std::string reply;
  auto first = static_cast<unsigned char>(inbuf_.view()[0]);
  if (first == socks5::kVersion) {
    e.protocol = Protocol::kSocks5;
    e.status = static_cast<int>(socks5::Reply::kGeneralFailure);
    reply = socks5RefusalUnread();
  } else if (first == socks5::kVersion4) {
    e.protocol = Protocol::kSocks4;
    e.status = 0x5B;
    reply = socks5::socks4Rejected();
  } else {
    e.protocol = Protocol::kHttp;
    e.status = 503;
    reply = httpError(503, kind, rule);
  }
  e.rule = rule;
  emit(e, started_);
  deadline_.arm(Kind::kIdle, std::min<std::chrono::milliseconds>(limits_.idleTimeout, kRefusalWait));
  if (co_await writeAll(client_, reply, ec)) co_await lingeringClose();
}

// ---- HTTP ------------------------------------------------------------------------

// Reads until `buf` starts with a whole message head. The head deadline
// starts at the first byte of the head.
Session::awaitable<Session::HeadResult> Session::readHead(tcp::socket& s, IoBuffer& buf, std::size_t& length,
                                                          bool armHeader) {
  bool started = false;
  while (true) {
    buf.consume(http::skipLeadingEmptyLines(buf.view()));
    if (buf.size() > 0 && !started) {
      started = true;
      if (armHeader) deadline_.arm(Kind::kHeader, limits_.headerTimeout);
    }
    if (auto len = http::headLength(buf.view())) {
      if (*len > limits_.maxHeaderBytes) co_return HeadResult::kTooLarge;
      length = *len;
      co_return HeadResult::kOk;
    }
    if (buf.size() >= limits_.maxHeaderBytes) co_return HeadResult::kTooLarge;
    error_code ec;
    co_await readInto(s, buf, ec);
    if (ec) co_return deadline_.fired() && started ? HeadResult::kTimeout : HeadResult::kClosed;
  }
}

Session::awaitable<void> Session::serveHttp() {
  bool firstRequest = true;
  while (!closed_) {
    Clock::time_point started = firstRequest ? started_ : Clock::now();
    ProxyEvent e = event(Protocol::kHttp);
    if (!firstRequest) deadline_.arm(Kind::kIdle, limits_.idleTimeout);
    std::size_t length = 0;
    HeadResult r = co_await readHead(client_, inbuf_, length, true);
    if (r == HeadResult::kClosed) co_return;
    if (r == HeadResult::kTimeout) {
      co_await refuseHttp(e, started, EventVerdict::kRefused, 408,
                          "the request head did not arrive within " + std::to_string(limits_.headerTimeout.count()) +
                              " ms");
      co_return co_await lingeringClose();
    }
    if (r == HeadResult::kTooLarge) {
      co_await refuseHttp(e, started, EventVerdict::kRefused, 431,
                          "the request head is larger than " + std::to_string(limits_.maxHeaderBytes) + " bytes");
      co_return co_await lingeringClose();
    }
    leavePending();
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

// Forwards one body delimited by `framing` from `from` (bytes already in
// `buf` first) to `to`, unchanged. Large stretches whose length is known
// (a Content-Length body, the data of a large chunk, a body that ends at
// EOF) move with relay() (splice(2) when a pipe is free) instead of
// through `buf`.
Session::awaitable<Session::BodyResult> Session::forwardBody(tcp::socket& from, IoBuffer& buf, tcp::socket& to,
                                                             http::Framing framing, std::uint64_t& counter) {
  error_code ec;
  auto relayBody = [&](std::uint64_t n) { return relay(from, to, buf, proxy_.pipes, deadline_, n, counter); };
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
          deadline_.touch();
        }
        if (remaining == 0) co_return BodyResult::kOk;
        if (remaining >= kSpliceMinBody) {
          switch (co_await relayBody(remaining)) {
            case RelayResult::kDone: co_return BodyResult::kOk;
            case RelayResult::kEof: co_return BodyResult::kSourceClosed;
            case RelayResult::kFailed: co_return BodyResult::kFailed;
          }
        }
        co_await readInto(from, buf, ec, static_cast<std::size_t>(std::min<std::uint64_t>(remaining, SIZE_MAX)));
        if (ec == asio::error::eof) co_return BodyResult::kSourceClosed;
        if (ec) co_return BodyResult::kFailed;
        deadline_.touch();
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
          deadline_.touch();
        }
        if (scanner.done()) co_return BodyResult::kOk;
        // The rest of a large chunk's data needs no scanning: relay it.
        if (std::uint64_t data = scanner.dataRemaining(); data >= kSpliceMinBody) {  // feed() took all of buf
          switch (co_await relayBody(data)) {
            case RelayResult::kDone: scanner.skipData(data); continue;
            case RelayResult::kEof: co_return BodyResult::kSourceClosed;
            case RelayResult::kFailed: co_return BodyResult::kFailed;
          }
        }
        co_await readInto(from, buf, ec);
        if (ec == asio::error::eof) co_return BodyResult::kSourceClosed;
        if (ec) co_return BodyResult::kFailed;
        deadline_.touch();
      }
    }
    case http::Framing::kUntilClose: {
      if (buf.size() > 0) {
        if (!co_await writeAll(to, buf.view(), ec)) co_return BodyResult::kFailed;
        counter += buf.size();
        buf.consume(buf.size());
        deadline_.touch();
      }
      co_return co_await relayBody(kUntilEof) == RelayResult::kEof ? BodyResult::kOk : BodyResult::kFailed;
    }
  }
  co_return BodyResult::kFailed;
}

// One absolute-form request and its response. Returns whether the client
// connection may carry another request.
Session::awaitable<bool> Session::forward(http::Request& request, Clock::time_point started) {
  ProxyEvent e = event(Protocol::kHttp);
  Target t = co_await resolveTarget(request.host, request.port, e);
  if (!t.ok) {
    co_await refuseHttp(e, started, t.eventVerdict, t.httpStatus, t.message, clientMessage(t, request.port));
    co_return false;
  }
  e.rule = t.message;
  // Reuse the upstream connection when it goes to an address just checked.
  bool reuse = false;
  if (upstream_.is_open() && upstreamPort_ == request.port) {
    for (const auto& a : t.addresses) reuse = reuse || a == upstreamAddress_;
    // An idle upstream connection must have nothing to say: EOF or stray
    // bytes mean it cannot carry this request.
    char probe;
    ssize_t n = ::recv(upstream_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) reuse = false;
  }
  if (!reuse) {
    ConnectResult c = co_await connectUpstream(t.addresses, request.port);
    if (!c.ok) {
      co_await refuseHttp(e, started, EventVerdict::kAllowed, c.httpStatus, c.message);
      co_return false;
    }
    upstreamPort_ = request.port;
  }
  e.address = upstreamAddress_;

  error_code ec;
  deadline_.arm(Kind::kIdle, limits_.idleTimeout);
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
  BodyResult body = co_await forwardBody(client_, inbuf_, upstream_, request.framing, e.bytesUp);
  if (body != BodyResult::kOk) {
    e.verdict = EventVerdict::kAllowed;
    e.status = 0;
    e.rule = t.message + "; the request body was " +
             (body == BodyResult::kMalformed ? "malformed" : deadline_.fired() ? "idle too long" : "cut short");
    emit(e, started);
    co_return false;
  }

  // Response heads: interim 1xx heads are forwarded and followed by more.
  http::ResponseHead response;
  while (true) {
    std::size_t length = 0;
    HeadResult r = co_await readHead(upstream_, upbuf_, length, false);
    if (r != HeadResult::kOk) {
      int status = deadline_.fired() ? 504 : 502;
      std::string what = r == HeadResult::kTooLarge ? "the upstream response head is too large"
                         : deadline_.fired()
                             ? "no upstream response within " + std::to_string(limits_.idleTimeout.count()) + " ms"
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
    deadline_.touch();
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
  BodyResult rb = co_await forwardBody(upstream_, upbuf_, client_, response.framing, e.bytesDown);
  if (rb != BodyResult::kOk) {
    e.rule = t.message + "; the response body was " +
             (rb == BodyResult::kMalformed ? "malformed" : deadline_.fired() ? "idle too long" : "cut short");
    emit(e, started);
    co_return false;  // the client sees the connection close before the body's end
  }
  emit(e, started);
  if (!response.keepAlive || upbuf_.size() > 0) closeUpstream();
  co_return response.framing.kind != http::Framing::kUntilClose;
}

// ---- targets and upstream ----------------------------------------------------------

// The pure planning of target.h around the one step that needs the world:
// asking DNS for an allowed name (under the connect deadline).
Session::awaitable<Target> Session::resolveTarget(std::string_view rawHost, std::uint16_t port, ProxyEvent& e) {
  e.port = port;
  Target t;
  std::shared_ptr<const DerivedRules::Network> rules;
  try {
    rules = listener_->context.rules();
  } catch (const std::exception& ex) {
    t = refusedTarget(rawHost, port, std::string("the rules provider failed: ") + ex.what());
  }
  if (t.message.empty()) {
    TargetPlan plan = planTarget(rules.get(), listener_->context.resolveOverrides, rawHost, port);
    if (plan.refused) {
      t = std::move(*plan.refused);
    } else if (!plan.needsDns) {
      t = checkAddresses(*rules, plan, plan.addresses);
    } else {
      deadline_.arm(Kind::kConnect, limits_.connectTimeout);
      auto answer = co_await lookup(plan.verdict.host.text, port);
      bool timeout = deadline_.fired();
      deadline_.disarm();
      const auto* addresses = answer ? std::get_if<std::vector<std::string>>(&*answer) : nullptr;
      if (!addresses || addresses->empty()) {
        const auto* why = answer ? std::get_if<std::string>(&*answer) : nullptr;
        t = resolutionFailed(plan, timeout, limits_.connectTimeout.count(),
                             why ? *why : answer ? "no addresses" : "the lookup was abandoned");
      } else {
        t = checkAddresses(*rules, plan, resolvedCandidates(*addresses));
      }
    }
  }
  e.host = t.host;
  if (!t.refusedAddress.empty()) e.address = t.refusedAddress;
  co_return t;
}

Session::awaitable<std::optional<LookupResult>> Session::lookup(const std::string& host, std::uint16_t port) {
  answer_.reset();
  const std::uint64_t seq = ++lookupSeq_;
  lookupDone_.expires_at(Clock::time_point::max());
  // The answer comes on a resolver thread: hand it to the io thread, where
  // only a session still waiting for this very lookup takes it.
  lookupId_ = proxy_.resolver.resolve(
      listener_->context.sandboxId, host, port,
      [weak = weak_from_this(), &ioc = proxy_.ioc, seq](LookupResult result) {
        asio::post(ioc, [weak, seq, result = std::move(result)]() mutable {
          auto self = weak.lock();
          if (!self || self->lookupSeq_ != seq) return;
          self->answer_ = std::move(result);
          self->lookupDone_.cancel();
        });
      });
  error_code ec;
  while (!answer_ && !deadline_.fired() && !closed_) co_await lookupDone_.async_wait(tok(ec));
  if (!answer_) proxy_.resolver.cancel(lookupId_);
  lookupId_ = 0;
  co_return std::move(answer_);
}

void Session::closeUpstream() {
  error_code ec;
  upstream_.close(ec);
  upbuf_.consume(upbuf_.size());
  upstreamAddress_.clear();
  tunnelSlot_.reset();
}

// Connects upstream_ to the first address that accepts, holding one of the
// sandbox's tunnel slots while connected.
Session::awaitable<Session::ConnectResult> Session::connectUpstream(const std::vector<std::string>& addresses,
                                                                     std::uint16_t port) {
  ConnectResult r;
  closeUpstream();
  tunnelSlot_ = proxy_.counters.tunnel(listener_->context.sandboxId, limits_.maxTunnelsPerSandbox);
  if (!tunnelSlot_) {
    r.httpStatus = 503;
    r.socksReply = socks5::Reply::kGeneralFailure;
    r.message = "sandbox " + listener_->context.sandboxId + " already has " +
                std::to_string(limits_.maxTunnelsPerSandbox) +
                " upstream connections open (ProxyLimits.maxTunnelsPerSandbox)";
    co_return r;
  }
  for (const auto& address : addresses) {
    error_code ec;
    tcp::endpoint ep(asio::ip::make_address(address, ec), port);
    if (ec) {
      r.message = "address \"" + printable(address) + "\" cannot be connected to";
      continue;
    }
    upstream_ = tcp::socket(proxy_.ioc);
    deadline_.arm(Kind::kConnect, limits_.connectTimeout);
    co_await upstream_.async_connect(ep, tok(ec));
    bool timeout = deadline_.fired();
    deadline_.disarm();
    if (closed_) {
      r.message = "the listener was closed";
      co_return r;
    }
    std::string where = address + " port " + std::to_string(port);
    if (!ec) {
      upstream_.set_option(tcp::no_delay(true), ec);
      upstream_.set_option(tcp::socket::out_of_band_inline(true), ec);
      upstreamAddress_ = address;
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
  tunnelSlot_.reset();
  co_return r;
}

// ---- CONNECT and SOCKS5 tunnels ------------------------------------------------------

Session::awaitable<void> Session::serveConnect(http::Request& request, Clock::time_point started) {
  ProxyEvent e = event(Protocol::kConnect);
  Target t = co_await resolveTarget(request.host, request.port, e);
  if (!t.ok) {
    co_await refuseHttp(e, started, t.eventVerdict, t.httpStatus, t.message, clientMessage(t, request.port));
    co_return co_await lingeringClose();
  }
  ConnectResult c = co_await connectUpstream(t.addresses, request.port);
  if (!c.ok) {
    co_await refuseHttp(e, started, EventVerdict::kAllowed, c.httpStatus, c.message);
    co_return co_await lingeringClose();
  }
  e.address = upstreamAddress_;
  e.rule = t.message;
  e.verdict = EventVerdict::kAllowed;
  e.status = 200;
  error_code ec;
  deadline_.arm(Kind::kIdle, limits_.idleTimeout);
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (co_await writeAll(client_, kEstablished, ec)) co_await tunnel(e);
  emit(e, started);
}

Session::awaitable<void> Session::serveSocks5() {
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
  deadline_.arm(Kind::kHeader, limits_.headerTimeout);
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
      if (deadline_.fired()) {
        e.status = static_cast<int>(socks5::Reply::kTtlExpired);
        e.rule = "the SOCKS5 request did not arrive within " + std::to_string(limits_.headerTimeout.count()) + " ms";
        emit(e, started_);
        deadline_.arm(Kind::kIdle, limits_.idleTimeout);
        co_await writeAll(client_, socks5::reply(socks5::Reply::kTtlExpired), ec);
      }
      co_return;
    }
  }
  inbuf_.consume(request.length);
  deadline_.disarm();
  leavePending();

  Target t = co_await resolveTarget(request.host, request.port, e);
  auto refuse = [&](EventVerdict v, socks5::Reply r, const std::string& why) -> awaitable<void> {
    e.verdict = v;
    e.status = static_cast<int>(r);
    e.rule = why;
    emit(e, started_);
    deadline_.arm(Kind::kIdle, limits_.idleTimeout);
    error_code wec;
    co_await writeAll(client_, socks5::reply(r), wec);
    co_await lingeringClose();
  };
  if (!t.ok) co_return co_await refuse(t.eventVerdict, t.socksReply, t.message);
  ConnectResult c = co_await connectUpstream(t.addresses, request.port);
  if (!c.ok) co_return co_await refuse(EventVerdict::kAllowed, c.socksReply, c.message);
  e.address = upstreamAddress_;
  e.rule = t.message;
  e.verdict = EventVerdict::kAllowed;
  e.status = static_cast<int>(socks5::Reply::kSucceeded);
  deadline_.arm(Kind::kIdle, limits_.idleTimeout);
  if (co_await writeAll(client_, socks5::reply(socks5::Reply::kSucceeded), ec)) co_await tunnel(e);
  emit(e, started_);
}

// Pipes bytes both ways until both directions reached EOF, or one failed.
Session::awaitable<void> Session::tunnel(ProxyEvent& e) {
  deadline_.arm(Kind::kIdle, limits_.idleTimeout);
  pumpsRunning_ = 2;
  doneTimer_.expires_at(Clock::time_point::max());
  auto self = shared_from_this();
  asio::co_spawn(proxy_.ioc, tunnelDirection(self, upstream_, client_, upbuf_, &e.bytesDown),
                 [self](std::exception_ptr) {
                   if (--self->pumpsRunning_ == 0) self->doneTimer_.cancel();
                 });
  co_await tunnelDirection(self, client_, upstream_, inbuf_, &e.bytesUp);
  if (--pumpsRunning_ > 0) {
    while (pumpsRunning_ > 0) {
      error_code ec;
      co_await doneTimer_.async_wait(tok(ec));
    }
  }
  if (deadline_.fired()) e.rule += "; closed after " + std::to_string(limits_.idleTimeout.count()) + " ms idle";
  closeUpstream();
}

// One direction of a tunnel. Bytes already in `buf` (read with the request
// head) are written first, then the rest is relayed. On EOF everything read
// has been written before `to` is half-closed; on any error both sockets are
// closed, which ends the other direction too.
Session::awaitable<void> Session::tunnelDirection(std::shared_ptr<Session> self, tcp::socket& from, tcp::socket& to,
                                                  IoBuffer& buf, std::uint64_t* counter) {
  error_code ec;
  bool ok = true;
  if (buf.size() > 0) {
    ok = co_await self->writeAll(to, buf.view(), ec);
    *counter += buf.size();
    buf.consume(buf.size());
  }
  if (ok && co_await relay(from, to, buf, self->proxy_.pipes, self->deadline_, kUntilEof, *counter) ==
                RelayResult::kEof) {
    to.shutdown(tcp::socket::shutdown_send, ec);
    co_return;
  }
  error_code ignore;
  from.close(ignore);
  to.close(ignore);
}

}  // namespace stockade::proxy
