// libFuzzer target: the write broker's pure decision (policy/write_decision.h)
// and the protected-name matcher under it, on paths as a sandboxed program
// could spell them. Nothing here may crash or hang, and every verdict must
// agree with the rules it came from: a performed call touches one tree, no
// protected name, no denied path; a call left to the kernel touches no tree.
//
// Input: up to four effects, each one byte of effect, one byte of kind, then
// a path up to '\n' (made absolute and lexically normal, as the broker hands
// paths over); a fifth byte after them, when present, is a mode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "policy/paths.h"
#include "policy/protected_names.h"
#include "policy/write_decision.h"

namespace {

using namespace stockade;
using policy::Effect;
using policy::ObjectKind;
using policy::WriteVerdict;

const DerivedRules& rules() {
  static const DerivedRules r = [] {
    auto derived = derive(SandboxPolicy::fromJson(R"({"filesystem": {
        "allowWrite": ["/nonexistent-fuzz/w", "/nonexistent-fuzz/x", "/tmp"],
        "denyWrite": ["/nonexistent-fuzz/w/deny", "/nonexistent-fuzz/w/a/.env"],
        "denyRead": ["/nonexistent-fuzz/w/secret"], "allowRead": []}})"),
                          DeriveContext{.home = "/nonexistent-fuzz-home", .cwd = std::nullopt, .tmpdir = std::nullopt});
    return std::get<DerivedRules>(std::move(derived));
  }();
  return r;
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const policy::WriteRules writeRules(rules());
  static const policy::ProtectedNameMatcher names(rules().filesystem().protectedNames);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<policy::WriteEffect> effects;
  while (effects.size() < 4 && in.size() >= 2) {
    const auto effect = static_cast<Effect>(static_cast<unsigned char>(in[0]) % 6);
    const auto kind = static_cast<ObjectKind>(static_cast<unsigned char>(in[1]) % 5);
    in.remove_prefix(2);
    std::size_t end = in.find('\n');
    std::string raw(in.substr(0, std::min(end, std::size_t{4096})));
    in.remove_prefix(end == std::string_view::npos ? in.size() : end + 1);
    if (raw.find('\0') != std::string::npos) return 0;
    effects.push_back({effect, policy::lexicallyNormal("/" + raw), kind});
    (void)names.contextOf(effects.back().path);
  }
  if (effects.empty()) return 0;
  std::optional<std::uint32_t> mode;
  if (!in.empty()) mode = static_cast<unsigned char>(in[0]) << 4;
  const WriteVerdict v = writeRules.decide(effects, mode);
  switch (v.action) {
    case WriteVerdict::Action::kNotBrokered:
      for (const auto& e : effects) check(!writeRules.treeOf(e.path));
      break;
    case WriteVerdict::Action::kPerform:
      check(v.tree < writeRules.trees().size());
      for (const auto& e : effects) {
        check(writeRules.treeOf(e.path) == v.tree);
        check(names.protecting(e.path, e.kind == ObjectKind::kDirectory) == nullptr);
        check(e.kind != ObjectKind::kSpecial || (e.effect != Effect::kCreate && e.effect != Effect::kMoveIn));
        check(rules().writable(e.path) || names.protecting(e.path, false) != nullptr);
      }
      break;
    case WriteVerdict::Action::kRefuse:
    case WriteVerdict::Action::kFail:
      check(v.error != 0);
      check(v.action == WriteVerdict::Action::kFail || !v.rule.empty());
      break;
  }
  return 0;
}
