// The write broker's decision, apart from the kernel: given what a call does
// to which names (resolved in the child's view by platform/linux/write_broker)
// and the rules, say whether the broker performs it, refuses it (naming the
// rule), or leaves it to the kernel. Pure: no system call, no I/O.
//
// The child has no write right of its own inside a brokered tree: its view
// of each one is read-only and Landlock grants it nothing there, so every
// write-shaped call into one is performed by the broker or fails in the
// kernel. Calls that touch no brokered tree are the kernel's to decide, with
// the child's own (private) rights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/protected_names.h"
#include "stockade/rules.h"

namespace stockade::policy {

// The writable trees whose writes are brokered: the outermost allowWrite and
// defaultWrite paths that are host objects (the sandbox's private /tmp,
// /dev and /proc are not), sorted. The mount layer binds exactly these,
// read-only.
std::vector<std::string> brokeredTrees(const DerivedRules& rules);
// True for a path the mount layer builds privately for the sandbox instead of
// binding it from the host: /tmp itself, and anything in /dev or /proc.
bool builtPrivately(std::string_view path) noexcept;

// What kind of object is at a name, or arrives there. A symlink is told
// apart: one arriving at a name sends what is beneath the name elsewhere;
// so is a special file (a FIFO, socket or device node), which no name in a
// writable tree may get: the host's next tool to open it there hangs (a FIFO
// at .git/index stops every `git status`) or reaches a device.
enum class ObjectKind : std::uint8_t { kNone, kDirectory, kOther, kSymlink, kSpecial };

// What a call does to one name.
enum class Effect : std::uint8_t {
  kModify,      // the object's contents or metadata change (write-open, truncate, chmod, chown, times, xattrs)
  kCreate,      // a new object appears at the name (O_CREAT, mkdir, mknod, symlink, link's new name)
  kRemove,      // the name goes away (unlink, rmdir)
  kMoveOut,     // the object leaves the name (rename's source; both names of an exchange)
  kMoveIn,      // an object arrives at the name (rename's destination; both names of an exchange)
  kLinkSource,  // the object gets another name (link's source)
};
const char* effectName(Effect effect) noexcept;

struct WriteEffect {
  Effect effect;
  std::string path;  // absolute, lexically normal, in the child's view
  // kCreate/kMoveIn: the object that arrives; otherwise the one that is there.
  ObjectKind kind = ObjectKind::kOther;
};

struct WriteVerdict {
  enum class Action : std::uint8_t {
    kNotBrokered,  // no effect lies in a brokered tree: the kernel decides, with the child's own rights
    kPerform,      // every effect lies in brokered tree `tree`: the broker performs the call
    kRefuse,       // a rule refuses it: answer `error`, audit `rule`
    kFail,         // it cannot work as asked (two trees: EXDEV; a tree's own root: EBUSY): answer `error`
  };
  Action action = Action::kNotBrokered;
  int error = 0;
  std::string rule;    // kRefuse: `protected name ".git/hooks"`, `filesystem.denyWrite "/w/.env"`, ...
  std::string reason;  // kRefuse: why the rule exists
  std::string path;    // kRefuse/kFail: the effect's path that decided
  std::size_t tree = 0;  // kPerform: index into WriteRules::trees()
};

// What the broker found in a directory that could be a git directory by its
// contents rather than its name -- a bare repository, or a git directory
// kept under another name -- which git reads config and hooks from as it
// does from .git (git's own test, is_git_directory(): HEAD, and objects and
// refs that can be searched -- a directory, a symlink to one, or an
// executable file -- or a commondir naming a directory that has them).
// Each entry counts whatever its kind.
struct GitDirContents {
  bool head = false, objects = false, refs = false, commondir = false;
  // config, config.worktree, hooks, info or commondir: what git would read
  // there, or be sent to another directory's by.
  bool configuration = false;
  bool isGitDir() const { return head && ((objects && refs) || commondir); }
};

// The write-relevant part of DerivedRules, compiled once per sandbox.
class WriteRules {
 public:
  // The trees of brokeredTrees(rules), nothing of the sandbox's own inside.
  explicit WriteRules(const DerivedRules& rules);
  // The trees a mount plan binds (MountPlan::brokeredTrees()), and where the
  // sandbox shows its own trees instead (MountPlan::ownTrees()): a path
  // belongs to the deepest tree holding it, unless an own tree deeper than
  // that tree holds it too.
  WriteRules(const DerivedRules& rules, std::vector<std::string> trees, std::vector<std::string> ownTrees);

  const std::vector<std::string>& trees() const noexcept { return trees_; }
  // The brokered tree that holds `path`, or nullopt.
  std::optional<std::size_t> treeOf(std::string_view path) const;

  // The directories whose contents the decision of `effects` depends on
  // (from the names alone): parents of an entry git reads config from, and
  // of a name that makes a git directory. Directories whose entries are
  // protected by name (".git") are not among them.
  std::vector<std::string> gitDirCandidates(const std::vector<WriteEffect>& effects) const;

  // `mode`: the mode bits a create or chmod sets, when it sets any.
  // `contents`: what the broker found in the gitDirCandidates(); one missing
  // is taken as holding none of git's names.
  WriteVerdict decide(const std::vector<WriteEffect>& effects, std::optional<std::uint32_t> mode = std::nullopt,
                      const std::map<std::string, GitDirContents>& contents = {}) const;

 private:
  std::optional<WriteVerdict> refusal(const WriteEffect& e) const;
  std::optional<WriteVerdict> gitDirRefusal(const std::vector<WriteEffect>& effects,
                                            const std::map<std::string, GitDirContents>& contents) const;
  // True when the table protects the entries of `dir` by name (a .git).
  bool nameProtectsEntries(std::string_view dir) const;

  // A rule's path, and its key (name_fold.h): a path is within it when its
  // key is, however a case-insensitive directory lets the child spell it.
  struct RulePath {
    std::string path, key;
  };
  static std::vector<RulePath> keyed(const std::vector<std::string>& paths);

  std::vector<std::string> trees_;
  std::vector<std::string> ownTrees_;
  std::vector<RulePath> readOnlyInView_;  // denyRead entries: masked, or carved out read-only, in the child's view
  std::vector<RulePath> denyWrite_;
  std::vector<RulePath> mandatoryDenyWrite_;
  ProtectedNameMatcher names_;
  // allowWrite and defaultWrite entries, sorted. A brokered tree is one of them, or
  // holds one the host does not have yet (mounts.h): there only what is
  // inside an entry, and the directories on the way to one, may be made.
  std::vector<std::string> writable_;
};

}  // namespace stockade::policy
