// Per-user kernel counters. The kernel counts several resources per user, and
// a sandbox's processes are the host user's: without a cap of its own a child
// could take all of one -- every inotify instance -- and leave the host user
// with EMFILE while it runs. A sandbox gets a share of each counter that can
// be capped per sandbox: a quarter (kSandboxShareDivisor) of the value the
// supervisor sees, so one sandbox leaves the host user at least three
// quarters (several sandboxes together can take more; each is capped alone).
//
// Per user namespace (/proc/sys/user/max_*, "ucounts"): a count is checked
// against the limit of its own user namespace and of every ancestor, so a
// limit in the sandbox's namespace caps the sandbox while its usage still
// counts against the host user's. The sandbox's init writes them in its own
// user namespace while it holds CAP_SYS_RESOURCE there, through its fresh
// /proc before /proc/sys becomes read-only (mounts.cc):
//   max_inotify_instances, max_inotify_watches (Linux 4.9),
//   max_fanotify_groups, max_fanotify_marks (5.13; older kernels have no
//   unprivileged fanotify at all)                      a quarter each
// The max_*_namespaces counters are left alone: seccomp refuses the program
// every call that makes a namespace (unshare, setns, clone with a namespace
// flag, clone3), so it cannot charge them, and each write costs the spawn a
// fresh sysctl lookup in the new namespace (0 would also break the init's own
// setup: cloning mount trees counts as mount namespaces).
// RLIMITs kept per user namespace (ucounts, Linux 5.14): the limit bounds the
// count of the sandbox's own namespace -- its tasks, queued signals, POSIX
// message queue bytes, locked shared memory -- and every ancestor's count
// includes it:
//   RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, RLIMIT_MEMLOCK
//                                     a quarter of the supervisor's soft limit
//                                     (an unlimited one stays unlimited: the
//                                     host user has no limit there to exhaust)
// Before 5.14 those RLIMITs count the host user's whole usage, so a share
// would starve the sandbox instead of capping it: they are left alone, and
// planUserCounterCaps() reports that as a degradation.
// System-wide, not per user: pseudo-terminals. Every devpts instance but the
// host's own draws on one count (kernel.pty.max, less the kernel.pty.reserve
// kept for the host's instance): the sandbox's instance is mounted with
// max=a quarter of that, so one sandbox cannot leave the others, and every
// container on the host, without a pty (ENOSPC).
// Not cappable per sandbox (per host user, not namespaced): epoll watches,
// pipe buffer pages, file descriptors in flight over unix sockets -- README
// "Known limits" says what bounds each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/linux/child_error.h"

namespace stockade::platform {

inline constexpr unsigned kSandboxShareDivisor = 4;

struct UserCounterCaps {
  struct Sysctl {
    std::string file;   // "sys/user/max_inotify_instances", relative to /proc
    std::string value;  // decimal
  };
  std::vector<Sysctl> sysctls;  // written by the init (applyUserCounterCaps())
  // RLIMIT shares; 0: left as inherited (privileges.h applies them).
  std::uint64_t processes = 0;          // RLIMIT_NPROC
  std::uint64_t pendingSignals = 0;     // RLIMIT_SIGPENDING
  std::uint64_t messageQueueBytes = 0;  // RLIMIT_MSGQUEUE
  std::uint64_t lockedBytes = 0;        // RLIMIT_MEMLOCK
  // The "max" of the sandbox's devpts instance (mounts.cc); never 0.
  std::uint64_t ptys = 0;
  // Set when this kernel cannot cap part of it (see above).
  std::optional<std::string> degradation;
};

// Pure: a sandbox's share of a host limit (at least 1 of a non-zero one).
std::uint64_t sandboxShare(std::uint64_t hostLimit) noexcept;

// Pure: the "max" of a sandbox's devpts instance, given kernel.pty.max and
// kernel.pty.reserve (the share of what the instances other than the host's
// may use together; at least 1).
std::uint64_t sandboxPtyShare(std::uint64_t ptyMax, std::uint64_t ptyReserve) noexcept;

// Parent side: the caps for one sandbox, from the supervisor's own values.
UserCounterCaps planUserCounterCaps();

// Child side, in the sandbox's new user namespace before it drops its
// capabilities: writes every sysctl of `caps` under `procFd` (a fresh /proc).
// Async-signal-safe; a failure is the "user-counters" step's.
bool applyUserCounterCaps(int procFd, const UserCounterCaps& caps, ChildError& error) noexcept;

}  // namespace stockade::platform
