// Sandbox paths ("/workspace/src/main.c") as the API receives them, checked
// and split into the relative path the kernel resolves beneath the pinned
// workspace. Pure. This is a spelling check only: it refuses what can never
// name something beneath /workspace ("..", NUL bytes, other absolute paths,
// over-long names); symlinks are the kernel's to judge (platform/linux/beneath.h).
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "stockade/workspace.h"

namespace stockade::workspace {

inline constexpr std::string_view kSandboxRoot = "/workspace";
inline constexpr std::size_t kMaxPathBytes = 4095;  // PATH_MAX without the NUL
inline constexpr std::size_t kMaxNameBytes = 255;   // NAME_MAX

struct SandboxPath {
  // Relative to the workspace: "" for /workspace itself, else "a/b/c" with no
  // "." or ".." and no empty components.
  std::string rel;

  bool isRoot() const noexcept { return rel.empty(); }
  // The last component ("" for the root).
  std::string_view leaf() const noexcept;
  // The parent's relative path ("" for a name directly in the workspace).
  std::string_view parent() const noexcept;
  // "/workspace/a/b/c".
  std::string text() const;
};

// Accepts "/workspace" and absolute paths beneath it; "." components, repeated
// and trailing slashes are dropped. `field` names the input in errors
// ("path", "query parameter path"). invalid_path otherwise.
std::variant<SandboxPath, WorkspaceError> parseSandboxPath(std::string_view path, std::string_view field = "path");

// "/workspace" + "/" + rel (rel may be "").
std::string sandboxPathOf(std::string_view rel);
// `rel` joined with a single component.
std::string joinRel(std::string_view rel, std::string_view name);

// A value for an error message: quoted, with control and non-ASCII bytes and
// quotes escaped (\x00, \"), cut after 200 bytes.
std::string quoteValue(std::string_view value);

WorkspaceError makeError(WorkspaceErrorCode code, std::string message);

}  // namespace stockade::workspace
