#include "policy/write_decision.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "policy/paths.h"
#include "policy/text.h"

namespace stockade::policy {
namespace {

bool isDirectory(ObjectKind k) { return k == ObjectKind::kDirectory; }

WriteVerdict refuse(int error, std::string rule, std::string reason, const std::string& path) {
  WriteVerdict v;
  v.action = WriteVerdict::Action::kRefuse;
  v.error = error;
  v.rule = std::move(rule);
  v.reason = std::move(reason);
  v.path = path;
  return v;
}

WriteVerdict fail(int error, const std::string& path) {
  WriteVerdict v;
  v.action = WriteVerdict::Action::kFail;
  v.error = error;
  v.path = path;
  return v;
}

const std::string* containing(const std::vector<std::string>& list, std::string_view path) {
  for (const auto& entry : list)
    if (isWithin(path, entry)) return &entry;
  return nullptr;
}

const std::string* strictlyBeneath(const std::vector<std::string>& list, std::string_view dir) {
  for (const auto& entry : list)
    if (entry != dir && isWithin(entry, dir)) return &entry;
  return nullptr;
}

bool moves(Effect e) { return e == Effect::kMoveOut || e == Effect::kMoveIn; }

}  // namespace

bool builtPrivately(std::string_view path) noexcept {
  return isWithin(path, "/dev") || isWithin(path, "/proc") || path == "/tmp";
}

std::vector<std::string> brokeredTrees(const DerivedRules& rules) {
  std::vector<std::string> all;
  for (const auto* list : {&rules.filesystem().allowWrite, &rules.filesystem().defaultWrite})
    for (const auto& p : *list)
      if (!builtPrivately(p)) all.push_back(p);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<std::string> out;
  // Sorted, so an outer tree comes before everything inside it.
  for (const auto& p : all)
    if (!containing(out, p)) out.push_back(p);
  return out;
}

const char* effectName(Effect effect) noexcept {
  switch (effect) {
    case Effect::kModify: return "modify";
    case Effect::kCreate: return "create";
    case Effect::kRemove: return "remove";
    case Effect::kMoveOut: return "move out";
    case Effect::kMoveIn: return "move in";
    case Effect::kLinkSource: return "link source";
  }
  return "?";
}

WriteRules::WriteRules(const DerivedRules& rules)
    : trees_(brokeredTrees(rules)),
      readOnlyInView_(rules.filesystem().denyRead),
      denyWrite_(rules.filesystem().denyWrite),
      mandatoryDenyWrite_(rules.filesystem().mandatoryDenyWrite),
      names_(rules.filesystem().protectedNames) {}

std::optional<std::size_t> WriteRules::treeOf(std::string_view path) const {
  for (std::size_t i = 0; i < trees_.size(); ++i)
    if (isWithin(path, trees_[i])) return i;
  return std::nullopt;
}

std::optional<WriteVerdict> WriteRules::refusal(const WriteEffect& e) const {
  // What the child's own view says first: a read mask (or a carve-out in
  // one) is a read-only mount there.
  if (const auto* d = containing(readOnlyInView_, e.path))
    return refuse(EROFS, "filesystem.denyRead " + quote(*d), "read-denied paths are read-only masks in the sandbox",
                  e.path);
  for (const auto* list : {&denyWrite_, &mandatoryDenyWrite_}) {
    const char* field = list == &denyWrite_ ? "filesystem.denyWrite " : "filesystem.mandatoryDenyWrite ";
    const char* why = list == &denyWrite_ ? "the policy denies writes here" : "git's configuration names it as a hooks directory";
    if (const auto* d = containing(*list, e.path)) return refuse(EACCES, field + quote(*d), why, e.path);
    // A directory moved away, or onto a name, takes the denied paths beneath
    // it along (or puts what the child made where they were).
    if (moves(e.effect) && isDirectory(e.kind))
      if (const auto* d = strictlyBeneath(*list, e.path))
        return refuse(EACCES, field + quote(*d), std::string("moving ") + quote(e.path) + " would move " + why,
                      e.path);
  }
  if (const auto* n = names_.protecting(e.path, isDirectory(e.kind)))
    return refuse(EACCES, "protected name " + quote(n->text()), std::string(protectedNameReason(*n)), e.path);
  if (moves(e.effect) && isDirectory(e.kind))
    if (const auto* n = names_.contextOf(e.path))
      return refuse(EACCES, "protected name " + quote(n->text()),
                    "moving a directory at " + quote(e.path) + " would move what the name protects", e.path);
  return std::nullopt;
}

WriteVerdict WriteRules::decide(const std::vector<WriteEffect>& effects, std::optional<std::uint32_t> mode) const {
  std::optional<std::size_t> tree;
  for (const auto& e : effects)
    if ((tree = treeOf(e.path))) break;
  if (!tree) return WriteVerdict{};  // kNotBrokered
  for (const auto& e : effects) {
    // Another tree, or no tree at all, is another mount in the sandbox.
    if (treeOf(e.path) != tree) return fail(EXDEV, e.path);
    // A tree's root is a mount point in the sandbox: it cannot go away.
    if (e.path == trees_[*tree] && (e.effect == Effect::kRemove || moves(e.effect))) return fail(EBUSY, e.path);
  }
  for (const auto& e : effects)
    if (auto r = refusal(e)) return *r;
  if (mode && (*mode & (S_ISUID | S_ISGID)))
    return refuse(EPERM, "setuid/setgid mode bits",
                  "setuid/setgid bits would let a file written here run as the host's uid 0", effects.front().path);
  WriteVerdict v;
  v.action = WriteVerdict::Action::kPerform;
  v.tree = *tree;
  return v;
}

}  // namespace stockade::policy
