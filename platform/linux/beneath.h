// Names resolved by the kernel beneath a pinned directory, never by string
// checks: openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from a directory
// fd refuses, atomically and whatever changes under it, every resolution that
// would leave the directory -- a "..", an absolute path, an absolute symlink,
// a relative symlink that climbs out, a /proc magic link. Used by the
// workspace (src/workspace) for every file the host touches on a sandbox's
// behalf.
//
// Thread-safe: plain system calls on caller-owned fds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <variant>

#include "platform/sys_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

enum class Symlinks {
  kFollowBeneath,  // symlinks are followed as long as every step stays beneath the directory
  kRefuse,         // any symlink along the path fails with ELOOP (RESOLVE_NO_SYMLINKS)
};

// openat2(dirFd, rel, flags | O_CLOEXEC, RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS [| RESOLVE_NO_SYMLINKS]). Opens existing objects only:
// create a name with an *at() call on the single last component, in a parent
// opened here. `rel` is relative ("" and
// "." name the directory itself). A resolution that would escape fails with
// EXDEV (or ELOOP for a refused symlink); EAGAIN (a rename raced the walk)
// is retried a few times. `what` names the directory in the error
// ("workspace").
SysResult<UniqueFd> openBeneath(int dirFd, const char* what, const std::string& rel, int flags,
                                Symlinks symlinks = Symlinks::kFollowBeneath);

// The path the kernel has for an open file (readlink("/proc/self/fd/N")):
// the real path of the object the fd pins, whatever name was used to open it.
SysResult<std::string> fdPath(int fd);

// A new open file description for the object an O_PATH fd pins (through
// /proc/self/fd/N, which names exactly that object: no path is walked again).
SysResult<UniqueFd> reopen(int pathFd, int flags);

// The id of the mount an fd lies on (statx STATX_MNT_ID, Linux 5.8).
SysResult<std::uint64_t> mountId(int fd);

enum class RenameMode {
  kReplace,    // renameat(): replaces what is at `to`
  kNoReplace,  // RENAME_NOREPLACE: EEXIST when something is at `to`
  kExchange,   // RENAME_EXCHANGE: swaps the two, both must exist
};
// renameat2(fromDir, from, toDir, to, mode). Names are single components or
// paths relative to their directories.
SysResult<std::monostate> renameAt(int fromDir, const std::string& from, int toDir, const std::string& to,
                                   RenameMode mode);

}  // namespace stockade::platform
