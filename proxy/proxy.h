// The egress proxy: one object serving many sandboxes. Each sandbox hands it
// listening sockets (created inside the sandbox's network namespace); every
// connection accepted on a listener belongs to that listener's sandbox and
// run, so no credentials are needed. One port serves both protocols: a first
// byte 0x05 is SOCKS5, 0x04 is SOCKS4 (refused), anything else is HTTP
// (absolute-form requests and CONNECT).
//
// No Asio or Beast type appears here (pimpl): including this header is cheap.
//
// Threads: the proxy runs one io thread of its own. Rules providers and the
// audit sink are called on that thread; they must be thread-safe with respect
// to the caller's own threads and must not block. Every public member function
// is thread-safe, and may be called from the audit sink.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "platform/unique_fd.h"
#include "stockade/rules.h"

namespace stockade::proxy {

// Returns the sandbox's live network rules. Called for every request (every
// HTTP request on a keep-alive connection, every CONNECT and SOCKS request),
// so a narrow() takes effect for children already running. nullptr denies
// everything.
using RulesProvider = std::function<std::shared_ptr<const DerivedRules::Network>()>;

struct ListenerContext {
  std::string sandboxId;
  std::string runId;
  RulesProvider rules;
  // `stockade run --resolve HOST=ADDR`: HOST (a name) resolves to ADDR (an IP
  // literal) instead of asking DNS. Overrides are trusted operator
  // configuration: their addresses count as explicitly allowed, so a name the
  // policy allows may be pointed at 127.0.0.1 (see decision.h,
  // AddressSource::kOperatorOverride). They never allow a name the policy
  // does not allow.
  std::map<std::string, std::string> resolveOverrides;
};

struct ProxyLimits {
  // A request head (or SOCKS greeting + request) larger than this is refused:
  // HTTP 431.
  std::size_t maxHeaderBytes = 64 * 1024;
  // Once the first byte of a request head arrived, the whole head must arrive
  // within this time: HTTP 408 (slowloris defence).
  std::chrono::milliseconds headerTimeout{30'000};
  // Resolving and connecting upstream: HTTP 504, SOCKS5 "host unreachable".
  std::chrono::milliseconds connectTimeout{10'000};
  // No byte in either direction on a tunnel, an HTTP exchange or an idle
  // keep-alive connection: the connection is closed (HTTP 408 if a request
  // head was incomplete, 504 while waiting for an upstream response).
  std::chrono::milliseconds idleTimeout{300'000};
  // Client connections open at once for one sandbox, across all its
  // listeners: each costs the supervisor a descriptor (in the library, one of
  // the host application's), two with its upstream connection. A connection
  // beyond it is answered HTTP 503 "X-Proxy-Error: connection-limit" or, to
  // SOCKS5, the method reply and a general failure, without its request
  // being read, and audited (verdict refused).
  std::size_t maxConnectionsPerSandbox = 256;
  // Connections of one listener still waiting for their first request head
  // (HTTP head, SOCKS5 greeting and request): idle and slow clients cannot
  // hold more of the sandbox's connections than this. Beyond it: HTTP 503
  // "X-Proxy-Error: pending-limit" / SOCKS5 general failure, audited. At
  // most as many refusals are answered at once per listener; a connection
  // beyond those is closed unanswered (and audited).
  std::size_t maxPendingPerListener = 64;
  // Upstream connections open at once for one sandbox (CONNECT and SOCKS
  // tunnels and HTTP upstream connections): HTTP 503 "X-Proxy-Error:
  // tunnel-limit", SOCKS5 general failure.
  std::size_t maxTunnelsPerSandbox = 256;
  // Pipe capacity the proxy holds at once, across all sandboxes, to splice(2)
  // bytes through. A pipe is held only while bytes are in it; a transfer
  // that finds none free copies through user space instead. Pipe pages count
  // against the user's fs.pipe-user-pages-soft quota (16384 pages, 64 MiB,
  // by default), which the host application and the sandboxed children
  // share: the default takes at most a quarter of it.
  std::size_t splicePipeBytes = 16 * 1024 * 1024;
};

struct ProxyOptions {
  ProxyLimits limits;
};

enum class Protocol { kHttp, kConnect, kSocks5, kSocks4, kUnknown };
std::string_view protocolName(Protocol p) noexcept;  // "http", "connect", "socks5", "socks4", "unknown"

enum class EventVerdict {
  kAllowed,  // the policy allowed it and the exchange ran (it may still have failed upstream: see status)
  kDenied,   // the policy refused it
  kRefused,  // refused before a decision: malformed request, limit, timeout
};
std::string_view eventVerdictName(EventVerdict v) noexcept;  // "allowed", "denied", "refused"

// One audit event per decision (per HTTP request, per CONNECT, per SOCKS
// request), and one per connection refused before any decision could be made.
struct ProxyEvent {
  std::string sandboxId;
  std::string runId;
  Protocol protocol = Protocol::kUnknown;
  std::string host;     // normalised host, or the client's text (escaped) when it was invalid
  std::uint16_t port = 0;
  std::string address;  // the address connected to; empty when none
  EventVerdict verdict = EventVerdict::kRefused;
  std::string rule;     // the rule that decided, or why it was refused / failed
  int status = 0;       // HTTP status sent to the client, or the SOCKS5 reply code
  std::uint64_t bytesUp = 0;    // client -> upstream, as forwarded
  std::uint64_t bytesDown = 0;  // upstream -> client, as forwarded
  std::chrono::microseconds duration{0};
};
using AuditSink = std::function<void(const ProxyEvent&)>;

class Proxy;
namespace detail {
struct ProxyState;  // defined in proxy_state.h
}

// Owns one listener. Destroying it (or close()) closes the listening socket
// and every connection accepted on it, and returns once they are closed.
// Harmless if it outlives its Proxy.
class ListenerHandle {
 public:
  ListenerHandle() = default;
  ListenerHandle(ListenerHandle&&) noexcept;
  ListenerHandle& operator=(ListenerHandle&&) noexcept;
  ListenerHandle(const ListenerHandle&) = delete;
  ListenerHandle& operator=(const ListenerHandle&) = delete;
  ~ListenerHandle();

  void close();
  bool active() const noexcept { return id_ != 0; }

 private:
  friend class Proxy;
  ListenerHandle(std::weak_ptr<void> proxy, std::uint64_t id) : proxy_(std::move(proxy)), id_(id) {}
  std::weak_ptr<void> proxy_;
  std::uint64_t id_ = 0;
};

class Proxy {
 public:
  explicit Proxy(ProxyOptions options = {});
  // shutdown().
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts accepting on `listeningSocket` (a bound, listening TCP socket,
  // IPv4 or IPv6) for one sandbox run. Throws std::invalid_argument when the
  // socket is not a listening TCP socket, the context has no rules provider,
  // or a resolve override is not NAME -> IP literal; std::logic_error after
  // shutdown().
  ListenerHandle addListener(platform::UniqueFd listeningSocket, ListenerContext context);

  // Replaces the audit sink (none by default: events are dropped).
  void setAuditSink(AuditSink sink);

  // Upstream connections currently open for `sandboxId`.
  std::size_t activeTunnels(const std::string& sandboxId) const;
  // Client connections currently open for `sandboxId` (not counting those
  // being answered a refusal).
  std::size_t activeConnections(const std::string& sandboxId) const;

  // Closes every listener and connection and joins the io thread. Idempotent.
  // Must not be called from the audit sink or a rules provider.
  void shutdown();

 private:
  std::shared_ptr<detail::ProxyState> impl_;
};

}  // namespace stockade::proxy
