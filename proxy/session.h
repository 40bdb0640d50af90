// One client connection, from accept to close: reads the first bytes to
// tell SOCKS5 from HTTP, parses requests with the pure parsers, plans the
// target (target.h), connects upstream and moves bytes (splice.h) under one
// deadline at a time (deadline.h). A connection admitted as a refusal
// (admission.h) reads only its first bytes and answers the refusal in that
// protocol. Internal to the proxy (Asio types); io thread only.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/admission.h"
#include "proxy/deadline.h"
#include "proxy/http_request.h"
#include "proxy/io_buffer.h"
#include "proxy/proxy_state.h"
#include "proxy/replies.h"
#include "proxy/resolver.h"
#include "proxy/target.h"

namespace stockade::proxy {

class Session : public std::enable_shared_from_this<Session> {
 public:
  using tcp = boost::asio::ip::tcp;
  template <class T>
  using awaitable = boost::asio::awaitable<T>;
  using Clock = std::chrono::steady_clock;

  // `admission` is kServe (with the sandbox's connection slot) or one of the
  // refusals; the listener counts the session as pending or refusing until
  // it closes (or, when served, until its first request head is read).
  Session(ProxyState& proxy, std::shared_ptr<ListenerState> listener, std::uint64_t id, tcp::socket client,
          Admission admission, SandboxCounters::Slot connection);

  // Serves the connection, then close().
  static awaitable<void> start(std::shared_ptr<Session> self);
  // Cancels every operation and closes both sockets. Idempotent.
  void close();

 private:
  enum class HeadResult { kOk, kClosed, kTooLarge, kTimeout };
  enum class BodyResult { kOk, kSourceClosed, kMalformed, kFailed };
  struct ConnectResult {
    bool ok = false;
    int httpStatus = 502;
    socks5::Reply socksReply = socks5::Reply::kGeneralFailure;
    std::string message;
  };

  static awaitable<void> watchdog(std::shared_ptr<Session> self);
  awaitable<void> run();
  awaitable<void> refuseUnread();
  void leavePending() noexcept;

  // ---- HTTP ----
  awaitable<HeadResult> readHead(tcp::socket& s, IoBuffer& buf, std::size_t& length, bool armHeader);
  awaitable<void> serveHttp();
  awaitable<bool> forward(http::Request& request, Clock::time_point started);
  awaitable<BodyResult> forwardBody(tcp::socket& from, IoBuffer& buf, tcp::socket& to, http::Framing framing,
                                    std::uint64_t& counter);
  // ---- tunnels ----
  awaitable<void> serveConnect(http::Request& request, Clock::time_point started);
  awaitable<void> serveSocks5();
  awaitable<void> tunnel(ProxyEvent& e);
  static awaitable<void> tunnelDirection(std::shared_ptr<Session> self, tcp::socket& from, tcp::socket& to,
                                         IoBuffer& buf, std::uint64_t* counter);
  // ---- targets and upstream ----
  awaitable<Target> resolveTarget(std::string_view rawHost, std::uint16_t port, ProxyEvent& e);
  // The proxy's Resolver's answer for host; nullopt when the deadline fired
  // or the session closed first.
  awaitable<std::optional<LookupResult>> lookup(const std::string& host, std::uint16_t port);
  awaitable<ConnectResult> connectUpstream(const std::vector<std::string>& addresses, std::uint16_t port);
  void closeUpstream();
  // ---- replies and I/O helpers ----
  ProxyEvent event(Protocol p) const;
  void emit(ProxyEvent& e, Clock::time_point started);
  awaitable<void> refuseHttp(ProxyEvent& e, Clock::time_point started, EventVerdict verdict, int status,
                             std::string rule, std::string message = {});
  awaitable<void> lingeringClose();
  awaitable<std::size_t> readInto(tcp::socket& s, IoBuffer& b, boost::system::error_code& ec,
                                  std::size_t max = SIZE_MAX);
  awaitable<bool> writeAll(tcp::socket& s, std::string_view data, boost::system::error_code& ec);

  ProxyState& proxy_;
  const ProxyLimits& limits_;
  std::shared_ptr<ListenerState> listener_;
  std::uint64_t id_;
  Admission admission_;
  SandboxCounters::Slot connectionSlot_;
  std::optional<SandboxCounters::Slot> tunnelSlot_;
  bool pending_ = false;
  tcp::socket client_;
  tcp::socket upstream_;
  std::uint64_t lookupId_ = 0;   // the Resolver's id of the lookup in flight (0: none)
  std::uint64_t lookupSeq_ = 0;  // which lookup of this session an answer belongs to
  std::optional<LookupResult> answer_;
  boost::asio::steady_timer lookupDone_;  // cancelled when the answer arrives
  Deadline deadline_;
  boost::asio::steady_timer doneTimer_;
  IoBuffer inbuf_;  // client -> upstream
  IoBuffer upbuf_;  // upstream -> client
  std::string upstreamAddress_;
  std::uint16_t upstreamPort_ = 0;
  bool closed_ = false;
  int pumpsRunning_ = 0;
  Clock::time_point started_{};
};

}  // namespace stockade::proxy
