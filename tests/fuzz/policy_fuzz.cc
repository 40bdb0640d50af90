// libFuzzer target: policy text -> parse -> derive -> narrowing/diff.
// Nothing here may crash, hang or leak on any input.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string_view>

#include "stockade/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = stockade::SandboxPolicy::parse(text);
  auto* policy = std::get_if<stockade::SandboxPolicy>(&parsed);
  if (!policy) return 0;
  // Derive against a fixed, empty context: relative paths and "~" must fail
  // cleanly; the filesystem is only read.
  stockade::DeriveContext ctx{.home = "/nonexistent-fuzz-home", .cwd = "/nonexistent-fuzz-cwd", .tmpdir = std::nullopt};
  // Keep glob walks of / out of the loop (the default's own list, taken when
  // the input leaves denyRead out, walks only /etc/ssh).
  if (policy->source(stockade::PolicyField::kDenyRead) == stockade::ValueSource::kGiven &&
      policy->filesystem().denyRead.size() > 8)
    return 0;
  for (const auto& p : policy->filesystem().denyRead)  // one "*" at most: no walks of the whole tree
    if (std::count(p.begin(), p.end(), '*') > 1) return 0;
  for (const auto& p : policy->filesystem().allowWrite)  // no mandatory-deny scan of a system tree
    if (p.front() == '/' && std::count(p.begin(), p.end(), '/') < 3) return 0;
  auto derived = stockade::derive(*policy, ctx);
  if (auto* rules = std::get_if<stockade::DerivedRules>(&derived)) {
    (void)stockade::narrowing(*rules, *rules);
    (void)stockade::diff(*rules, *rules).toJson();
    (void)rules->fingerprint();
    (void)stockade::SandboxPolicy::parse(policy->toJson());
  }
  return 0;
}
