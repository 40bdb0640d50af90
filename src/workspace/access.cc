#include "src/workspace/access.h"

#include <fnmatch.h>

#include <algorithm>

#include "policy/paths.h"

namespace stockade::workspace {
namespace {

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) out.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool matchFrom(const std::vector<std::string>& pattern, std::size_t pi, const std::vector<std::string>& path,
               std::size_t si) {
  if (pi == pattern.size()) return si == path.size();
  if (pattern[pi] == "**") {
    for (std::size_t k = si; k <= path.size(); ++k)
      if (matchFrom(pattern, pi + 1, path, k)) return true;
    return false;
  }
  if (si == path.size()) return false;
  if (::fnmatch(pattern[pi].c_str(), path[si].c_str(), 0) != 0) return false;
  return matchFrom(pattern, pi + 1, path, si + 1);
}

const std::string* containing(const std::vector<std::string>& roots, std::string_view path) {
  for (const auto& r : roots)
    if (policy::isWithin(path, r)) return &r;
  return nullptr;
}

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

bool globMatches(std::string_view pattern, std::string_view path) {
  return matchFrom(split(pattern), 0, split(path), 0);
}

AccessRules::AccessRules(DerivedRules rules) : rules_(std::move(rules)), writes_(rules_) {
  for (const auto& p : rules_.filesystem().denyReadPatterns) denyPatterns_.push_back(split(p));
}

std::optional<std::string> AccessRules::readRefusal(std::string_view realPath) const {
  const auto& fs = rules_.filesystem();
  if (!rules_.readable(realPath)) {
    const std::string* deny = nullptr;
    for (const auto& d : fs.denyRead)
      if (policy::isWithin(realPath, d) && (!deny || d.size() > deny->size())) deny = &d;
    return "filesystem.denyRead " + quoted(deny ? *deny : realPath);
  }
  if (denyPatterns_.empty()) return std::nullopt;
  std::vector<std::string> parts = split(realPath);
  for (std::size_t i = 0; i < denyPatterns_.size(); ++i) {
    for (std::size_t len = 1; len <= parts.size(); ++len) {
      std::vector<std::string> prefix(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(len));
      if (!matchFrom(denyPatterns_[i], 0, prefix, 0)) continue;
      // The matched object is denied unless a carve-out deeper than it holds the path.
      std::string matched;
      for (const auto& p : prefix) matched += "/" + p;
      const std::string* allow = nullptr;
      for (const auto& a : fs.allowRead)
        if (policy::isWithin(realPath, a) && a.size() > matched.size() && (!allow || a.size() > allow->size()))
          allow = &a;
      if (!allow) return "filesystem.denyRead " + quoted(fs.denyReadPatterns[i]);
    }
  }
  return std::nullopt;
}

std::optional<std::string> AccessRules::writeRefusal(std::string_view realPath, WriteOp op, ObjectKind kind) const {
  // A read-denied path is masked read-only in the sandbox's view: not writable either.
  if (auto denied = readRefusal(realPath)) return denied;
  const policy::Effect effect = op == WriteOp::kCreate    ? policy::Effect::kCreate
                                : op == WriteOp::kReplace ? policy::Effect::kMoveIn
                                : op == WriteOp::kModify  ? policy::Effect::kModify
                                                          : policy::Effect::kRemove;
  const auto verdict = writes_.decide({{effect, std::string(realPath),
                                        kind == ObjectKind::kDirectory ? policy::ObjectKind::kDirectory
                                        : kind == ObjectKind::kSymlink ? policy::ObjectKind::kSymlink
                                                                       : policy::ObjectKind::kOther}});
  if (verdict.action == policy::WriteVerdict::Action::kPerform) return std::nullopt;
  if (verdict.action == policy::WriteVerdict::Action::kRefuse) return verdict.rule;
  // Outside the brokered trees (or a tree's own root, a mount point only in
  // the sandbox): the rules as written.
  if (rules_.writable(realPath)) return std::nullopt;
  const auto& fs = rules_.filesystem();
  if (const std::string* d = containing(fs.denyWrite, realPath)) return "filesystem.denyWrite " + quoted(*d);
  if (const std::string* d = containing(fs.mandatoryDenyWrite, realPath)) return "mandatory deny " + quoted(*d);
  return "not inside any filesystem.allowWrite path";
}

}  // namespace stockade::workspace
