// The sandbox cgroup: limits.pids, limits.memoryBytes and limits.cpuSeconds
// for the WHOLE sandbox (every process in it together), not per process.
// Made only when one of those limits is set; nothing is created otherwise.
//
// Controllers, each found at run time from /proc/self/mountinfo and
// /proc/self/cgroup, cgroup2 first:
//   pids     pids.max = limits.pids + 1 (the sandbox's own init is not counted
//            against the program); a fork beyond it fails with EAGAIN.
//   memory   memory.max (v2) / memory.limit_in_bytes (v1) = limits.memoryBytes,
//            swap included (memory.swap.max = 0; memory.memsw.limit_in_bytes),
//            so swapping out does not dodge it. Every page a task of the
//            sandbox faults in is charged, tmpfs, /dev/shm and memfd pages
//            included (they are no address space, so RLIMIT_AS never saw
//            them). Over the limit the kernel's OOM killer kills: on cgroup2
//            the whole sandbox (memory.oom.group = 1); on v1 one task, and the
//            supervisor kills the rest when it sees the OOM kill (see
//            needsWatching()). Socket buffers: charged to memory.max on
//            cgroup2; on v1 to the cgroup's own socket counter,
//            memory.kmem.tcp.limit_in_bytes = limits.memoryBytes (beyond it
//            a socket's allocation fails: a datagram is dropped).
//   cpu      CPU time accounting only (cgroup2 cpu.stat usage_usec, which
//            every cgroup2 cgroup has; v1 cpuacct.usage). The kernel has no
//            CPU *time* limit: the supervisor reads the usage on a timer and
//            kills the sandbox once it reaches limits.cpuSeconds
//            (limitToKillFor()).
// Where: in order of preference
//   1. cgroup2: our own cgroup in the unified hierarchy, when (for pids and
//      memory) its cgroup.subtree_control enables the controller and we may
//      create a child cgroup there and move tasks into it. The sandbox's init
//      is cloned straight into it (clone3(CLONE_INTO_CGROUP), Linux 5.7).
//   2. cgroup v1: our own cgroup in the hierarchy that carries the controller
//      (cpuacct for cpu), when we may create a child cgroup there. v1 has no
//      CLONE_INTO_CGROUP: the parent opens the new cgroups' "tasks" files and
//      the child, still single-threaded, writes "0" (itself) into each
//      (joinCgroups()) before it forks the program. Not the parent writing the
//      child's pid into cgroup.procs: that takes the global
//      cgroup_threadgroup_rwsem for writing, an RCU grace period (~12 ms here)
//      on every first move of a process; a thread moving itself skips that
//      lock. The permission check uses the opener's credentials.
// A hybrid host may use both: here cpu in cgroup2, pids and memory in v1.
// No usable hierarchy for a controller (an unprivileged user without a
// delegated cgroup): the caller reports a degradation (spawn.h), it never runs
// silently unlimited.
//
// Each directory is <own cgroup>/stockade-<supervisor pid>-<n>, removed
// (rmdir) once the sandbox has exited; SandboxCgroup's destructor does it too,
// so no failure path leaves one behind, and the directories of supervisors
// that died without cleaning up are swept by the next one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "platform/linux/child_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

enum class CgroupController { kPids, kMemory, kCpu };
// "pids", "memory", "cpu".
const char* cgroupControllerName(CgroupController controller) noexcept;

// What enforces one whole-sandbox limit.
enum class LimitMechanism {
  kNone,      // not asked for, or nothing usable (then a degradation says why)
  kCgroup2,   // a cgroup2 controller, clone3(CLONE_INTO_CGROUP)
  kCgroupV1,  // a cgroup v1 hierarchy, joined through "tasks" before the child may fork
  kRlimit,    // the per-process fallback (RLIMIT_AS, RLIMIT_CPU); a degradation says so
};
// "none", "cgroup2", "cgroup-v1", "rlimit": the name used in reports and audit events.
const char* limitMechanismName(LimitMechanism mechanism) noexcept;

// One cgroup hierarchy, and this process's own cgroup in it.
struct CgroupHierarchy {
  LimitMechanism mechanism = LimitMechanism::kNone;  // kCgroup2 or kCgroupV1
  std::string ownCgroupDir;  // absolute, e.g. /sys/fs/cgroup/pids/user.slice
  // Bits (1 << CgroupController) of the controllers mounted there (v1); for
  // cgroup2 all of them: whether our cgroup may use one is checked on the host.
  unsigned controllers = 0;
  // Every read-write mount point of this hierarchy in our mount namespace,
  // whatever subtree it shows (a bind of it anywhere, /sys/fs/cgroup or
  // not): a sandbox that may write beneath one could move itself into
  // another cgroup, or raise its own cgroup's limits.
  std::vector<std::string> writableMounts;
  bool has(CgroupController c) const noexcept { return controllers & (1u << static_cast<unsigned>(c)); }
};

// Pure: the candidate hierarchies, cgroup2 first, given the text of
// /proc/self/mountinfo and /proc/self/cgroup. A cgroup2 mount is a candidate
// whatever its controllers (findCgroupControllers() checks them); a v1 mount
// only when it carries pids, memory or cpuacct. A mount whose root does not
// contain our cgroup (a bind of another subtree) is skipped.
std::vector<CgroupHierarchy> cgroupHierarchies(std::string_view mountinfo, std::string_view procCgroup);

// Pure: our own cgroup directory in the cgroup v1 hierarchy that carries
// `controller` (any v1 controller by its mount option: "freezer"), given the
// text of /proc/self/mountinfo and /proc/self/cgroup; nullopt when no such
// hierarchy is mounted or its mount does not show our cgroup.
std::optional<std::string> v1CgroupDir(std::string_view controller, std::string_view mountinfo,
                                       std::string_view procCgroup);

// Where each controller would live on this host: the first usable hierarchy
// that has it, or why none is (one reason per candidate, for the degradation).
struct CgroupControllers {
  std::variant<CgroupHierarchy, std::string> pids, memory, cpu;
  const std::variant<CgroupHierarchy, std::string>& of(CgroupController c) const noexcept;
};
CgroupControllers findCgroupControllers();
// One of them (tests, and the manager's narrowing check).
std::variant<CgroupHierarchy, std::string> findCgroupController(CgroupController controller);

// The limits one sandbox cgroup carries; 0: not in the cgroup (not asked
// for, or enforced otherwise).
struct CgroupLimits {
  std::uint64_t pids = 0;
  std::uint64_t memoryBytes = 0;
  std::uint64_t cpuSeconds = 0;
  bool any() const noexcept { return pids || memoryBytes || cpuSeconds; }
};

// What a sandbox cgroup has counted so far.
struct CgroupUsage {
  std::optional<std::uint64_t> cpuNanoseconds;  // when cpu is accounted
  std::uint64_t oomKills = 0;      // tasks the memory controller's OOM killer killed
  std::uint64_t forksRefused = 0;  // forks refused at pids.max
};

// Pure. The limit the whole sandbox must be killed for: "limits.memoryBytes"
// once the OOM killer killed one of its tasks (on cgroup v1 it kills one
// task; the sandbox goes as a whole), "limits.cpuSeconds" once its CPU time
// reached the limit; nullptr otherwise.
const char* limitToKillFor(const CgroupUsage& usage, const CgroupLimits& limits) noexcept;
// Pure. For the exit report: limitToKillFor(), else "limits.pids" when a fork
// was refused at the limit (the program lives on with EAGAIN), else nullptr.
const char* limitReached(const CgroupUsage& usage, const CgroupLimits& limits) noexcept;

// One sandbox's cgroups (one directory per hierarchy used). Move-only; empty
// when default-constructed.
class SandboxCgroup {
 public:
  SandboxCgroup() = default;
  SandboxCgroup(SandboxCgroup&& other) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&& other) noexcept;
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;
  ~SandboxCgroup();  // remove(), best effort

  // Creates the directories for every non-zero limit, in the hierarchy
  // `where` names for its controller (which must be usable), and writes the
  // limits. The error names the call, its arguments and errno.
  static std::variant<SandboxCgroup, std::string> create(const CgroupControllers& where, const CgroupLimits& limits);

  bool valid() const noexcept { return !dirs_.empty(); }
  const CgroupLimits& limits() const noexcept { return limits_; }
  LimitMechanism mechanismOf(CgroupController c) const noexcept;
  // The directory holding controller `c` ("" when none does).
  const std::string& pathOf(CgroupController c) const noexcept;
  // The cgroup2 directory, for clone_args.cgroup; -1 when nothing is in cgroup2.
  int cgroup2DirFd() const noexcept;

  // cgroup v1: the "tasks" file of each v1 directory, opened for joinCgroups().
  std::variant<std::vector<UniqueFd>, std::string> openForSelfJoin() const;

  // Whether the supervisor must read usage() while the sandbox runs and kill
  // it when limitToKillFor() says so: limits.cpuSeconds, and
  // limits.memoryBytes on cgroup v1 (no memory.oom.group there).
  bool needsWatching() const noexcept;
  // Reads the counters. The error names the file.
  std::variant<CgroupUsage, std::string> usage() const;

  // rmdir() of every directory; call once every task in it has been reaped.
  // Idempotent (a directory already gone is not an error). Retries EBUSY for
  // up to 100 ms (tasks still exiting); with live tasks, it fails after that.
  std::optional<std::string> remove() const;

 private:
  struct Dir {
    LimitMechanism mechanism = LimitMechanism::kNone;
    unsigned controllers = 0;  // bits of CgroupController held here
    std::string path;
    UniqueFd fd;
  };
  const Dir* dirOf(CgroupController c) const noexcept;
  std::vector<Dir> dirs_;
  CgroupLimits limits_;
};

// create() and, for cgroup v1, openForSelfJoin() in one.
struct PreparedCgroup {
  SandboxCgroup cgroup;
  std::vector<UniqueFd> selfJoin;  // v1 "tasks" files, for the child (empty: cgroup2 only)
};
std::variant<PreparedCgroup, std::string> prepareSandboxCgroup(const CgroupControllers& where,
                                                               const CgroupLimits& limits);

// cgroup v1, in the child: moves the calling thread -- the whole process, as
// long as it is single-threaded -- into each cgroup whose "tasks" file is in
// `tasksFds` (openForSelfJoin(); -1 entries are skipped), then closes them.
// ASYNC-SIGNAL-SAFE (runs between clone and exec); a failure is the "cgroup"
// step's.
bool joinCgroups(const int* tasksFds, int count, ChildError& error) noexcept;

}  // namespace stockade::platform
