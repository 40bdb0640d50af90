#include "proxy/replies.h"

#include "proxy/socks5.h"

namespace stockade::proxy {

std::string_view errorKindName(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::kBlockedByPolicy: return "blocked-by-policy";
    case ErrorKind::kBadRequest: return "bad-request";
    case ErrorKind::kRequestTimeout: return "request-timeout";
    case ErrorKind::kHeaderTooLarge: return "header-too-large";
    case ErrorKind::kNotImplemented: return "not-implemented";
    case ErrorKind::kBadGateway: return "bad-gateway";
    case ErrorKind::kTunnelLimit: return "tunnel-limit";
    case ErrorKind::kConnectionLimit: return "connection-limit";
    case ErrorKind::kPendingLimit: return "pending-limit";
    case ErrorKind::kGatewayTimeout: return "gateway-timeout";
    case ErrorKind::kVersionNotSupported: return "version-not-supported";
  }
  return "bad-request";
}

ErrorKind errorKindForStatus(int status) noexcept {
  switch (status) {
    case 403: return ErrorKind::kBlockedByPolicy;
    case 408: return ErrorKind::kRequestTimeout;
    case 431: return ErrorKind::kHeaderTooLarge;
    case 501: return ErrorKind::kNotImplemented;
    case 502: return ErrorKind::kBadGateway;
    case 503: return ErrorKind::kTunnelLimit;
    case 504: return ErrorKind::kGatewayTimeout;
    case 505: return ErrorKind::kVersionNotSupported;
  }
  return ErrorKind::kBadRequest;
}

std::string_view reasonPhrase(int status) noexcept {
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

std::string httpError(int status, ErrorKind kind, std::string_view message) {
  std::string body = "stockade proxy: " + std::string(message) + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reasonPhrase(status)) +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\nX-Proxy-Error: " + std::string(errorKindName(kind)) + "\r\n\r\n";
  return out + body;
}

std::string socks5RefusalUnread() {
  return socks5::methodReply(true) + socks5::reply(socks5::Reply::kGeneralFailure);
}

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

}  // namespace stockade::proxy
