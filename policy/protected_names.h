// THE protected-name table: names a child must never write, at any depth of
// any writable tree, whenever they appear -- files that a shell, git, an
// editor or an agent runs or trusts the next time the host user works there
// (protected_names.cc, one row per name with the reason), and the matcher that
// decides a path against the patterns DerivedRules carry.
//
// Patterns are '/'-separated path components matched at any depth: "*" is any
// one component, "**" any number of them (zero included); every other
// component is literal. A pattern protects the object it names and everything
// beneath it, or -- marked nonDirectoryOnly -- only a non-directory at the
// name (a `.git` *file* redirects git to another git directory; a `.git`
// directory is protected through its entries).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/rules.h"

namespace stockade::policy {

struct ProtectedNameEntry {
  const char* pattern;
  bool nonDirectoryOnly;
  const char* reason;
};

// The table, in the order of protected_names.cc.
std::span<const ProtectedNameEntry> protectedNameTable() noexcept;

// The table as DerivedRules carry it.
std::vector<ProtectedName> tableProtectedNames();

// Why the table protects `pattern` ("git runs them on the host's next
// command"); empty for a pattern that is not in the table (one derived from
// git's configuration).
std::string_view protectedNameReason(const ProtectedName& name) noexcept;

// Decides paths against a set of patterns. Paths are absolute and lexically
// normal; every component of the path counts, the writable tree's own
// ancestors included (a tree at ~/.git/hooks is protected as a whole).
// Components are compared by their keys (name_fold.h): `.GIT/Hooks`,
// `.bashrc.` and `.ba\u017fhrc` are `.git/hooks` and `.bashrc`, as a
// case-insensitive directory takes them.
class ProtectedNameMatcher {
 public:
  explicit ProtectedNameMatcher(std::vector<ProtectedName> names);
  // Views into its own names: a copy is compiled afresh (a move keeps them).
  ProtectedNameMatcher(const ProtectedNameMatcher& other) : ProtectedNameMatcher(other.names_) {}
  ProtectedNameMatcher& operator=(const ProtectedNameMatcher& other) {
    if (this != &other) *this = ProtectedNameMatcher(other.names_);
    return *this;
  }
  ProtectedNameMatcher(ProtectedNameMatcher&&) = default;
  ProtectedNameMatcher& operator=(ProtectedNameMatcher&&) = default;

  // The pattern that protects the object at `path` (a directory or not), or
  // nullptr.
  const ProtectedName* protecting(std::string_view path, bool isDirectory) const;
  // The pattern that would protect something beneath a directory at `path`
  // because of the names along `path` itself ("/w/.git" for ".git/hooks",
  // "/w/.git/modules/a" for ".git/modules/**/hooks"), or nullptr. Moving such
  // a directory, or another directory onto its name, would move protection
  // away from what it covers or onto what the child filled.
  const ProtectedName* contextOf(std::string_view path) const;

  const std::vector<ProtectedName>& names() const noexcept { return names_; }

 private:
  struct Compiled {
    std::vector<std::string_view> parts;  // into names_
    const ProtectedName* name;
  };
  template <typename Visit>
  const ProtectedName* firstMatch(std::string_view path, Visit&& matches) const;

  std::vector<ProtectedName> names_;
  std::vector<std::string> keys_;  // each pattern's components by their keys, aligned with names_
  std::vector<Compiled> compiled_;
  // By first component, sorted; those starting with a wildcard apart.
  std::vector<std::pair<std::string_view, std::size_t>> byFirst_;
  std::vector<std::size_t> wildFirst_;
};

// "/a/b/c" -> {"a", "b", "c"}. `path` must be absolute and lexically normal.
std::vector<std::string_view> pathComponents(std::string_view path);

}  // namespace stockade::policy
