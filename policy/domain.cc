#include "policy/domain.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace stockade {

std::string DomainRule::text() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port) h += ":" + std::to_string(*port);
  return h;
}

namespace {
// True when `inner` names only hosts that `outer` names too.
bool hostWithin(std::string_view inner, std::string_view outer) {
  if (!outer.starts_with("*.")) return inner == outer;
  std::string_view suffix = outer.substr(1);  // ".example.com"
  if (inner.starts_with("*.")) {
    inner.remove_prefix(1);                // ".sub.example.com"
    if (inner == suffix) return true;      // "*.x" within "*.x"
  }
  // An exact host must be a strict subdomain: "*.x" never covers "x".
  return inner.size() > suffix.size() && inner.ends_with(suffix);
}
}  // namespace

bool DomainRule::within(const DomainRule& outer) const {
  if (outer.port && port != outer.port) return false;
  if (outer.matchesEveryHost()) return true;
  return !matchesEveryHost() && hostWithin(host, outer.host);
}

bool DomainRule::matches(std::string_view h, std::uint16_t p) const {
  if (port && *port != p) return false;
  if (matchesEveryHost()) return true;
  if (!isWildcard()) return h == host;
  std::string_view suffix = std::string_view(host).substr(1);
  return h.size() > suffix.size() && h.ends_with(suffix);
}

namespace policy {
namespace {

bool isHexNumber(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  return std::all_of(s.begin() + 2, s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool isDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Registrable suffixes made of two labels: "*.co.uk" is as broad as "*.com".
constexpr std::array<std::string_view, 24> kTwoLabelPublicSuffixes = {
    "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp",
    "ne.jp", "co.nz", "com.br", "com.cn", "co.in", "co.za", "com.mx", "com.tr",
    "co.kr", "com.sg", "com.tw", "com.hk", "github.io", "gitlab.io", "herokuapp.com",
    "appspot.com"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool looksNumeric(std::string_view host) {
  if (host.ends_with('.')) host.remove_suffix(1);
  auto dot = host.rfind('.');
  std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
  return isDigits(last) || isHexNumber(last);
}

std::optional<std::string> canonicalIp(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string_view::npos) return std::nullopt;  // "[1.2.3.4]"
  }
  if (host.empty() || host.size() > 64 || host.find('%') != std::string_view::npos) return std::nullopt;
  std::string text(host);
  char buf[INET6_ADDRSTRLEN];
  if (text.find(':') != std::string::npos) {
    in6_addr a6{};
    if (inet_pton(AF_INET6, text.c_str(), &a6) != 1) return std::nullopt;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      in_addr a4{};
      std::memcpy(&a4, &a6.s6_addr[12], 4);
      return std::string(inet_ntop(AF_INET, &a4, buf, sizeof buf));
    }
    return std::string(inet_ntop(AF_INET6, &a6, buf, sizeof buf));
  }
  // inet_aton accepts every historical IPv4 spelling; only let it judge hosts
  // made of numbers, so that a name such as "1.example" is never an address.
  std::string_view rest = host;
  while (!rest.empty()) {
    auto dot = rest.find('.');
    std::string_view label = rest.substr(0, dot);
    if (!isDigits(label) && !isHexNumber(label)) return std::nullopt;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
    if (rest.empty()) return std::nullopt;  // trailing dot
  }
  in_addr a4{};
  if (inet_aton(text.c_str(), &a4) == 0) return std::nullopt;
  return std::string(inet_ntop(AF_INET, &a4, buf, sizeof buf));
}

std::optional<std::string> normaliseHostName(std::string_view host) {
  if (host.ends_with('.')) host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return std::nullopt;
  std::string out = lower(host);
  std::string_view rest = out;
  while (true) {
    auto dot = rest.find('.');
    std::string_view label = rest.substr(0, dot);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return std::nullopt;
    for (char c : label) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return std::nullopt;
    }
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  return out;
}

std::variant<DomainRule, std::string> parseDomainPattern(std::string_view text, DomainUse use) {
  if (text.empty()) return std::string("is empty; name a host such as \"example.com\"");
  for (unsigned char c : text) {
    if (c >= 0x80) return std::string("contains non-ASCII characters; write the name in its punycode (xn--) form");
    if (c <= 0x20 || c == 0x7f) return std::string("contains whitespace or control characters; give a bare host name");
  }
  if (text.find("://") != std::string_view::npos)
    return std::string("contains a URL scheme; give the host name only, e.g. \"example.com\"");
  if (text.find('/') != std::string_view::npos || text.find('?') != std::string_view::npos ||
      text.find('#') != std::string_view::npos)
    return std::string("contains a path; give the host name only, e.g. \"example.com\"");
  if (text.find('@') != std::string_view::npos)
    return std::string("contains user information; give the host name only");
  if (use == DomainUse::kDeny && (text == "*" || text.starts_with("*:"))) {
    if (text == "*") return DomainRule{"*", std::nullopt};
    auto rule = parseDomainPattern("localhost" + std::string(text.substr(1)), use);  // the port, checked alike
    if (auto* r = std::get_if<DomainRule>(&rule)) r->host = "*";
    return rule;
  }
  if (text == "*" || text == "*.")
    return std::string("matches every host; list the domains the child needs (only deniedDomains takes \"*\")");

  // Split off the port.
  std::string_view host = text;
  std::optional<std::uint16_t> port;
  std::string_view portText;
  bool bracketed = false;
  if (host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos) return std::string("has an unclosed \"[\"; write IPv6 addresses as \"[::1]\" or \"[::1]:8080\"");
    std::string_view after = host.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::string("has text after \"]\"; write \"[v6]:port\"");
      portText = after.substr(1);
      if (portText.empty()) return std::string("has an empty port after \":\"");
    }
    host = host.substr(1, close - 1);
    bracketed = true;
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    auto colon = host.find(':');
    portText = host.substr(colon + 1);
    host = host.substr(0, colon);
    if (portText.empty()) return std::string("has an empty port after \":\"");
  }
  if (!portText.empty() || (bracketed && text.back() != ']')) {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), value);
    if (!isDigits(portText) || ec != std::errc() || ptr != portText.data() + portText.size() || value < 1 ||
        value > 65535)
      return "has port \"" + std::string(portText) + "\"; a port is a number from 1 to 65535";
    port = static_cast<std::uint16_t>(value);
  }
  if (host.find('%') != std::string_view::npos)
    return std::string("has an IPv6 zone id; zone ids are not allowed, name the address alone");

  if (host.find(':') != std::string_view::npos || bracketed) {
    auto ip = canonicalIp(host);
    if (!ip) return std::string("is not a valid IPv6 address");
    return DomainRule{*ip, port};
  }
  if (host.starts_with("*.")) {
    std::string_view suffix = host.substr(2);
    if (suffix.find('*') != std::string_view::npos)
      return std::string("has more than one \"*\"; only one leading \"*.\" is allowed");
    auto name = normaliseHostName(suffix);
    if (!name) return std::string("is not a valid domain pattern; labels are letters, digits, \"-\" and \"_\"");
    if (canonicalIp(*name) || looksNumeric(*name))
      return std::string("puts a wildcard on an IP address; name the address exactly");
    bool oneLabel = name->find('.') == std::string::npos;
    bool publicSuffix = std::find(kTwoLabelPublicSuffixes.begin(), kTwoLabelPublicSuffixes.end(), *name) !=
                        kTwoLabelPublicSuffixes.end();
    if ((oneLabel || publicSuffix) && use == DomainUse::kAllow)
      return std::string("is too broad; name a registrable domain such as \"*.example.com\"");
    return DomainRule{"*." + *name, port};
  }
  if (host.find('*') != std::string_view::npos)
    return std::string("has a \"*\" that is not a leading \"*.\"; write \"*.example.com\" for subdomains");
  if (looksNumeric(host)) {
    auto ip = canonicalIp(host);
    if (!ip) return std::string("is not a valid IPv4 address");
    return DomainRule{*ip, port};
  }
  auto name = normaliseHostName(host);
  if (!name) return std::string("is not a valid host name; labels are letters, digits, \"-\" and \"_\", 63 characters at most");
  return DomainRule{*name, port};
}

namespace {

// Non-public addresses by proxy/decision.cc's classifyAddress(), as ranges.
constexpr std::array<std::string_view, 21> kAlwaysRefused = {
    "0.0.0.0/8",      "127.0.0.0/8",     "10.0.0.0/8",      "172.16.0.0/12", "192.168.0.0/16",  "100.64.0.0/10",
    "169.254.0.0/16", "224.0.0.0/4",     "240.0.0.0/4",     "192.0.0.0/24",  "198.18.0.0/15",   "192.88.99.0/24",
    "192.0.2.0/24",   "198.51.100.0/24", "203.0.113.0/24",  "::/128",        "::1/128",         "fc00::/7",
    "fec0::/10",      "fe80::/10",       "ff00::/8"};

struct Cidr {
  std::array<unsigned char, 16> bytes{};
  bool v6 = false;
  int length = 0;
};

std::optional<Cidr> parseCidr(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string address(text.substr(0, slash));
  std::string_view lengthText = text.substr(slash + 1);
  Cidr c;
  if (inet_pton(AF_INET, address.c_str(), c.bytes.data()) == 1) c.v6 = false;
  else if (inet_pton(AF_INET6, address.c_str(), c.bytes.data()) == 1) c.v6 = true;
  else return std::nullopt;
  auto [ptr, ec] = std::from_chars(lengthText.data(), lengthText.data() + lengthText.size(), c.length);
  if (!isDigits(lengthText) || ec != std::errc() || ptr != lengthText.data() + lengthText.size() || c.length > (c.v6 ? 128 : 32))
    return std::nullopt;
  return c;
}

// True when the first `bits` bits of a and b agree.
bool samePrefix(const Cidr& a, const Cidr& b, int bits) {
  for (int i = 0; i < bits; ++i) {
    int mask = 0x80 >> (i % 8);
    if ((a.bytes[i / 8] & mask) != (b.bytes[i / 8] & mask)) return false;
  }
  return true;
}

}  // namespace

AddressRange classifyAddressRange(std::string_view text) {
  auto range = parseCidr(text);
  if (!range) return AddressRange::kNotARange;
  for (std::string_view refused : kAlwaysRefused) {
    auto outer = parseCidr(refused);
    if (outer && outer->v6 == range->v6 && range->length >= outer->length && samePrefix(*range, *outer, outer->length))
      return AddressRange::kAlwaysRefused;
  }
  return AddressRange::kOther;
}

std::span<const std::string_view> alwaysRefusedRanges() noexcept { return kAlwaysRefused; }

}  // namespace policy
}  // namespace stockade
