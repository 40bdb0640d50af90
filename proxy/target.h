// Target planning: from the live rules, the operator's resolve overrides and
// the host and port a client asked for, to the addresses the proxy may
// connect to, in the two stages of decision.h. Pure: the one step that needs
// the world -- asking DNS for an allowed name -- is the caller's, between
// planTarget() and checkAddresses().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/decision.h"
#include "proxy/proxy.h"
#include "proxy/socks5.h"

namespace stockade::proxy {

// The outcome for one request: where to connect, or why not and what each
// protocol answers.
struct Target {
  bool ok = false;
  Verdict verdict;
  std::vector<std::string> addresses;  // canonical IP text, in order; non-empty when ok
  std::string host;                    // for the audit log: normalised, or the client's text escaped
  std::string refusedAddress;          // the address the address stage refused, if any
  EventVerdict eventVerdict = EventVerdict::kDenied;
  int httpStatus = 403;
  socks5::Reply socksReply = socks5::Reply::kNotAllowedByRuleset;
  std::string message;  // the deciding rule (ok), or why not; for the audit log
};

// An address the connection might go to, and where it came from.
struct AddressCandidate {
  std::string address;
  AddressSource source = AddressSource::kResolved;
  bool operator==(const AddressCandidate&) const = default;
};

// The name stage and what it leaves to do.
struct TargetPlan {
  // Set when the request is refused before any address is known: no rules,
  // or the name was denied. A denied name is never resolved.
  std::optional<Target> refused;
  Verdict verdict;  // the allowed name verdict otherwise
  std::string host;
  // Addresses known without DNS: the literal, the operator's override, or
  // localhost's loopback addresses (RFC 6761: never asked of DNS).
  std::vector<AddressCandidate> addresses;
  bool needsDns = false;  // `verdict.host` must be resolved; `addresses` is empty
};

// `rules` null means no rules are available: everything is refused.
// `overrides` maps normalised names to canonical IP text (as addListener()
// stores them).
TargetPlan planTarget(const DerivedRules::Network* rules, const std::map<std::string, std::string>& overrides,
                      std::string_view rawHost, std::uint16_t port);

// A request refused for a reason outside the rules (the rules provider threw):
// answered as a policy refusal.
Target refusedTarget(std::string_view rawHost, std::uint16_t port, std::string message);

// DNS answers as candidates, duplicates dropped, order kept.
std::vector<AddressCandidate> resolvedCandidates(const std::vector<std::string>& addresses);

// Resolving the allowed name failed (timedOut: within connectTimeoutMs):
// 504 on timeout, else 502; SOCKS5 "host unreachable".
Target resolutionFailed(const TargetPlan& plan, bool timedOut, std::int64_t connectTimeoutMs,
                        std::string_view reason);

// The address stage over every candidate: the connection goes only to
// checked addresses, and a name with any refused address is refused as a
// whole. `plan` must be an allowed plan from planTarget() under `rules`.
Target checkAddresses(const DerivedRules::Network& rules, const TargetPlan& plan,
                      const std::vector<AddressCandidate>& candidates);

// What an HTTP client reads when `t` was refused: a policy refusal names the
// host, the port and the rule; any other refusal says why.
std::string clientMessage(const Target& t, std::uint16_t port);

}  // namespace stockade::proxy
