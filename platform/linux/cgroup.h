// limits.pids: a cgroup of its own per sandbox, with the pids controller.
//
// Where: found at run time from /proc/self/mountinfo and /proc/self/cgroup,
// in this order of preference:
//   1. cgroup2: our own cgroup in the unified hierarchy, when its
//      cgroup.subtree_control enables "pids" (so a child cgroup has pids.max)
//      and we may create a child cgroup there and move tasks into it. The
//      sandbox's init is cloned straight into the new cgroup
//      (clone3(CLONE_INTO_CGROUP), Linux 5.7).
//   2. cgroup v1: our own cgroup in the hierarchy that carries the pids
//      controller, when we may create a child cgroup there. v1 has no
//      CLONE_INTO_CGROUP: the parent opens the new cgroup's "tasks" file and
//      the child, still single-threaded, writes "0" (itself) into it
//      (joinPidsCgroup()) before it forks the program. Not the parent
//      writing the child's pid into cgroup.procs: that takes the global
//      cgroup_threadgroup_rwsem for writing, an RCU grace period (~12 ms
//      here) on every first move of a process; a thread moving itself
//      skips that lock. The permission check uses the opener's credentials.
// Neither usable (an unprivileged user without a delegated cgroup): the
// caller reports a degradation, it never runs silently unlimited.
//
// The cgroup is <own cgroup>/stockade-<supervisor pid>-<n>; its pids.max is
// limits.pids + 1 (the sandbox's own init is not counted against the
// program). It is removed (rmdir) once the sandbox has exited; PidsCgroup's
// destructor does it too, so no failure path leaves one behind.
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

enum class PidsMechanism {
  kNone,      // no limit asked for, or none usable (then a degradation says why)
  kCgroup2,   // cgroup2 pids controller, clone3(CLONE_INTO_CGROUP)
  kCgroupV1,  // cgroup v1 pids hierarchy, the pid written to cgroup.procs before the child may fork
};

// "none", "cgroup2", "cgroup-v1": the name used in reports and audit events.
const char* pidsMechanismName(PidsMechanism mechanism) noexcept;

// One hierarchy with the pids controller, and this process's own cgroup in it.
struct PidsHierarchy {
  PidsMechanism mechanism = PidsMechanism::kNone;
  std::string ownCgroupDir;  // absolute, e.g. /sys/fs/cgroup/pids/user.slice
};

// Pure: the candidate hierarchies, cgroup2 first, given the text of
// /proc/self/mountinfo and /proc/self/cgroup. A cgroup2 mount is a candidate
// whatever its controllers (findPidsController() checks them); a v1 mount
// only when it carries "pids". A mount whose root does not contain our
// cgroup (a bind of another subtree) is skipped.
std::vector<PidsHierarchy> pidsHierarchies(std::string_view mountinfo, std::string_view procCgroup);

// The first usable hierarchy on this host, or why none is (one reason per
// candidate, for the degradation message).
std::variant<PidsHierarchy, std::string> findPidsController();

// Owns one sandbox's cgroup directory. Move-only; empty when default-constructed.
class PidsCgroup {
 public:
  PidsCgroup() = default;
  PidsCgroup(PidsCgroup&& other) noexcept = default;
  PidsCgroup& operator=(PidsCgroup&& other) noexcept;
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  ~PidsCgroup();  // remove(), best effort

  // Creates <hierarchy.ownCgroupDir>/stockade-<pid>-<n> with pids.max =
  // maxTasks + 1 ("max" beyond the kernel's PID_MAX_LIMIT). The error names
  // the call, its arguments and errno.
  static std::variant<PidsCgroup, std::string> create(const PidsHierarchy& hierarchy, std::uint64_t maxTasks);

  bool valid() const noexcept { return dir_.valid(); }
  PidsMechanism mechanism() const noexcept { return mechanism_; }
  const std::string& path() const noexcept { return path_; }
  // The directory, for clone_args.cgroup (kCgroup2).
  int dirFd() const noexcept { return dir_.get(); }

  // cgroup v1: the cgroup's "tasks" file, opened for joinPidsCgroup().
  std::variant<UniqueFd, std::string> openForSelfJoin() const;

  // rmdir(); call once every task in it has been reaped. Idempotent (a
  // directory already gone is not an error). Retries EBUSY for up to 100 ms
  // (tasks still exiting); with live tasks in it, it fails after that wait.
  std::optional<std::string> remove() const;

 private:
  PidsMechanism mechanism_ = PidsMechanism::kNone;
  std::string path_;
  UniqueFd dir_;
};

// What spawn() needs for one sandbox: its cgroup and, for cgroup v1, the
// "tasks" fd the child joins through (invalid for cgroup2, which uses
// clone_args.cgroup = cgroup.dirFd()).
struct SandboxPidsCgroup {
  PidsCgroup cgroup;
  UniqueFd selfJoin;
};
// findPidsController(), PidsCgroup::create(), openForSelfJoin() in one; the
// error names the failing call (or why no hierarchy is usable).
std::variant<SandboxPidsCgroup, std::string> prepareSandboxPidsCgroup(std::uint64_t maxTasks);

// cgroup v1, in the child: moves the calling thread -- the whole process,
// as long as it is single-threaded -- into the cgroup whose "tasks" file
// `tasksFd` is (openForSelfJoin()), then closes it. ASYNC-SIGNAL-SAFE (runs
// between clone and exec); a failure is the "pids-cgroup" step's. No-op for
// tasksFd < 0.
bool joinPidsCgroup(int tasksFd, ChildError& error) noexcept;

}  // namespace stockade::platform
