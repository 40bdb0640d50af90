#include "proxy/decision.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>

#include "platform/mutation.h"
#include "policy/domain.h"

namespace stockade::proxy {

namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

Verdict deny(Host host, std::uint16_t port, std::string rule) {
  Verdict v;
  v.outcome = Outcome::kDeny;
  v.host = std::move(host);
  v.port = port;
  v.rule = std::move(rule);
  return v;
}

bool inV4(std::uint32_t a, std::uint32_t net, int bits) {
  std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == net;
}

AddressClass classifyV4(std::uint32_t a) {
  if (a == 0xA9FEA9FEu) return AddressClass::kCloudMetadata;  // 169.254.169.254
  if (inV4(a, 0x00000000u, 8)) return AddressClass::kUnspecified;
  if (inV4(a, 0x7F000000u, 8)) return AddressClass::kLoopback;
  if (inV4(a, 0x0A000000u, 8) || inV4(a, 0xAC100000u, 12) || inV4(a, 0xC0A80000u, 16) ||
      inV4(a, 0x64400000u, 10))
    return AddressClass::kPrivate;
  if (inV4(a, 0xA9FE0000u, 16)) return AddressClass::kLinkLocal;
  if (inV4(a, 0xE0000000u, 4)) return AddressClass::kMulticast;
  if (inV4(a, 0xF0000000u, 4)) return AddressClass::kReserved;
  // IETF protocol assignments (192.0.0.0/24, which holds 192.0.0.192, a cloud
  // metadata address), benchmarking (198.18.0.0/15), 6to4 relays
  // (192.88.99.0/24), documentation (192.0.2/24, 198.51.100/24, 203.0.113/24).
  if (inV4(a, 0xC0000000u, 24) || inV4(a, 0xC6120000u, 15) || inV4(a, 0xC0586300u, 24) ||
      inV4(a, 0xC0000200u, 24) || inV4(a, 0xC6336400u, 24) || inV4(a, 0xCB007100u, 24))
    return AddressClass::kReserved;
  return AddressClass::kPublic;
}

}  // namespace

std::variant<Host, std::string> normaliseHost(std::string_view raw) {
  if (raw.empty()) return std::string("the host is empty");
  for (unsigned char c : raw) {
    if (c <= 0x20 || c >= 0x7f) return "host " + quoted("...") + " contains whitespace, control or non-ASCII bytes";
  }
  if (raw.size() > 255) return std::string("the host is longer than 255 characters");
  if (raw.find('%') != std::string_view::npos)
    return "host " + quoted(raw) + " contains \"%\": IPv6 zone ids and percent-encoded hosts are refused";
  bool bracketed = raw.front() == '[';
  if (bracketed || raw.find(':') != std::string_view::npos) {
    if (bracketed && raw.back() != ']') return "host " + quoted(raw) + " has an unclosed \"[\"";
    auto ip = policy::canonicalIp(raw);
    if (!ip) return "host " + quoted(raw) + " is not a valid IPv6 address";
    return Host{*ip, true};
  }
  if (policy::looksNumeric(raw)) {
    auto ip = policy::canonicalIp(raw.ends_with('.') ? raw.substr(0, raw.size() - 1) : raw);
    if (!ip) return "host " + quoted(raw) + " looks numeric but is not a valid IPv4 address";
    return Host{*ip, true};
  }
  auto name = policy::normaliseHostName(raw);
  if (!name) return "host " + quoted(raw) + " is not a valid host name";
  return Host{*name, false};
}

Verdict decide(const DerivedRules::Network& rules, std::string_view host, std::uint16_t port) {
  auto normalised = normaliseHost(host);
  if (auto* why = std::get_if<std::string>(&normalised)) return deny(Host{}, port, "invalid host: " + *why);
  Host h = std::get<Host>(std::move(normalised));
  if (port == 0) return deny(std::move(h), port, "port 0 is not a destination");
  if (mutation::disabled(mutation::Layer::kProxyDecision)) {  // scripts/mutate
    Verdict v;
    v.outcome = Outcome::kAllow;
    v.host = std::move(h);
    v.port = port;
    v.rule = "mutation testing: the proxy's decision is off";
    return v;
  }
  for (const DomainRule& r : rules.deniedDomains) {
    if (r.matches(h.text, port)) return deny(std::move(h), port, "deniedDomains: " + quoted(r.text()));
  }
  for (const DomainRule& r : rules.allowedDomains) {
    if (r.matches(h.text, port)) {
      Verdict v;
      v.outcome = Outcome::kAllow;
      v.host = std::move(h);
      v.port = port;
      v.rule = "allowedDomains: " + quoted(r.text());
      v.matchedAllow = r;
      return v;
    }
  }
  return deny(std::move(h), port, "no allowedDomains entry matches");
}

std::optional<AddressClass> classifyAddress(std::string_view address) {
  std::string text(address);
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) return classifyV4(ntohl(a4.s_addr));
  in6_addr a6{};
  if (inet_pton(AF_INET6, text.c_str(), &a6) != 1) return std::nullopt;
  const auto* b = a6.s6_addr;
  auto embeddedV4 = [b] {
    return (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) | (std::uint32_t{b[14]} << 8) | b[15];
  };
  static constexpr std::array<unsigned char, 16> kMetadata = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
                                                              0,    0,    0,    0,    0, 0, 0x02, 0x54};
  if (std::memcmp(b, kMetadata.data(), 16) == 0) return AddressClass::kCloudMetadata;
  if (IN6_IS_ADDR_UNSPECIFIED(&a6)) return AddressClass::kUnspecified;
  if (IN6_IS_ADDR_LOOPBACK(&a6)) return AddressClass::kLoopback;
  if (IN6_IS_ADDR_V4MAPPED(&a6) || IN6_IS_ADDR_V4COMPAT(&a6)) return classifyV4(embeddedV4());
  static constexpr std::array<unsigned char, 12> kNat64 = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kNat64.data(), 12) == 0) return classifyV4(embeddedV4());
  if (b[0] == 0xff) return AddressClass::kMulticast;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;
  if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)) return AddressClass::kPrivate;
  return AddressClass::kPublic;
}

std::string_view addressClassName(AddressClass c) noexcept {
  switch (c) {
    case AddressClass::kPublic: return "public";
    case AddressClass::kUnspecified: return "unspecified";
    case AddressClass::kLoopback: return "loopback";
    case AddressClass::kPrivate: return "private";
    case AddressClass::kLinkLocal: return "link-local";
    case AddressClass::kMulticast: return "multicast";
    case AddressClass::kReserved: return "reserved";
    case AddressClass::kCloudMetadata: return "cloud-metadata";
  }
  return "unknown";
}

Verdict decideAddress(const DerivedRules::Network& rules, const Verdict& name, std::string_view address,
                      AddressSource source) {
  if (mutation::disabled(mutation::Layer::kProxyDecision)) return name;  // scripts/mutate
  if (!name.allowed() || !name.matchedAllow)
    return deny(name.host, name.port, name.allowed() ? "internal: name verdict has no matched rule" : name.rule);
  auto canonical = policy::canonicalIp(address);
  if (!canonical) return deny(name.host, name.port, "resolved address " + quoted(address) + " is not an IP address");
  auto cls = classifyAddress(*canonical);
  if (!cls) return deny(name.host, name.port, "resolved address " + quoted(address) + " is not an IP address");
  for (const DomainRule& r : rules.deniedDomains) {
    if (r.matches(*canonical, name.port))
      return deny(name.host, name.port,
                  std::string(source == AddressSource::kLiteral ? "address " : "resolved address ") + *canonical +
                      " is denied: deniedDomains: " + quoted(r.text()));
  }
  Verdict v = name;
  if (*cls == AddressClass::kPublic) return v;
  if (source == AddressSource::kOperatorOverride) {
    v.rule += "; address " + *canonical + " from an operator resolve override";
    return v;
  }
  const DomainRule& entry = *name.matchedAllow;
  if (entry.host == *canonical) return v;  // the entry names this address
  if (*cls == AddressClass::kLoopback && entry.host == "localhost") {
    v.rule += "; loopback address " + *canonical + " allowed by an explicit localhost entry";
    return v;
  }
  std::string what = source == AddressSource::kLiteral ? "address " : "resolved address ";
  return deny(name.host, name.port,
              what + *canonical + " is " + std::string(addressClassName(*cls)) + "; allowedDomains: " +
                  quoted(entry.text()) + " does not name it explicitly");
}

}  // namespace stockade::proxy
