// libFuzzer target: policy text -> parse -> derive -> narrowing/diff.
// Nothing here may crash, hang or leak on any input, and for every policy
// that parses:
//   - parse(toJson(p)) == p, and toJson() is stable under the round trip;
//   - its DerivedRules are a narrowing of themselves on every axis, diff(r, r)
//     is empty, and the fingerprint is a function of the rules;
//   - intersecting its network rules with themselves narrows nothing away
//     that the rules allowed (it is a narrowing of them, and they of it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "stockade/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = stockade::SandboxPolicy::parse(text);
  auto* policy = std::get_if<stockade::SandboxPolicy>(&parsed);
  if (!policy) {
    FUZZ_CHECK(!std::get<stockade::PolicyError>(parsed).message.empty());
    return 0;
  }
  std::string json = policy->toJson();
  auto reparsed = stockade::SandboxPolicy::parse(json);
  auto* again = std::get_if<stockade::SandboxPolicy>(&reparsed);
  FUZZ_CHECK(again != nullptr);
  FUZZ_CHECK(*again == *policy);
  FUZZ_CHECK(again->toJson() == json);

  // Derive against a fixed, empty context: relative paths and "~" must fail
  // cleanly; the filesystem is only read.
  stockade::DeriveContext ctx{.home = "/nonexistent-fuzz-home", .cwd = "/nonexistent-fuzz-cwd", .tmpdir = std::nullopt};
  // Keep glob walks of / out of the loop (the default's own list, taken when
  // the input leaves denyRead out, walks only /etc/ssh).
  if (policy->source(stockade::PolicyField::kDenyRead) == stockade::ValueSource::kGiven &&
      policy->filesystem().denyRead.size() > 8)
    return 0;
  const auto& fs = policy->filesystem();
  if (fs.allowRead.size() > 8 || fs.denyWrite.size() > 8) return 0;
  for (const auto* list : {&fs.denyRead, &fs.allowRead, &fs.denyWrite})  // one "*" at most: no walks of the whole tree
    for (const auto& p : *list)
      if (std::count(p.begin(), p.end(), '*') > 1) return 0;
  for (const auto& p : policy->filesystem().allowWrite)  // no system tree as a writable one
    if (p.front() == '/' && std::count(p.begin(), p.end(), '/') < 3) return 0;
  auto derived = stockade::derive(*policy, ctx);
  auto* rules = std::get_if<stockade::DerivedRules>(&derived);
  if (!rules) {
    FUZZ_CHECK(!std::get<stockade::PolicyError>(derived).message.empty());
    return 0;
  }
  FUZZ_CHECK(!stockade::narrowing(*rules, *rules).has_value());
  for (auto axis : {stockade::RuleAxis::kRead, stockade::RuleAxis::kWrite, stockade::RuleAxis::kNetwork,
                    stockade::RuleAxis::kEnv, stockade::RuleAxis::kLimits})
    FUZZ_CHECK(!stockade::narrowing(*rules, *rules, axis).has_value());
  stockade::RulesDiff same = stockade::diff(*rules, *rules);
  FUZZ_CHECK(same.empty());
  FUZZ_CHECK(!same.widening.has_value());
  (void)same.toJson();
  FUZZ_CHECK(rules->fingerprint() == rules->fingerprint());
  FUZZ_CHECK(rules->fingerprint().size() == 64);

  // The same policy derived again gives the same rules.
  auto derivedAgain = stockade::derive(*again, ctx);
  auto* rulesAgain = std::get_if<stockade::DerivedRules>(&derivedAgain);
  FUZZ_CHECK(rulesAgain != nullptr);
  FUZZ_CHECK(rulesAgain->fingerprint() == rules->fingerprint());

  const auto& net = rules->network();
  auto self = stockade::intersectNetworks(net, net);
  for (const auto& allowed : self.allowedDomains) {
    bool inside = std::any_of(net.allowedDomains.begin(), net.allowedDomains.end(),
                              [&](const stockade::DomainRule& r) { return allowed.within(r); });
    FUZZ_CHECK(inside);  // the intersection allows nothing the rules did not
  }
  for (const auto& allowed : net.allowedDomains) {
    bool kept = std::any_of(self.allowedDomains.begin(), self.allowedDomains.end(),
                            [&](const stockade::DomainRule& r) { return allowed.within(r); });
    FUZZ_CHECK(kept);  // and drops nothing they allowed
  }
  return 0;
}
