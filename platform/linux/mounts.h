// The mount layer: the child's view of the filesystem.
//
//   /           the host tree, read-only, nosuid, nodev, at every depth -- or,
//               when "/" itself is read-denied, an empty read-only tmpfs into
//               which the allowRead carve-outs are bound (and the symlinks an
//               allowRead entry was named through re-created)
//   /proc       fresh, for the child's pid namespace; its kernel-wide knobs read-only
//   /dev        tmpfs with null zero full random urandom tty (read-only binds:
//               the devices stay writable, their inodes cannot be changed),
//               devpts (its own instance, capped at the sandbox's share of
//               the host's ptys: user_counters.h), shm
//   /tmp        private tmpfs -- unless /tmp itself is write-allowed, which
//               binds the host's /tmp instead (brokered, as below)
//   brokered    the write-allowed host trees, bound READ-ONLY: the child holds
//               no write right of its own there; the write broker
//               (write_broker.h) performs its writes, call by call, through
//               the very objects bound here, and refuses those the rules deny
//               (denyWrite, mandatory denies, protected names: no mount
//               inside a brokered tree is needed for them). allowWrite "/"
//               (allowWriteSystemPaths) makes the host root itself brokered.
//   read-only   /proc's kernel-wide knobs, and any write-denied path in the
//               sandbox's /proc, bound read-only. Nowhere else: in a brokered
//               tree the broker refuses a denied write by name, and the
//               private /tmp and /dev hold no host object a rule protects
//   masks       an empty read-only tmpfs over every read-denied directory and
//               an empty read-only file (from a private tmpfs, never the host)
//               over every read-denied file; allowRead carve-outs bound back
//   /workspace  with a workspace (WorkspaceMount): the final view of the
//               workspace's host directory -- its masks, read-only binds and
//               brokered bind included -- bound again at /workspace, last of
//               all. The host path stays visible at its own path too (a
//               policy's absolute paths keep meaning host paths); what the
//               host has at /workspace itself is hidden. So that a mount
//               point exists without creating one on the host, "/" is then
//               rebuilt (Root::kRebuilt): a tmpfs holding the host's
//               top-level entries as read-only carve-outs, and /workspace.
// Every tmpfs has a size: /tmp and /dev/shm sandboxTmpfsBytes() each, the
// masks, the empty root, /dev and the staging tmpfs 4 KiB (they hold empty
// files, directories and symlinks only, and all but the staging one are
// read-only). Their pages are charged to the memory cgroup of the task that
// writes them (cgroup.h).
//
// The plan is one list of operations in path order (every operation comes
// after those at its ancestors, so a deeper one always lands on top), built
// by simulating the view it produces (viewAt()): an operation is planned only
// where it changes what the rules need there. The same simulation lets
// checkCoverage() (coverage.h) prove the plan honours every rule.
//
// planMounts() runs in the parent (it allocates); applyMounts() runs in the
// child between clone and exec and is async-signal-safe. Every path is looked
// up with openat2(RESOLVE_NO_SYMLINKS), and each brokered tree bound is checked
// to be the object the broker holds, so a symlink planted after derive() can
// neither redirect a brokered bind nor move a mask.
#pragma once

#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "platform/linux/child_error.h"
#include "platform/linux/host_pins.h"
#include "platform/linux/mountinfo.h"
#include "platform/linux/user_counters.h"
#include "platform/unique_fd.h"
#include "stockade/rules.h"

namespace stockade::platform {

// The sandbox's workspace: a host directory shown at /workspace inside (and
// at its own path). Paths the child names beneath /workspace are the
// workspace's host paths for every decision (the rules, the write broker).
struct WorkspaceMount {
  static constexpr std::string_view kMountPoint = "/workspace";
  std::string host;  // the workspace's real path on the host; empty: no workspace
  explicit operator bool() const noexcept { return !host.empty(); }
  // A host directory other than /workspace itself: it needs its own mount.
  bool aliased() const noexcept { return !host.empty() && host != kMountPoint; }
  // The host path a sandbox path (absolute, lexically normal) names: beneath
  // /workspace, the workspace's; elsewhere the path itself.
  std::string hostPath(std::string_view sandboxPath) const;
  // Where the sandbox shows a host path: beneath the workspace, /workspace...;
  // elsewhere the path itself.
  std::string sandboxPath(std::string_view hostPath) const;
};

struct MountPlan {
  // What the sandbox's "/" is.
  enum class Root : std::uint8_t {
    kHostReadOnly,  // the host tree, read-only (the usual case)
    kHostBrokered,  // the host tree, read-only, and brokered: allowWrite "/" (allowWriteSystemPaths)
    kEmpty,         // an empty tmpfs, read-only once built: denyRead "/"
    // An empty tmpfs, read-only once built, holding the host's top-level
    // entries (kCarveOut, kLink) and the workspace's mount point: a
    // workspace is shown at /workspace.
    kRebuilt,
  };
  struct Op {
    enum class Kind : std::uint8_t {
      // Built by stockade, private to the sandbox.
      kPrivateTmp,  // a fresh tmpfs at /tmp
      kProc,        // a fresh proc for the sandbox's pid namespace
      kDev,         // the minimal /dev
      // From the host.
      kCarveOut,    // the host tree at `path`, read-only: allowRead inside a mask
      kLink,        // a symlink with `target` re-created inside a mask
      kBrokered,    // the host tree at `path`, read-only; its writes are the write broker's
      // Over what is there.
      kReadOnly,    // the view at `path`, read-only at every depth
      kMask,        // an empty read-only tmpfs (directory) or file at `path`
      // Last of all: the final view at `target` (the workspace's host path)
      // bound at `path` (/workspace), with everything mounted beneath it.
      kWorkspace,
    };
    Kind kind;
    std::string path;
    std::string target;      // kLink: the link's text; kWorkspace: the workspace's host path
    bool sealAfter = false;  // kMask: kept writable until the operations inside it are in
  };
  Root root = Root::kHostReadOnly;
  WorkspaceMount workspace;
  std::vector<Op> ops;  // in the order applied: every op after the ops at its ancestors
  // The trees the write broker serves, in the order of `writableFds`: "/"
  // when the root is kHostBrokered, then each kBrokered op's path.
  std::vector<std::string> brokeredTrees() const;
  // Where the sandbox shows its own trees (the private /tmp, /proc, /dev):
  // nothing in them is brokered but a brokered tree bound inside one.
  std::vector<std::string> ownTrees() const;
  // Write-denied regular files in the brokered trees (watched by the
  // HostSnapshot), and those with more than one name: the broker denies
  // writes by name, so another name reaches the same file.
  std::vector<std::string> writeDenied;
  std::vector<std::string> linkedDenyWrite;
  // allowWrite trees the host does not have, that no brokered tree holds (a
  // writable one, or the nearest directory the host has, brokered for it):
  // nothing is bound there, and the coverage check refuses them.
  std::vector<std::string> missingWritable;
  // Where the host mounts a brokered tree read-only, so that the broker's
  // writes still give EROFS: a brokered tree's (or the brokered root's) path
  // when the mount holding it is read-only (statvfs ST_RDONLY), and every
  // read-only mount point beneath one (the binds carry their submounts).
  // Only the coverage check reads it: readOnlyHostMounts() fills it there,
  // off the path to clone (it reads the host's mount table).
  std::vector<std::string> readOnlyHost;
  // Where the host shows a read-denied object under another name: a second
  // mount of it, of a directory in it, or of a directory holding it (a bind
  // of a denied directory elsewhere, the host's "/" again at "/host"). A mask
  // hides a path, so such a name would still show the object. Only the
  // coverage check reads it: readOnlyHostMounts() fills it there, with
  // readOnlyHost, from the same mount table.
  struct OtherName {
    std::string denied;  // the denyRead entry
    std::string path;    // where the host shows it (or a part of it) too
  };
  std::vector<OtherName> deniedElsewhere;
  // Where the host mounts a brokered tree, or a part of one, on a filesystem
  // that gives each entry a second name of its own -- vfat's and NTFS's 8.3
  // short names, an SMB server's mangled ones: `BASHRC~1` opens `.bashrc` --
  // which the broker, deciding by name, never sees. Only the coverage check
  // reads it: readHostMounts() fills it, from the same mount table.
  struct AliasingMount {
    std::string path;    // the mount point
    std::string fsType;  // "vfat", "cifs", ...
  };
  std::vector<AliasingMount> aliasingHost;
  // Scratch for the child (one slot per kBrokered and kCarveOut op); sized by
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
  // The brokered trees' descriptors, aligned with brokeredTrees() (-1:
  // missing); owned by the write broker, set before clone.
  std::vector<int> writableFds;
};

const char* mountOpName(MountPlan::Op::Kind kind) noexcept;

// What the sandbox shows at a path once the plan is applied.
struct MountView {
  enum class Source : std::uint8_t {
    kHost,        // the host's object (through the root, a bind or a carve-out)
    kEmpty,       // a mask, or the empty root: nothing of the host
    kPrivateTmp,  // the sandbox's own /tmp
    kProc,        // the sandbox's own /proc
    kDev,         // the sandbox's own /dev
  };
  Source source = Source::kHost;
  bool writable = false;  // by the child's own rights (its own trees)
  // The host's object in a brokered tree: read-only to the child, written by
  // the write broker where the rules allow it (`op` is the kBrokered op;
  // nullptr: the brokered root).
  bool brokered = false;
  const MountPlan::Op* op = nullptr;  // the operation that decided the source; nullptr: the root
};
// What the sandbox shows of the host's object at `path` (absolute and
// lexically normal: a real host path, as in the rules). An object of the
// workspace is also shown at /workspace..., with this same view; the host's
// objects beneath /workspace outside the workspace are hidden by it (kEmpty,
// `op` the kWorkspace operation).
MountView viewAt(const MountPlan& plan, std::string_view path);

// `workspace`: shown at /workspace as well (WorkspaceMount).
MountPlan planMounts(const DerivedRules& rules, const WorkspaceMount& workspace = {});

// MountPlan::readOnlyHost and ::deniedElsewhere of `plan` for `rules`, from
// the host's mount table now (read once, and only when a brokered tree or a
// read-denied path asks for it).
void readHostMounts(const DerivedRules& rules, MountPlan& plan);

// Pure: MountPlan::aliasingHost for the brokered `trees` in the mount table `table`.
std::vector<MountPlan::AliasingMount> aliasingMounts(const std::vector<std::string>& trees,
                                                     const std::vector<MountEntry>& table);

// Pure: MountPlan::deniedElsewhere for `rules` in the mount table `table`.
std::vector<MountPlan::OtherName> deniedElsewhere(const DerivedRules& rules, const std::vector<MountEntry>& table);

// Pure: the size of the private /tmp and of /dev/shm -- limits.memoryBytes
// when set (the memory cgroup bounds them together; without one each is
// still within the limit), else a quarter of the host's RAM each.
std::uint64_t sandboxTmpfsBytes(std::uint64_t memoryBytes, std::uint64_t physicalBytes) noexcept;

// What a sandbox's mounts were built from, for using the sandbox later
// (prepare()): mounts hold objects, not names, and a copy of the host's mount
// table. A snapshot holds every object the plan binds or covers pinned
// (HostPin: one O_PATH descriptor per object, shared by every snapshot of the
// process), so none can be freed and its inode number handed to a new file
// while the snapshot lives, and watches the supervisor's mount table
// (MountTableWatch, shared likewise).
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
    HostPin object;  // empty when the path was missing
    bool countLinks = false;  // a regular file bound read-only
  };
  std::vector<Entry> entries_;
  std::optional<std::uint64_t> mountTable_;  // MountTableWatch::generation() when taken
};

// Child side. Builds the view under a private staging tmpfs, pivots into it
// and leaves the process at "/". False with `error` filled on failure. The
// writable trees' descriptors are closed on the way.
bool applyMounts(const MountPlan& plan, ChildError& error) noexcept;

}  // namespace stockade::platform
