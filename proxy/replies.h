// What the proxy tells a client it refuses: the HTTP error reply with its
// X-Proxy-Error kind, the SOCKS replies sent before a request was read, and
// how client-chosen text is escaped before it reaches a reply or the audit
// log. Pure.
#pragma once

#include <string>
#include <string_view>

namespace stockade::proxy {

// The X-Proxy-Error value of a refusal. Each names one cause a client (or its
// operator) can act on.
enum class ErrorKind {
  kBlockedByPolicy,      // 403: the policy denied the destination
  kBadRequest,           // 400
  kRequestTimeout,       // 408: the request head did not arrive in time
  kHeaderTooLarge,       // 431
  kNotImplemented,       // 501
  kBadGateway,           // 502: resolving or connecting upstream failed
  kTunnelLimit,          // 503: ProxyLimits.maxTunnelsPerSandbox
  kConnectionLimit,      // 503: ProxyLimits.maxConnectionsPerSandbox
  kPendingLimit,         // 503: ProxyLimits.maxPendingPerListener
  kGatewayTimeout,       // 504
  kVersionNotSupported,  // 505
};
// "blocked-by-policy", "tunnel-limit", "connection-limit", ...
std::string_view errorKindName(ErrorKind k) noexcept;
// The kind a status means when nothing more specific is known (503: tunnel-limit).
ErrorKind errorKindForStatus(int status) noexcept;
std::string_view reasonPhrase(int status) noexcept;  // "Forbidden", "Service Unavailable", ...

// A whole HTTP/1.1 error response that closes the connection; the body is
// "stockade proxy: MESSAGE".
std::string httpError(int status, ErrorKind kind, std::string_view message);
inline std::string httpError(int status, std::string_view message) {
  return httpError(status, errorKindForStatus(status), message);
}

// What a SOCKS5 client is sent when the proxy refuses it before reading its
// request: the no-authentication method reply followed at once by a "general
// failure" reply, so a client that sends its request next reads the failure
// as the answer to it.
std::string socks5RefusalUnread();

// Client text for logs and error bodies: printable ASCII kept (at most 256
// bytes, then "..."), every other byte, '\\' and '"' escaped as \xHH.
std::string printable(std::string_view s);

}  // namespace stockade::proxy
