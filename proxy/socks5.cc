#include "proxy/socks5.h"

#include <arpa/inet.h>

#include <cstring>

namespace stockade::proxy::socks5 {

std::string_view replyName(Reply r) noexcept {
  switch (r) {
    case Reply::kSucceeded: return "succeeded";
    case Reply::kGeneralFailure: return "general SOCKS server failure";
    case Reply::kNotAllowedByRuleset: return "connection not allowed by ruleset";
    case Reply::kNetworkUnreachable: return "network unreachable";
    case Reply::kHostUnreachable: return "host unreachable";
    case Reply::kConnectionRefused: return "connection refused";
    case Reply::kTtlExpired: return "TTL expired";
    case Reply::kCommandNotSupported: return "command not supported";
    case Reply::kAddressTypeNotSupported: return "address type not supported";
  }
  return "unknown";
}

Status parseGreeting(std::string_view data, Greeting& out, std::string& error) {
  out = Greeting{};
  if (data.size() < 2) return Status::kNeedMore;
  if (static_cast<unsigned char>(data[0]) != kVersion) {
    error = "greeting version is not 5";
    return Status::kError;
  }
  std::size_t n = static_cast<unsigned char>(data[1]);
  if (n == 0) {
    error = "greeting offers no authentication methods";
    return Status::kError;
  }
  if (data.size() < 2 + n) return Status::kNeedMore;
  for (std::size_t i = 0; i < n; ++i) {
    if (data[2 + i] == 0x00) out.noAuthOffered = true;
  }
  out.length = 2 + n;
  return Status::kOk;
}

std::string methodReply(bool noAuth) { return std::string{char(kVersion), noAuth ? char(0x00) : char(0xFF)}; }

Status parseRequest(std::string_view data, Request& out, Reply& replyCode, std::string& error) {
  out = Request{};
  auto fail = [&](Reply r, const char* why) {
    replyCode = r;
    error = why;
    return Status::kError;
  };
  if (data.size() < 4) return Status::kNeedMore;
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(data[i]); };
  if (b(0) != kVersion) return fail(Reply::kGeneralFailure, "request version is not 5");
  if (b(2) != 0x00) return fail(Reply::kGeneralFailure, "request reserved byte is not 0");
  out.command = b(1);
  out.addressType = b(3);
  std::size_t addrEnd = 0;
  switch (out.addressType) {
    case 0x01: {
      addrEnd = 4 + 4;
      if (data.size() < addrEnd + 2) return Status::kNeedMore;
      char buf[INET_ADDRSTRLEN];
      in_addr a{};
      std::memcpy(&a, data.data() + 4, 4);
      out.host = inet_ntop(AF_INET, &a, buf, sizeof buf);
      break;
    }
    case 0x04: {
      addrEnd = 4 + 16;
      if (data.size() < addrEnd + 2) return Status::kNeedMore;
      char buf[INET6_ADDRSTRLEN];
      in6_addr a{};
      std::memcpy(&a, data.data() + 4, 16);
      out.host = inet_ntop(AF_INET6, &a, buf, sizeof buf);
      break;
    }
    case 0x03: {
      if (data.size() < 5) return Status::kNeedMore;
      std::size_t len = b(4);
      if (len == 0) return fail(Reply::kGeneralFailure, "request domain name is empty");
      addrEnd = 5 + len;
      if (data.size() < addrEnd + 2) return Status::kNeedMore;
      out.host = std::string(data.substr(5, len));
      break;
    }
    default:
      return fail(Reply::kAddressTypeNotSupported, "request address type is not IPv4, domain or IPv6");
  }
  out.port = static_cast<std::uint16_t>((b(addrEnd) << 8) | b(addrEnd + 1));
  out.length = addrEnd + 2;
  if (out.command == 0x02) return fail(Reply::kCommandNotSupported, "BIND is not supported");
  if (out.command == 0x03) return fail(Reply::kCommandNotSupported, "UDP ASSOCIATE is not supported");
  if (out.command != 0x01) return fail(Reply::kCommandNotSupported, "unknown command");
  return Status::kOk;
}

std::string reply(Reply code) {
  return std::string{char(kVersion), char(static_cast<unsigned char>(code)), 0, 0x01, 0, 0, 0, 0, 0, 0};
}

std::string socks4Rejected() { return std::string{0x00, char(0x5B), 0, 0, 0, 0, 0, 0}; }

}  // namespace stockade::proxy::socks5
