// The proxy's allow/deny decision: pure functions of (rules, host, port) and
// of (name verdict, resolved address). No sockets, no resolver, no clock; the
// session code (session.cc, through target.h) only parses, asks these
// functions and pipes bytes.
//
// The decision is taken in two stages, in this order:
//   1. decide()        on the name the client asked for. A denied name is
//                      never resolved.
//   2. decideAddress() on every address the allowed name resolved to (or the
//                      literal itself). The proxy connects only to addresses
//                      that passed this stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "stockade/rules.h"

namespace stockade::proxy {

// A destination host after normalisation: lower case, no trailing dot, IP
// literals in canonical text ("127.0.0.1", "::1": no brackets, IPv4-mapped
// IPv6 as IPv4).
struct Host {
  std::string text;
  bool isAddress = false;
  bool operator==(const Host&) const = default;
};

// Normalises a host as written by a client (URL authority, Host header,
// CONNECT target, SOCKS5 domain). Every inet_aton spelling of IPv4 and every
// bracketed or IPv4-mapped IPv6 spelling becomes its canonical address.
// Refused, with the reason: empty hosts, IPv6 zone ids ("fe80::1%eth0"),
// percent-encoding, numeric-looking hosts that are not valid addresses
// ("1.2.3.999"), and names that are not valid DNS host names.
std::variant<Host, std::string> normaliseHost(std::string_view raw);

enum class Outcome { kAllow, kDeny };

struct Verdict {
  Outcome outcome = Outcome::kDeny;
  Host host;          // normalised; empty text when normalisation failed
  std::uint16_t port = 0;
  // The rule that decided, for the client's error body and the audit log:
  //   `deniedDomains: "evil.example"`, `allowedDomains: "*.github.com"`,
  //   `no allowedDomains entry matches`, `resolved address 10.0.0.1 is private`.
  std::string rule;
  // The allowedDomains entry that matched (set when the name stage allowed);
  // the address stage needs it to honour entries that name an address or
  // `localhost` explicitly.
  std::optional<DomainRule> matchedAllow;

  bool allowed() const noexcept { return outcome == Outcome::kAllow; }
};

// Stage 1: the name. deniedDomains are consulted first and win; then the
// first allowedDomains entry that matches allows; otherwise deny.
// `host` is raw client input: it is normalised here, and a host that cannot
// be normalised is denied naming why.
Verdict decide(const DerivedRules::Network& rules, std::string_view host, std::uint16_t port);

// Where an address given to decideAddress() came from.
enum class AddressSource {
  kLiteral,           // the client named the address itself
  kResolved,          // the proxy resolved the allowed name
  // An operator's resolve override (`stockade run --resolve HOST=ADDR`).
  // Overrides are trusted configuration written by whoever runs stockade, not
  // by the child, so the address they name counts as explicitly allowed: the
  // special-address rule does not apply to them. This is how tests point
  // allowed names at 127.0.0.1.
  kOperatorOverride,
};

// What kind of address this is, for the special-address rule.
enum class AddressClass {
  kPublic,
  kUnspecified,    // 0.0.0.0/8, ::
  kLoopback,       // 127.0.0.0/8, ::1
  kPrivate,        // 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10
  kLinkLocal,      // 169.254/16, fe80::/10
  kMulticast,      // 224/4, ff00::/8
  kReserved,       // 240/4 (incl. 255.255.255.255)
  kCloudMetadata,  // 169.254.169.254, fd00:ec2::254
};
// `address` must be canonical text (as from normaliseHost); nullopt otherwise.
// IPv6 addresses that embed IPv4 (IPv4-compatible ::a.b.c.d, NAT64
// 64:ff9b::/96) are classified by the embedded IPv4 address.
std::optional<AddressClass> classifyAddress(std::string_view address);
std::string_view addressClassName(AddressClass c) noexcept;  // "private", "cloud-metadata", ...

// Stage 2: one address the connection would go to. `name` must be an allowed
// verdict from decide() under the same `rules`. An address that a
// deniedDomains entry names (with its port, if it has one) is refused, however
// it was reached: an allowed name resolving to a denied address, or an
// operator override pointing at one. A special (non-public) address is
// refused unless the matched allow entry names that very address, or names
// `localhost` and the address is loopback, or the address comes from an
// operator override.
Verdict decideAddress(const DerivedRules::Network& rules, const Verdict& name, std::string_view address,
                      AddressSource source);

}  // namespace stockade::proxy
