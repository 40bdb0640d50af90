// Path helpers for derive() and narrowing(): lexical normalisation, prefix
// containment, symlink resolution (lstat/readlink only) and glob expansion.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

// "/a/./b//c/../d/" -> "/a/b/d". `path` must be absolute.
std::string lexicallyNormal(std::string_view path);

// True when `path` is `root` or lies beneath it (component-wise: "/ab" is not
// within "/a"). Both must be lexically normal.
bool isWithin(std::string_view path, std::string_view root) noexcept;

// The real path of `path` (absolute, normal): every symlink on the way is
// followed, including a dangling last one; the part that does not exist is
// appended as written. nullopt when a symlink loop is found.
std::optional<std::string> resolvePath(std::string_view path);

// True when the text contains glob metacharacters (`*`, `?`, `[`).
bool hasGlob(std::string_view text) noexcept;

// The existing paths that match an absolute glob pattern (`**` crosses any
// number of directories, other components use fnmatch). Symlinked directories
// are not descended into. nullopt when more than `maxVisited` entries had to
// be examined.
std::optional<std::vector<std::string>> expandGlob(std::string_view pattern, std::size_t maxVisited);

}  // namespace stockade::policy
