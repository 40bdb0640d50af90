#include "proxy/http_request.h"

#include <algorithm>
#include <charconv>
#include <variant>

#include "proxy/decision.h"

namespace stockade::proxy::http {

namespace {

bool refuse(Refusal& why, int status, std::string message) {
  why.status = status;
  why.message = std::move(message);
  return false;
}

bool parsePort(std::string_view text, std::uint16_t& port) {
  if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  unsigned v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  if (v == 0 || v > 65535) return false;
  port = static_cast<std::uint16_t>(v);
  return true;
}

// Characters allowed in an authority (RFC 3986 unreserved, sub-delims, ":",
// "[", "]", "@", "%"). Anything else ("\\", spaces, controls) is refused so
// that no parser downstream can read a different host out of it.
bool authorityChars(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) return false;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
    if (c >= '0' && c <= '9') return true;
    return std::string_view("-._~!$&'()*+,;=:[]@%").find(ch) != std::string_view::npos;
  });
}

bool isHopByHop(std::string_view name, const std::vector<Field>& fields) {
  static constexpr std::string_view kHop[] = {"connection", "proxy-connection", "keep-alive", "proxy-authorization",
                                              "proxy-authenticate", "te", "trailer", "upgrade", "expect"};
  for (auto h : kHop) {
    if (iequals(name, h)) return true;
  }
  return listContains(fields, "connection", name);
}

}  // namespace

bool splitAuthority(std::string_view authority, std::uint16_t defaultPort, std::string& host, std::uint16_t& port) {
  if (authority.empty() || !authorityChars(authority) || authority.find('@') != std::string_view::npos) return false;
  std::string_view h = authority;
  std::string_view portText;
  bool hasPort = false;
  if (h.front() == '[') {
    auto close = h.find(']');
    if (close == std::string_view::npos) return false;
    std::string_view after = h.substr(close + 1);
    h = h.substr(0, close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return false;
      portText = after.substr(1);
      hasPort = true;
    }
  } else {
    auto colon = h.find(':');
    if (colon != std::string_view::npos) {
      if (h.find(':', colon + 1) != std::string_view::npos) return false;  // bare IPv6 needs brackets
      portText = h.substr(colon + 1);
      h = h.substr(0, colon);
      hasPort = true;
    }
  }
  if (h.empty()) return false;
  if (hasPort) {
    if (!parsePort(portText, port)) return false;
  } else {
    if (defaultPort == 0) return false;
    port = defaultPort;
  }
  host = std::string(h);
  return true;
}

bool parseRequest(std::string_view head, Request& out, Refusal& why) {
  out = Request{};
  Head parsed;
  if (!parseHead(head, parsed, why)) return false;
  std::string_view line = parsed.startLine;
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(why, 400, "the request line is not \"METHOD target HTTP/1.x\"");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!isToken(method)) return refuse(why, 400, "the request method is not a token");
  if (target.empty()) return refuse(why, 400, "the request target is empty");
  if (version == "HTTP/1.1") out.minorVersion = 1;
  else if (version == "HTTP/1.0") out.minorVersion = 0;
  else return refuse(why, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
  out.method = std::string(method);
  out.fields = std::move(parsed.fields);

  auto hosts = fieldValues(out.fields, "host");
  if (hosts.size() > 1) return refuse(why, 400, "the request has more than one Host header");

  if (method == "CONNECT") {
    out.kind = Request::Kind::kConnect;
    if (!splitAuthority(target, 0, out.host, out.port))
      return refuse(why, 400, "the CONNECT target is not \"host:port\"");
    out.keepAlive = false;
    return true;
  }

  out.kind = Request::Kind::kAbsolute;
  if (target.front() == '/' || target == "*")
    return refuse(why, 400, "this is a proxy: send an absolute-form request (http://host/path) or CONNECT");
  auto schemeEnd = target.find("://");
  if (schemeEnd == std::string_view::npos) return refuse(why, 400, "the request target is not an absolute http:// URI");
  if (!iequals(target.substr(0, schemeEnd), "http"))
    return refuse(why, 501, "only http:// URIs can be forwarded; use CONNECT for https and other protocols");
  std::string_view rest = target.substr(schemeEnd + 3);
  auto pathStart = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, pathStart);
  std::string_view path = pathStart == std::string_view::npos ? std::string_view() : rest.substr(pathStart);
  // Userinfo is ignored for matching and never sent upstream in the URI. The
  // whole authority, userinfo included, must be plain RFC 3986 characters, so
  // that no parser reads another host out of it ("a.com\\@b.com").
  if (!authorityChars(authority)) return refuse(why, 400, "the request URI authority contains characters outside RFC 3986");
  if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  if (!splitAuthority(authority, 80, out.host, out.port))
    return refuse(why, 400, "the request URI has a malformed authority (host[:port])");
  if (auto hash = path.find('#'); hash != std::string_view::npos) path = path.substr(0, hash);
  if (path.empty()) out.originForm = "/";
  else if (path.front() == '?') out.originForm = "/" + std::string(path);
  else out.originForm = std::string(path);

  // The Host header must name the same destination as the URI.
  if (hosts.empty()) {
    if (out.minorVersion == 1) return refuse(why, 400, "an HTTP/1.1 request must carry a Host header");
    out.fields.push_back(Field{"Host", std::string(authority)});
  } else {
    std::string hh;
    std::uint16_t hp = 0;
    if (!splitAuthority(hosts[0], 80, hh, hp)) return refuse(why, 400, "the Host header is not \"host[:port]\"");
    auto a = normaliseHost(hh);
    auto b = normaliseHost(out.host);
    bool same = hp == out.port && std::holds_alternative<Host>(a) && std::holds_alternative<Host>(b) &&
                std::get<Host>(a) == std::get<Host>(b);
    if (!same) return refuse(why, 400, "the Host header does not agree with the host of the request URI");
  }

  // The headers that frame the body or name the destination are never
  // hop-by-hop: dropping one that a Connection header lists would send the
  // upstream a request framed differently from the one the proxy decided on
  // (smuggling a second, undecided request inside the body).
  for (std::string_view framing : {"host", "content-length", "transfer-encoding"}) {
    if (listContains(out.fields, "connection", framing) || listContains(out.fields, "proxy-connection", framing))
      return refuse(why, 400, "the Connection header names \"" + std::string(framing) +
                                  "\", which frames the request and cannot be dropped");
  }
  if (out.minorVersion == 0 && !fieldValues(out.fields, "transfer-encoding").empty())
    return refuse(why, 400, "Transfer-Encoding is not defined for HTTP/1.0 requests");
  if (!requestFraming(out.fields, out.framing, why)) return false;
  bool close = listContains(out.fields, "connection", "close") || listContains(out.fields, "proxy-connection", "close");
  bool keep = listContains(out.fields, "connection", "keep-alive") ||
              listContains(out.fields, "proxy-connection", "keep-alive");
  out.keepAlive = out.minorVersion == 1 ? !close : keep && !close;
  out.expectContinue = listContains(out.fields, "expect", "100-continue");
  return true;
}

std::string originHead(const Request& request) {
  std::string out;
  out.reserve(256);
  out += request.method;
  out += ' ';
  out += request.originForm;
  out += request.minorVersion == 1 ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n";
  for (const Field& f : request.fields) {
    if (isHopByHop(f.name, request.fields)) continue;
    out += f.name;
    out += ": ";
    out += f.value;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace stockade::proxy::http
