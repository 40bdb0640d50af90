// Privileges of the child: capabilities, securebits, no_new_privs, rlimits.
//
// After dropCapabilities() the child holds no capability in any namespace and
// cannot regain one: the bounding and ambient sets are empty, and the locked
// securebits stop uid 0 (inside the user namespace) from getting capabilities
// back on execve. no_new_privs makes setuid/setgid/file capabilities inert.
#pragma once

#include <cstdint>

#include "platform/linux/child_error.h"

namespace stockade::platform {

// Soft and hard limit alike; 0: unchanged.
struct RlimitPlan {
  std::uint64_t cpuSeconds = 0;     // RLIMIT_CPU: limits.cpuSeconds where no cgroup accounts the sandbox's CPU
  std::uint64_t fileSizeBytes = 0;  // RLIMIT_FSIZE
  std::uint64_t addressSpace = 0;   // RLIMIT_AS: limits.memoryBytes where no memory cgroup is usable
  // Shares of the host user's per-user counters (user_counters.h).
  std::uint64_t processes = 0;          // RLIMIT_NPROC
  std::uint64_t pendingSignals = 0;     // RLIMIT_SIGPENDING
  std::uint64_t messageQueueBytes = 0;  // RLIMIT_MSGQUEUE
  std::uint64_t lockedBytes = 0;        // RLIMIT_MEMLOCK
};

// Child side, async-signal-safe.
bool applyRlimits(const RlimitPlan& plan, ChildError& error) noexcept;
bool dropCapabilities(ChildError& error) noexcept;
bool setNoNewPrivs(ChildError& error) noexcept;

}  // namespace stockade::platform
