// Network destination patterns and IP literals: validation, normalisation,
// canonical forms. Pure string functions, shared by derive() and the proxy.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "stockade/rules.h"

namespace stockade::policy {

// Parses a policy entry ("github.com", "*.npmjs.org", "localhost:8080",
// "[::1]:8080", "0x7f.1"). On failure returns the reason and the fix, without
// the field name: `is too broad; name a registrable domain such as "*.example.com"`.
std::variant<DomainRule, std::string> parseDomainPattern(std::string_view text);

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
