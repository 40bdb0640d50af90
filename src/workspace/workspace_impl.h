// Inside a Workspace: the pinned directory, and the helpers every operation
// shares -- the fence, resolution beneath the pinned fd with the seeds'
// error codes, and the access rules of the moment.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <span>
#include <string>

#include "platform/linux/beneath.h"
#include "platform/unique_fd.h"
#include "src/workspace/access.h"
#include "src/workspace/sandbox_path.h"
#include "stockade/workspace.h"

namespace stockade {

struct Workspace::Impl {
  WorkspaceOptions options;
  platform::UniqueFd root;  // O_PATH | O_DIRECTORY: the pinned workspace
  std::string realPath;     // its real host path when pinned
  std::atomic<bool> checkpointBusy{false};  // one persist/restore at a time (SANDBOX_CONFLICT)
};

// What the other parts of src/workspace (checkpoints, snapshots) reach
// inside a Workspace.
struct WorkspaceInternals {
  static const Workspace::Impl& impl(const Workspace& w) { return *w.impl_; }
  static Workspace::Impl& impl(Workspace& w) { return *w.impl_; }
  static TreeExport makeExport(std::unique_ptr<TreeExport::State> state);  // tree_export.cc
};

namespace workspace {

using platform::UniqueFd;

// stale_epoch once the sandbox is gone.
WorkspaceStatus fence(const Workspace::Impl& ws);
AccessRules accessRules(const Workspace::Impl& ws);

// How a failed resolution reads for `path` (a sandbox path): EXDEV/ELOOP
// invalid_path, ENOENT not_found, ENOTDIR not_found or not_directory (`notDir`),
// EACCES/EPERM permission_denied, ENAMETOOLONG invalid_path, else unavailable.
WorkspaceError resolutionError(const platform::SysError& e, const std::string& path,
                               WorkspaceErrorCode notDir = WorkspaceErrorCode::kNotFound);
// An I/O failure of ours: unavailable, naming the operation, the path and the call.
WorkspaceError ioError(const platform::SysError& e, const std::string& what);
WorkspaceError ioError(const char* call, int error, const std::string& what);

// An object resolved beneath the workspace: an O_PATH fd and its real host path.
struct Resolved {
  UniqueFd fd;
  std::string real;
  struct stat st {};
};
// Resolves `rel` (following symlinks that stay beneath, or not the final one
// with O_NOFOLLOW in `flags`), as O_PATH.
WorkspaceResult<Resolved> resolve(const Workspace::Impl& ws, const SandboxPath& path, int flags,
                                  WorkspaceErrorCode notDir = WorkspaceErrorCode::kNotFound);
// The directory at `path`, created with its missing parents. Before the
// first is made, every name to be created is asked of the access rules --
// each missing directory, and `leaf` (a file the caller will make in the
// last) -- so that a refusal leaves nothing behind. `created`: whether the
// last one was.
WorkspaceResult<Resolved> ensureDirectory(const Workspace::Impl& ws, const AccessRules& rules,
                                          const SandboxPath& path, bool* created = nullptr,
                                          std::string_view leaf = {});

// The directory at `path`, which the sandbox may read: not_directory,
// permission_denied (`verb`: "listed", "watched", "exported") otherwise.
WorkspaceResult<Resolved> readableDirectory(const Workspace::Impl& ws, const AccessRules& rules,
                                            const SandboxPath& path, const char* verb);

// Copies everything `read(span)` gives (a count, 0 at the end) to
// `write(string_view)` through one buffer: the streaming loop of download(),
// upload() and exportTree() into a sink.
template <typename Read, typename Write>
WorkspaceStatus pumpBytes(Read&& read, Write&& write) {
  std::string buf(std::size_t{1} << 18, '\0');
  for (;;) {
    auto n = read(std::span<char>(buf));
    if (auto* e = std::get_if<WorkspaceError>(&n)) return std::move(*e);
    std::size_t got = std::get<std::size_t>(n);
    if (got == 0) return std::nullopt;
    if (auto e = write(std::string_view(buf.data(), got))) return e;
  }
}

// A random name for a temporary in a directory: "<prefix><16 hex digits>".
std::string temporaryName(std::string_view prefix);

// Removes the tree at `name` in `parentFd` (not following symlinks),
// deepest first. The error names the first call that failed.
std::optional<platform::SysError> removeTree(int parentFd, const std::string& name);

// An import's staging directories are named with this prefix and held
// flock()ed by the process importing (tree_import.cc): one that is not held
// was left by a process killed (SIGKILL) mid-import.
inline constexpr std::string_view kStagingPrefix = ".stockade-import-";
// Removes the staging directories in `dirFd` that no live process holds.
// Best effort: one that cannot be removed stays for the next sweep.
void sweepStaleStaging(int dirFd);

// A deadline; time_point::max() when none.
using Deadline = std::chrono::steady_clock::time_point;

}  // namespace workspace
}  // namespace stockade
