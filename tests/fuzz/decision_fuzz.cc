// libFuzzer target: the proxy's decision (proxy/decision.h) and target
// planning (proxy/target.h) over random rules and destinations. The input is
// lines:
//   +PATTERN      an allowedDomains entry (skipped when it does not parse)
//   -PATTERN      a deniedDomains entry
//   =NAME ADDR    an operator resolve override
//   @ADDR         an address DNS would answer for every name
//   anything else a destination "HOST PORT" (port: decimal, default 443)
// Invariants, for every destination:
//   - deniedDomains always win: no destination a denied entry matches is allowed;
//   - an allowed verdict names the allowedDomains entry that matched it;
//   - a denied name is never resolved: its plan is refused with no address to
//     try and no DNS to ask;
//   - normalising is idempotent: deciding on the normalised host gives the same verdict;
//   - adding a denied entry for the host never allows more (monotonic);
//   - the address stage lets nothing through that a denied entry names, and a
//     target is connectable only through addresses that each passed it.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fuzz_check.h"
#include "policy/domain.h"
#include "proxy/decision.h"
#include "proxy/target.h"

namespace {

using namespace stockade::proxy;
using stockade::DerivedRules;
using stockade::DomainRule;

bool deniedByEntry(const DerivedRules::Network& rules, std::string_view host, std::uint16_t port) {
  return std::any_of(rules.deniedDomains.begin(), rules.deniedDomains.end(),
                     [&](const DomainRule& d) { return d.matches(host, port); });
}

void checkDestination(const DerivedRules::Network& rules, const std::map<std::string, std::string>& overrides,
                      const std::vector<std::string>& dnsAnswers, std::string_view host, std::uint16_t port) {
  Verdict v = decide(rules, host, port);
  FUZZ_CHECK(!v.rule.empty());
  if (v.allowed()) {
    FUZZ_CHECK(!v.host.text.empty());
    FUZZ_CHECK(!deniedByEntry(rules, v.host.text, port));
    FUZZ_CHECK(v.matchedAllow.has_value());
    FUZZ_CHECK(v.matchedAllow->matches(v.host.text, port));
  } else if (!v.host.text.empty()) {
    bool anyAllow = std::any_of(rules.allowedDomains.begin(), rules.allowedDomains.end(),
                                [&](const DomainRule& a) { return a.matches(v.host.text, port); });
    FUZZ_CHECK(deniedByEntry(rules, v.host.text, port) || !anyAllow || port == 0);
  }
  if (!v.host.text.empty()) {
    Verdict again = decide(rules, v.host.text, port);
    FUZZ_CHECK(again.outcome == v.outcome && again.rule == v.rule && again.host == v.host);
    // Denying the very host never allows more.
    DerivedRules::Network stricter = rules;
    auto own = stockade::policy::parseDomainPattern(v.host.text);
    if (auto* d = std::get_if<DomainRule>(&own)) {
      stricter.deniedDomains.push_back(*d);
      FUZZ_CHECK(!decide(stricter, host, port).allowed());
    }
  }

  TargetPlan plan = planTarget(&rules, overrides, host, port);
  FUZZ_CHECK(plan.refused.has_value() == !v.allowed());
  if (plan.refused) {
    FUZZ_CHECK(!plan.needsDns);  // a denied name is never resolved
    FUZZ_CHECK(plan.addresses.empty());
    FUZZ_CHECK(!plan.refused->ok && plan.refused->addresses.empty());
    FUZZ_CHECK(plan.refused->httpStatus == 403);
    return;
  }
  FUZZ_CHECK(plan.needsDns == plan.addresses.empty());
  std::vector<AddressCandidate> candidates = plan.needsDns ? resolvedCandidates(dnsAnswers) : plan.addresses;
  Target t = checkAddresses(rules, plan, candidates);
  if (t.ok) {
    FUZZ_CHECK(!t.addresses.empty());
    FUZZ_CHECK(t.addresses.size() == candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      FUZZ_CHECK(decideAddress(rules, plan.verdict, candidates[i].address, candidates[i].source).allowed());
      FUZZ_CHECK(!deniedByEntry(rules, t.addresses[i], port));
    }
  } else {
    FUZZ_CHECK(t.addresses.empty());
    FUZZ_CHECK(!t.message.empty());
  }
  for (const auto& c : candidates) {
    for (auto source : {AddressSource::kLiteral, AddressSource::kResolved, AddressSource::kOperatorOverride}) {
      Verdict a = decideAddress(rules, plan.verdict, c.address, source);
      auto canonical = stockade::policy::canonicalIp(c.address);
      if (canonical && deniedByEntry(rules, *canonical, port)) FUZZ_CHECK(!a.allowed());
      if (!canonical) FUZZ_CHECK(!a.allowed());
    }
  }
}

std::uint16_t portOf(std::string_view s) {
  unsigned v = 443;
  if (!s.empty()) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || v > 65535) v = 443;
  }
  return static_cast<std::uint16_t>(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  DerivedRules::Network rules;
  std::map<std::string, std::string> overrides;
  std::vector<std::string> dnsAnswers;
  std::vector<std::pair<std::string, std::uint16_t>> destinations;
  while (!in.empty() && destinations.size() < 16) {
    std::size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (line.empty()) continue;
    std::string_view body = line.substr(1);
    if (line[0] == '+' || line[0] == '-') {
      auto parsed = stockade::policy::parseDomainPattern(body);
      if (auto* r = std::get_if<DomainRule>(&parsed)) (line[0] == '+' ? rules.allowedDomains : rules.deniedDomains).push_back(*r);
    } else if (line[0] == '=') {
      std::size_t sp = body.find(' ');
      if (sp == std::string_view::npos) continue;
      auto name = normaliseHost(body.substr(0, sp));
      auto ip = stockade::policy::canonicalIp(body.substr(sp + 1));
      if (auto* h = std::get_if<Host>(&name); h && !h->isAddress && ip) overrides[h->text] = *ip;
    } else if (line[0] == '@') {
      dnsAnswers.emplace_back(body);
    } else {
      std::size_t sp = line.rfind(' ');
      if (sp == std::string_view::npos) destinations.emplace_back(std::string(line), 443);
      else destinations.emplace_back(std::string(line.substr(0, sp)), portOf(line.substr(sp + 1)));
    }
  }
  if (dnsAnswers.empty()) dnsAnswers.push_back("93.184.216.34");
  for (const auto& [host, port] : destinations) checkDestination(rules, overrides, dnsAnswers, host, port);
  return 0;
}
