// The mount layer: the child's view of the filesystem.
//
//   /           the host tree, read-only, nosuid, nodev, at every depth
//   masks       an empty read-only tmpfs over every read-denied directory and
//               an empty read-only file (from a private tmpfs, never the host)
//               over every read-denied file; allowRead carve-outs bound back in
//   writable    the write-allowed trees, bound READ-ONLY: the child holds no
//               write right of its own there; the write broker
//               (write_broker.h) performs its writes, call by call, through
//               the very objects bound here
//   /proc       fresh, for the child's pid namespace, its kernel-wide knobs
//               read-only
//   /dev        tmpfs with null zero full random urandom tty (read-only binds:
//               the devices stay writable, their inodes cannot be changed),
//               devpts (its own instance, capped at the sandbox's share of
//               the host's ptys: user_counters.h), shm
//   /tmp        private tmpfs
// Every tmpfs has a size: /tmp and /dev/shm sandboxTmpfsBytes() each, the
// masks, /dev and the staging tmpfs 4 KiB (they hold empty files and
// directories only, and all but the staging one are read-only). Their pages
// are charged to the memory cgroup of the task that writes them (cgroup.h).
//
// planMounts() runs in the parent (it allocates); applyMounts() runs in the
// child between clone and exec and is async-signal-safe. Every path is looked
// up with openat2(RESOLVE_NO_SYMLINKS), and the writable trees are bound from
// descriptors, so a symlink planted after derive() can neither redirect a
// writable bind nor move a mask.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <vector>

#include "platform/linux/child_error.h"
#include "platform/linux/user_counters.h"
#include "platform/unique_fd.h"
#include "stockade/rules.h"

namespace stockade::platform {

struct MountPlan {
  struct Mask {
    std::string path;
    bool hasCarveOut = false;  // tmpfs stays writable until carve-outs are bound
  };
  // The brokered trees (policy::brokeredTrees()), bound read-only, host path
  // == sandbox path. Writes in them are brokered.
  std::vector<std::string> writable;
  std::vector<std::string> readOnly;   // /proc's kernel-wide knobs
  std::vector<Mask> masks;             // outermost read denies
  std::vector<std::string> carveOuts;  // allowRead entries inside a mask
  std::vector<std::string> innerMasks; // read denies inside a carve-out
  // Deny-write paths in the sandbox's private /tmp, which the child writes
  // with rights of its own (nothing there is brokered).
  std::vector<std::string> uncoverableDenyWrite;
  // Write-denied regular files in the writable trees, and those with more
  // than one name: the broker denies writes by name, so another name reaches
  // the same file.
  std::vector<std::string> writeDenied;
  std::vector<std::string> linkedDenyWrite;
  // Scratch for the child (one slot per writable + carve-out source); sized by
  // planMounts() because the child may not allocate.
  mutable std::vector<int> scratch;
  // Mount data of the private /tmp and /dev/shm: "mode=1777,size=<bytes>".
  std::string tmpOptions;
  // Mount data of /dev/pts: a new instance with max=userCounters.ptys.
  std::string ptsOptions;
  // The sandbox's share of the host user's per-user counters (user_counters.h):
  // the sysctls are written through the fresh /proc while /proc/sys is still
  // writable; the RLIMITs are for spawn() to apply; ptys caps /dev/pts.
  UserCounterCaps userCounters;
  // The writable trees' descriptors, aligned with `writable` (-1: missing);
  // owned by the write broker, set before clone.
  std::vector<int> writableFds;
};

MountPlan planMounts(const DerivedRules& rules);

// Pure: the size of the private /tmp and of /dev/shm -- limits.memoryBytes
// when set (the memory cgroup bounds them together; without one each is
// still within the limit), else a quarter of the host's RAM each.
std::uint64_t sandboxTmpfsBytes(std::uint64_t memoryBytes, std::uint64_t physicalBytes) noexcept;

// What a sandbox's mounts were built from, for using the sandbox later
// (prepare()): mounts hold objects, not names, and a copy of the host's mount
// table. A snapshot holds every object the plan binds, covers or pins open
// (O_PATH), so none can be freed and its inode number handed to a new file
// while the snapshot lives, and watches the supervisor's mount table.
class HostSnapshot {
 public:
  HostSnapshot() = default;
  static HostSnapshot take(const MountPlan& plan);
  // True while every path names the object it named when taken (the same
  // device and inode, still linked; a write-denied file with the same number
  // of links), a missing path is still missing, and no mount was added or
  // removed in the supervisor's mount namespace.
  bool unchanged() const;

 private:
  struct Entry {
    std::string path;
    UniqueFd object;  // O_PATH; invalid when the path was missing
    dev_t device = 0;
    ino_t inode = 0;
    nlink_t links = 0;
    bool countLinks = false;  // a regular file bound read-only
  };
  std::vector<Entry> entries_;
  UniqueFd mountTable_;  // /proc/self/mountinfo: poll() says POLLPRI once the table changed
};

// Child side. Builds the view under a private staging tmpfs, pivots into it
// and leaves the process at "/". False with `error` filled on failure. The
// writable trees' descriptors are closed on the way.
bool applyMounts(const MountPlan& plan, ChildError& error) noexcept;

}  // namespace stockade::platform
