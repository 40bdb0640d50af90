// The mount layer: the child's view of the filesystem.
//
//   /           the host tree, read-only, nosuid, nodev, at every depth
//   masks       an empty read-only tmpfs over every read-denied directory and
//               an empty read-only file (from a private tmpfs, never the host)
//               over every read-denied file; allowRead carve-outs bound back in
//   writable    read-write binds of the write-allowed trees
//   read-only   denyWrite and mandatory denies inside them, bound read-only;
//               their ancestors inside the writable tree pinned as mount
//               points so they cannot be renamed away
//   /proc       fresh, for the child's pid namespace
//   /dev        tmpfs with null zero full random urandom tty, devpts, shm
//   /tmp        private tmpfs
//
// planMounts() runs in the parent (it allocates); applyMounts() runs in the
// child between clone and exec and is async-signal-safe. Every path is looked
// up with openat2(RESOLVE_NO_SYMLINKS), so a symlink planted after derive()
// can neither redirect a writable bind nor move a mask.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <vector>

#include "platform/linux/child_error.h"
#include "stockade/rules.h"

namespace stockade::platform {

struct MountPlan {
  struct Mask {
    std::string path;
    bool hasCarveOut = false;  // tmpfs stays writable until carve-outs are bound
  };
  std::vector<std::string> writable;   // rw binds, host path == sandbox path
  std::vector<std::string> readOnly;   // denies inside writable trees, and /proc's kernel-wide knobs
  // Directories between a writable root and a deny inside it, bound onto
  // themselves so they are mount points: rename() and rmdir() of a mount
  // point fail with EBUSY, so `mv .git elsewhere; mkdir -p .git/hooks` cannot
  // swap a fresh writable tree in place of a read-only one.
  std::vector<std::string> pinned;
  std::vector<Mask> masks;             // outermost read denies
  std::vector<std::string> carveOuts;  // allowRead entries inside a mask
  std::vector<std::string> innerMasks; // read denies inside a carve-out
  // Deny-write paths inside writable trees that do not exist: no mount can
  // cover them without leaving a placeholder on the host.
  std::vector<std::string> uncoverableDenyWrite;
  // Write-denied files with more than one name: the read-only bind covers
  // this name only; another name in a writable tree reaches the same file.
  std::vector<std::string> linkedDenyWrite;
  // Scratch for the child (one slot per writable + carve-out source); sized by
  // planMounts() because the child may not allocate.
  mutable std::vector<int> scratch;
};

MountPlan planMounts(const DerivedRules& rules);

// The host objects the mounts of `plan` bind, cover or pin, by (device,
// inode) per path ({0, 0} for a missing one), in plan order. Mounts hold
// objects, not names: a sandbox built earlier still shows the host as the
// rules say while coveredObjects() of its plan is unchanged (prepare()).
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};
std::vector<FileIdentity> coveredObjects(const MountPlan& plan);

// Child side. Builds the view under a private staging tmpfs, pivots into it
// and leaves the process at "/". False with `error` filled on failure.
bool applyMounts(const MountPlan& plan, ChildError& error) noexcept;

}  // namespace stockade::platform
