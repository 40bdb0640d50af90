#include "proxy/target.h"

#include "policy/domain.h"
#include "proxy/replies.h"

namespace stockade::proxy {

Target refusedTarget(std::string_view rawHost, std::uint16_t port, std::string message) {
  Target t;
  t.host = printable(rawHost);
  t.verdict.port = port;
  t.message = std::move(message);
  return t;
}

TargetPlan planTarget(const DerivedRules::Network* rules, const std::map<std::string, std::string>& overrides,
                      std::string_view rawHost, std::uint16_t port) {
  TargetPlan plan;
  plan.host = printable(rawHost);
  if (!rules) {
    plan.refused = refusedTarget(rawHost, port, "no network rules are available for this sandbox");
    return plan;
  }
  plan.verdict = decide(*rules, rawHost, port);
  if (!plan.verdict.host.text.empty()) plan.host = plan.verdict.host.text;
  if (!plan.verdict.allowed()) {
    Target t;
    t.verdict = plan.verdict;
    t.host = plan.host;
    t.message = plan.verdict.rule;
    plan.refused = std::move(t);
    return plan;
  }
  const Host& h = plan.verdict.host;
  if (h.isAddress) {
    plan.addresses.push_back({h.text, AddressSource::kLiteral});
  } else if (auto it = overrides.find(h.text); it != overrides.end()) {
    plan.addresses.push_back({it->second, AddressSource::kOperatorOverride});
  } else if (h.text == "localhost") {
    plan.addresses.push_back({"127.0.0.1", AddressSource::kResolved});
    plan.addresses.push_back({"::1", AddressSource::kResolved});
  } else {
    plan.needsDns = true;
  }
  return plan;
}

std::vector<AddressCandidate> resolvedCandidates(const std::vector<std::string>& addresses) {
  std::vector<AddressCandidate> out;
  for (const auto& a : addresses) {
    bool seen = false;
    for (const auto& c : out) seen = seen || c.address == a;
    if (!seen) out.push_back({a, AddressSource::kResolved});
  }
  return out;
}

Target resolutionFailed(const TargetPlan& plan, bool timedOut, std::int64_t connectTimeoutMs,
                        std::string_view reason) {
  Target t;
  t.verdict = plan.verdict;
  t.host = plan.host;
  t.eventVerdict = EventVerdict::kAllowed;
  t.httpStatus = timedOut ? 504 : 502;
  t.socksReply = socks5::Reply::kHostUnreachable;
  t.message = "could not resolve \"" + plan.verdict.host.text + "\": " +
              (timedOut ? "timed out after " + std::to_string(connectTimeoutMs) + " ms" : std::string(reason));
  return t;
}

Target checkAddresses(const DerivedRules::Network& rules, const TargetPlan& plan,
                      const std::vector<AddressCandidate>& candidates) {
  Target t;
  t.verdict = plan.verdict;
  t.host = plan.host;
  std::string rule = plan.verdict.rule;
  for (const auto& [address, source] : candidates) {
    Verdict v = decideAddress(rules, plan.verdict, address, source);
    if (!v.allowed()) {
      t.verdict = v;
      t.message = v.rule;
      t.refusedAddress = address;
      t.addresses.clear();
      return t;
    }
    rule = v.rule;
    auto canonical = policy::canonicalIp(address);
    if (!canonical) {
      t.message = "address \"" + printable(address) + "\" cannot be connected to";
      t.addresses.clear();
      return t;
    }
    t.addresses.push_back(*canonical);
  }
  if (t.addresses.empty()) {
    t.message = "no address to connect to";
    return t;
  }
  t.verdict.rule = rule;
  t.ok = true;
  t.eventVerdict = EventVerdict::kAllowed;
  t.message = rule;
  return t;
}

std::string clientMessage(const Target& t, std::uint16_t port) {
  if (t.httpStatus != 403) return t.message;
  return "blocked by policy: host \"" + t.host + "\" port " + std::to_string(port) + ": " + t.message;
}

}  // namespace stockade::proxy
