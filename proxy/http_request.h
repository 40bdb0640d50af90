// A proxy request head: absolute-form (`GET http://host:port/path HTTP/1.1`)
// or CONNECT (`CONNECT host:port HTTP/1.1`), parsed strictly, and its
// rewriting to the origin-form head sent upstream. Pure; never throws on
// untrusted input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http_message.h"

namespace stockade::proxy::http {

struct Request {
  enum class Kind { kAbsolute, kConnect };
  Kind kind = Kind::kAbsolute;
  std::string method;
  int minorVersion = 1;      // HTTP/1.x
  std::string host;          // as written in the URI/authority (brackets kept, userinfo dropped)
  std::uint16_t port = 0;    // explicit, or 80 for http://
  std::string originForm;    // kAbsolute: "/path?query" sent upstream
  std::vector<Field> fields;
  Framing framing;           // request body
  bool keepAlive = true;     // the client wants the connection kept open
  bool expectContinue = false;
};

// Parses a complete request head (as measured by headLength()). Refusals:
//   400  malformed line or fields, origin-form target (this is a proxy),
//        Host header missing (HTTP/1.1), repeated or disagreeing with the URI,
//        userinfo in a Host header or CONNECT target;
//   501  a scheme other than http:// (use CONNECT for https), transfer codings;
//   505  a version other than HTTP/1.0 or HTTP/1.1.
bool parseRequest(std::string_view head, Request& out, Refusal& why);

// Splits an authority "host", "host:port", "[v6]:port" (after any userinfo was
// removed). `defaultPort` 0 means the port is required.
bool splitAuthority(std::string_view authority, std::uint16_t defaultPort, std::string& host, std::uint16_t& port);

// The head sent upstream: origin-form request line, the client's fields minus
// hop-by-hop ones (Connection and the fields it names, Proxy-Connection,
// Keep-Alive, Proxy-Authorization, TE, Trailer, Upgrade, and Expect, which the
// proxy answers itself). Body framing fields are kept: bodies pass unchanged.
std::string originHead(const Request& request);

}  // namespace stockade::proxy::http
