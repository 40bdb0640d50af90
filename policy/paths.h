// Path helpers for derive() and narrowing(): lexical normalisation, prefix
// containment, symlink resolution (lstat/readlink only) and glob expansion.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stockade::policy {

// "/a/./b//c/../d/" -> "/a/b/d". `path` must be absolute.
std::string lexicallyNormal(std::string_view path);

// True when `path` is `root` or lies beneath it (component-wise: "/ab" is not
// within "/a"). Both must be lexically normal.
bool isWithin(std::string_view path, std::string_view root) noexcept;

// The longest entry of `sorted` (ascending, as every list of DerivedRules is)
// that `path` (absolute) is within, or nullptr: a binary search for each of `path`'s
// ancestors rather than a test of every entry, so that a spawn's checks of
// each of n paths against n entries are not n^2 string compares (1,000
// denyRead files took 13 ms that way). Exactly the entry the longest
// isWithin() match would give.
const std::string* deepestContaining(const std::vector<std::string>& sorted, std::string_view path) noexcept;

// The real path of a path (absolute): every symlink on the way is followed,
// including a dangling last one, and `..` applies to the real parent, as in the
// kernel; the part that does not exist is appended as written. resolve()
// returns nullopt when a symlink loop is found. Each distinct prefix is looked
// at (lstat, readlink) once per resolver, so one derive() costs about one
// system call per distinct directory rather than one per component per path.
// Use one resolver for one consistent pass only; it never refreshes.
class PathResolver {
 public:
  // `links`, when given, receives the real path of every symlink followed
  // on the way (the link itself, not its target).
  std::optional<std::string> resolve(std::string_view path, std::vector<std::string>* links = nullptr);

  // What lstat() said of a real path this resolver has walked through or to.
  struct Entry {
    enum Kind { kMissing, kPresent, kSymlink } kind = kMissing;
    std::string target;  // kSymlink
    dev_t device = 0;    // kPresent
    ino_t inode = 0;
    nlink_t links = 0;
    bool regularFile = false;
  };
  // nullptr when `realPath` was not looked at.
  const Entry* seen(std::string_view realPath) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  const Entry& look(std::string_view path);
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> cache_;
};

// Other names of one object: the paths beneath `roots` (in order, each tree
// breadth first) whose lstat() gives `device` and `inode`, at most `maxNames`
// of them, looking at no more than `maxVisited` entries. Symlinks and
// directories on other devices are not entered. `complete` is false when the
// budget ran out first.
struct NameSearch {
  std::vector<std::string> names;
  std::size_t visited = 0;
  bool complete = true;
};
NameSearch findNames(dev_t device, ino_t inode, const std::vector<std::string>& roots, std::size_t maxNames,
                     std::size_t maxVisited);

// Glob syntax of policy paths: `*`, `?` and `[...]` as in fnmatch, `**` for
// any number of directories, and `\` before one of `*?[]\` for that
// character itself (any other `\` is an ordinary character).

// True when the text has a glob metacharacter (`*`, `?`, `[`) not escaped.
bool hasGlob(std::string_view text) noexcept;
// `text` with every glob metacharacter (and `\`) escaped: a name that is
// never a pattern (sandbox-runtime's {"path": ..., "literal": true}).
std::string escapeGlob(std::string_view text);
// The name an escaped text spells: `\*` -> `*`.
std::string unescapeGlob(std::string_view text);

// The existing paths that match an absolute glob pattern (`**` crosses any
// number of directories, other components use fnmatch). Symlinked directories
// are not descended into. nullopt when more than `maxVisited` entries had to
// be examined.
std::optional<std::vector<std::string>> expandGlob(std::string_view pattern, std::size_t maxVisited);

}  // namespace stockade::policy
