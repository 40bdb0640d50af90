#include "policy/write_decision.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "policy/name_fold.h"
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

// The rule paths holding the path whose key is `key` / lying strictly
// beneath it, compared by keys.
template <typename RulePath>
const std::string* containingKey(const std::vector<RulePath>& list, std::string_view key) {
  for (const auto& entry : list)
    if (isWithin(key, entry.key)) return &entry.path;
  return nullptr;
}

template <typename RulePath>
const std::string* strictlyBeneathKey(const std::vector<RulePath>& list, std::string_view key) {
  for (const auto& entry : list)
    if (entry.key != key && isWithin(entry.key, key)) return &entry.path;
  return nullptr;
}

bool moves(Effect e) { return e == Effect::kMoveOut || e == Effect::kMoveIn; }

// Does the effect change what lies beneath its name? A directory moved away
// takes its contents along, one moved there brings the child's; a symlink
// made or moved there sends every name beneath it to wherever it points.
bool changesWhatIsBeneath(const WriteEffect& e) {
  if (moves(e.effect) && isDirectory(e.kind)) return true;
  return (e.effect == Effect::kCreate || e.effect == Effect::kMoveIn) && e.kind == ObjectKind::kSymlink;
}

std::string beneathChange(const WriteEffect& e) {
  return e.kind == ObjectKind::kSymlink ? "a symlink at " + quote(e.path) + " would send elsewhere"
                                        : "moving " + quote(e.path) + " would move";
}

// Entries of a git directory git reads its configuration and hooks from, and
// the names that make a directory one -- by their keys (a case-insensitive
// directory's CONFIG is its config).
constexpr std::string_view kGitConfigEntries[] = {"config", "config.worktree", "hooks", "info", "commondir"};
constexpr std::string_view kGitShapeEntries[] = {"head", "objects", "refs", "commondir"};

template <std::size_t N>
bool among(const std::string_view (&list)[N], std::string_view name) {
  std::string storage;
  return std::find(std::begin(list), std::end(list), foldedName(name, storage)) != std::end(list);
}

bool isEntry(std::string_view name, std::string_view key) {
  std::string storage;
  return foldedName(name, storage) == key;
}

std::string_view parentOf(std::string_view path) {
  std::size_t cut = path.rfind('/');
  return cut == 0 ? std::string_view("/") : path.substr(0, cut);
}

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

WriteRules::WriteRules(const DerivedRules& rules) : WriteRules(rules, brokeredTrees(rules), {}) {}

WriteRules::WriteRules(const DerivedRules& rules, std::vector<std::string> trees, std::vector<std::string> ownTrees)
    : trees_(std::move(trees)),
      ownTrees_(std::move(ownTrees)),
      readOnlyInView_(keyed(rules.filesystem().denyRead)),
      denyWrite_(keyed(rules.filesystem().denyWrite)),
      mandatoryDenyWrite_(keyed(rules.filesystem().mandatoryDenyWrite)),
      names_(rules.filesystem().protectedNames) {
  for (const auto* list : {&rules.filesystem().allowWrite, &rules.filesystem().defaultWrite})
    writable_.insert(writable_.end(), list->begin(), list->end());
  std::sort(writable_.begin(), writable_.end());  // for deepestContaining(), on every brokered call
}

std::vector<WriteRules::RulePath> WriteRules::keyed(const std::vector<std::string>& paths) {
  std::vector<RulePath> out;
  for (const auto& p : paths) out.push_back({p, foldedPath(p)});
  return out;
}

std::optional<std::size_t> WriteRules::treeOf(std::string_view path) const {
  // The deepest tree wins (one can be bound inside a mask, or inside the
  // private /tmp, in another), unless the sandbox's own tree lies between.
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trees_.size(); ++i)
    if (isWithin(path, trees_[i]) && (!best || trees_[i].size() > trees_[*best].size())) best = i;
  if (!best) return std::nullopt;
  for (const auto& own : ownTrees_)
    if (own.size() > trees_[*best].size() && isWithin(path, own)) return std::nullopt;
  return best;
}

std::optional<WriteVerdict> WriteRules::refusal(const WriteEffect& e) const {
  // What the child's own view says first: a read mask (or a carve-out in
  // one) is a read-only mount there -- unless the tree itself is bound
  // deeper, over the mask.
  const auto tree = treeOf(e.path);
  const std::size_t treeDepth = tree ? trees_[*tree].size() : 0;
  std::string keyStorage;
  const std::string_view key = foldedPath(e.path, keyStorage);
  const std::string* mask = nullptr;
  for (const auto& entry : readOnlyInView_)
    if (isWithin(key, entry.key) && entry.path.size() >= treeDepth) mask = &entry.path;
  if (mask)
    return refuse(EROFS, "filesystem.denyRead " + quote(*mask), "read-denied paths are read-only masks in the sandbox",
                  e.path);
  // A directory above a mask moved away takes the read-denied object out
  // from under its rule: by its new name the broker would open it for the
  // child, to read as well as write. A symlink there would redirect the name.
  if (changesWhatIsBeneath(e))
    if (const auto* d = strictlyBeneathKey(readOnlyInView_, key))
      return refuse(EACCES, "filesystem.denyRead " + quote(*d),
                    beneathChange(e) + " the read-denied " + quote(*d) + " out from under its mask", e.path);
  for (const auto* list : {&denyWrite_, &mandatoryDenyWrite_}) {
    const char* field = list == &denyWrite_ ? "filesystem.denyWrite " : "filesystem.mandatoryDenyWrite ";
    const char* why = list == &denyWrite_ ? "the policy denies writes here" : "git's configuration names it: a core.hooksPath, a program git runs, or a file it includes";
    if (const auto* d = containingKey(*list, key)) return refuse(EACCES, field + quote(*d), why, e.path);
    // A directory moved away, or onto a name, takes the denied paths beneath
    // it along (or puts what the child made where they were); a symlink
    // there would put wherever it points in their place.
    if (changesWhatIsBeneath(e))
      if (const auto* d = strictlyBeneathKey(*list, key))
        return refuse(EACCES, field + quote(*d), beneathChange(e) + " " + quote(*d) + ": " + why, e.path);
  }
  if (const auto* n = names_.protecting(e.path, isDirectory(e.kind)))
    return refuse(EACCES, "protected name " + quote(n->text()), std::string(protectedNameReason(*n)), e.path);
  if (changesWhatIsBeneath(e))
    if (const auto* n = names_.contextOf(e.path))
      return refuse(EACCES, "protected name " + quote(n->text()), beneathChange(e) + " what the name protects",
                    e.path);
  // Only files, directories and symlinks arrive at names in a writable tree
  // (an allow-list of kinds): the host's tools open whatever they find at the
  // names they read -- git its index, an editor or a search every file -- and
  // a FIFO there blocks them for good, a device node is the device.
  if (e.kind == ObjectKind::kSpecial && (e.effect == Effect::kCreate || e.effect == Effect::kMoveIn))
    return refuse(EPERM, "special file in a writable tree",
                  "a FIFO, socket or device node in a writable tree hangs or is opened by the host's next tool there "
                  "(a FIFO at .git/index stops git status)",
                  e.path);
  // Outside every write entry: in a tree that holds one the host does not
  // have yet. A directory on the way to one may be made (mkdir -p); nothing
  // else there is the child's to change -- read-only, as it was before.
  if (tree && !deepestContaining(writable_, e.path)) {
    const bool onTheWay = e.effect == Effect::kCreate && e.kind == ObjectKind::kDirectory &&
                          std::any_of(writable_.begin(), writable_.end(), [&](const std::string& w) {
                            return w.size() > e.path.size() && isWithin(w, e.path);
                          });
    if (!onTheWay)
      return refuse(EROFS, "filesystem.allowWrite",
                    "no writable tree holds it (the brokered " + quote(trees_[*tree]) +
                        " only holds a writable tree the host did not have yet)",
                    e.path);
  }
  return std::nullopt;
}

bool WriteRules::nameProtectsEntries(std::string_view dir) const {
  return names_.protecting(std::string(dir) + "/config", false) != nullptr;
}

std::vector<std::string> WriteRules::gitDirCandidates(const std::vector<WriteEffect>& effects) const {
  std::vector<std::string> out;
  auto add = [&](std::string_view dir, std::string_view tree) {
    if (!isWithin(dir, tree) || nameProtectsEntries(dir)) return;
    if (std::find(out.begin(), out.end(), dir) == out.end()) out.emplace_back(dir);
  };
  for (const auto& e : effects) {
    auto tree = treeOf(e.path);
    if (!tree) continue;
    const std::string& root = trees_[*tree];
    // Every component git reads configuration from, at any depth: its parent.
    for (std::size_t i = root == "/" ? 0 : root.size(); i < e.path.size();) {
      std::size_t next = e.path.find('/', i + 1);
      if (next == std::string::npos) next = e.path.size();
      std::string_view name = std::string_view(e.path).substr(i + 1, next - i - 1);
      if (among(kGitConfigEntries, name)) add(std::string_view(e.path).substr(0, i == 0 ? 1 : i), root);
      i = next;
    }
    // A name that makes a git directory: its parent.
    std::string_view last = std::string_view(e.path).substr(e.path.rfind('/') + 1);
    if (among(kGitShapeEntries, last)) add(parentOf(e.path), root);
  }
  return out;
}

std::optional<WriteVerdict> WriteRules::gitDirRefusal(const std::vector<WriteEffect>& effects,
                                                      const std::map<std::string, GitDirContents>& contents) const {
  const std::string kRule = "protected name \"HEAD + objects + refs\"";
  for (const auto& dir : gitDirCandidates(effects)) {
    auto found = contents.find(dir);
    const GitDirContents before = found == contents.end() ? GitDirContents{} : found->second;
    GitDirContents after = before;
    bool touchesConfiguration = false;
    // Removals first: a rename onto HEAD removes the old one and puts a new one there.
    for (bool adding : {false, true}) {
      for (const auto& e : effects) {
        if (parentOf(e.path) != dir) continue;
        const std::string_view name = std::string_view(e.path).substr(dir.size() == 1 ? 1 : dir.size() + 1);
        const bool adds = e.effect == Effect::kCreate || e.effect == Effect::kMoveIn;
        const bool removes = e.effect == Effect::kRemove || e.effect == Effect::kMoveOut;
        if ((adding && !adds) || (!adding && !removes)) continue;
        // Git asks only that objects and refs be searchable (access(X_OK)):
        // a symlink to a directory, or an executable file, passes as well as
        // a directory -- any kind counts.
        if (isEntry(name, "head")) after.head = adding;
        if (isEntry(name, "objects")) after.objects = adding;
        if (isEntry(name, "refs")) after.refs = adding;
        if (isEntry(name, "commondir")) after.commondir = adding;
      }
    }
    for (const auto& e : effects)
      if (e.path.size() > dir.size() && isWithin(e.path, dir)) {
        const std::string_view rest = std::string_view(e.path).substr(dir.size() == 1 ? 1 : dir.size() + 1);
        touchesConfiguration = touchesConfiguration || among(kGitConfigEntries, rest.substr(0, rest.find('/')));
      }
    // Configuration touched in a git directory, or by the call that makes
    // one (a commondir beside HEAD sends git to the config and hooks of
    // whatever directory it names).
    if ((before.isGitDir() || after.isGitDir()) && touchesConfiguration)
      return refuse(EACCES, kRule,
                    quote(dir) + " is a git directory by its contents (a bare repository): git reads its config and "
                                 "runs its hooks",
                    dir);
    // Taking HEAD (or objects, refs) away would leave the configuration
    // writable, to be trusted again once HEAD is back.
    if (before.isGitDir() && !after.isGitDir())
      return refuse(EACCES, kRule,
                    "the call would unmake the git directory " + quote(dir) + ", leaving its configuration writable",
                    dir);
    if (!before.isGitDir() && after.isGitDir() && before.configuration)
      return refuse(EACCES, kRule,
                    "the call would make " + quote(dir) + " a git directory, with configuration the program wrote",
                    dir);
  }
  return std::nullopt;
}

WriteVerdict WriteRules::decide(const std::vector<WriteEffect>& effects, std::optional<std::uint32_t> mode,
                                const std::map<std::string, GitDirContents>& contents) const {
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
  if (auto r = gitDirRefusal(effects, contents)) return *r;
  if (mode && (*mode & (S_ISUID | S_ISGID)))
    return refuse(EPERM, "setuid/setgid mode bits",
                  "setuid/setgid bits would let a file written here run as the host's uid 0", effects.front().path);
  WriteVerdict v;
  v.action = WriteVerdict::Action::kPerform;
  v.tree = *tree;
  return v;
}

}  // namespace stockade::policy
