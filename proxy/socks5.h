// SOCKS5 (RFC 1928) greeting and request parsing, and reply encoding. Only
// the no-authentication method and the CONNECT command are served; BIND and
// UDP ASSOCIATE are refused with "command not supported". SOCKS4/4a are
// refused. Pure; never throws on untrusted input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stockade::proxy::socks5 {

inline constexpr unsigned char kVersion = 0x05;
inline constexpr unsigned char kVersion4 = 0x04;

// Reply codes (RFC 1928 section 6).
enum class Reply : unsigned char {
  kSucceeded = 0x00,
  kGeneralFailure = 0x01,
  kNotAllowedByRuleset = 0x02,
  kNetworkUnreachable = 0x03,
  kHostUnreachable = 0x04,
  kConnectionRefused = 0x05,
  kTtlExpired = 0x06,
  kCommandNotSupported = 0x07,
  kAddressTypeNotSupported = 0x08,
};
std::string_view replyName(Reply r) noexcept;  // "not allowed by ruleset", ...

enum class Status { kNeedMore, kOk, kError };

// Greeting: VER NMETHODS METHODS...
struct Greeting {
  bool noAuthOffered = false;
  std::size_t length = 0;  // bytes consumed
};
// kError: wrong version (error says which). The caller answers a greeting
// without no-auth with methodReply(false) and closes.
Status parseGreeting(std::string_view data, Greeting& out, std::string& error);
std::string methodReply(bool noAuth);  // 05 00, or 05 FF (no acceptable methods)

// Request: VER CMD RSV ATYP DST.ADDR DST.PORT
struct Request {
  unsigned char command = 0;  // 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE
  unsigned char addressType = 0;  // 1 IPv4, 3 domain name, 4 IPv6
  std::string host;  // dotted IPv4, IPv6 text (no brackets), or the domain as sent
  std::uint16_t port = 0;
  std::size_t length = 0;  // bytes consumed
};
// kError: `reply` is the code to send before closing (general failure for a
// malformed request, command not supported, address type not supported),
// `error` says what was wrong.
Status parseRequest(std::string_view data, Request& out, Reply& reply, std::string& error);

// A reply with BND.ADDR 0.0.0.0:0 (the bound address is not disclosed).
std::string reply(Reply code);

// The SOCKS4 "request rejected or failed" reply (VN=0, CD=91), sent before
// closing a SOCKS4/4a client.
std::string socks4Rejected();

}  // namespace stockade::proxy::socks5
