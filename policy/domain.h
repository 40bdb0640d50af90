// Network destination patterns and IP literals: validation, normalisation,
// canonical forms. Pure string functions, shared by derive() and the proxy.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "stockade/rules.h"

namespace stockade::policy {

// Which list an entry is in: a deny may be broader than an allow can.
enum class DomainUse {
  kAllow,  // allowedDomains: no "*", no wildcard over a public suffix
  kDeny,   // deniedDomains: also "*" and "*:port" (every host), and "*.com"
};

// Parses a policy entry ("github.com", "*.npmjs.org", "localhost:8080",
// "[::1]:8080", "0x7f.1"). On failure returns the reason and the fix, without
// the field name: `is too broad; name a registrable domain such as "*.example.com"`.
std::variant<DomainRule, std::string> parseDomainPattern(std::string_view text, DomainUse use = DomainUse::kAllow);

// An address range in CIDR form ("10.0.0.0/8", "fc00::/7"), judged against
// the addresses the proxy refuses for every allowed name (loopback, private,
// link-local, multicast, reserved, metadata; proxy/decision.h).
enum class AddressRange {
  kNotARange,      // not "address/length"
  kAlwaysRefused,  // every address in it is refused already
  kOther,          // holds addresses the proxy would connect to
};
AddressRange classifyAddressRange(std::string_view cidr);
// The ranges behind kAlwaysRefused, for a test that holds them against the proxy.
std::span<const std::string_view> alwaysRefusedRanges() noexcept;

// Canonical text of an IP literal, or nullopt when `host` is not one.
// IPv4 accepts every inet_aton spelling (decimal, octal, hex, short forms:
// "2130706433", "0177.0.0.1", "0x7f.1", "127.1"); IPv6 may be bracketed and an
// IPv4-mapped IPv6 address becomes its IPv4 form. Zone ids ("fe80::1%eth0")
// are not IP literals here: the caller must refuse them.
std::optional<std::string> canonicalIp(std::string_view host);

// True when `host` looks like an attempt at an IPv4 literal: its last label is
// all digits or a 0x-number. Such a host must parse as an address or be refused.
bool looksNumeric(std::string_view host);

// Lower-cases and drops one trailing dot; returns nullopt for a name that is
// not a valid DNS host name (labels of [a-z0-9_-], 1..63 chars, no leading or
// trailing hyphen, 253 chars in all).
std::optional<std::string> normaliseHostName(std::string_view host);

}  // namespace stockade::policy
