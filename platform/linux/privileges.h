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

struct RlimitPlan {
  std::uint64_t cpuSeconds = 0;     // RLIMIT_CPU; 0: unchanged
  std::uint64_t fileSizeBytes = 0;  // RLIMIT_FSIZE
  std::uint64_t addressSpace = 0;   // RLIMIT_AS (limits.memoryBytes)
};

// Child side, async-signal-safe.
bool applyRlimits(const RlimitPlan& plan, ChildError& error) noexcept;
bool dropCapabilities(ChildError& error) noexcept;
bool setNoNewPrivs(ChildError& error) noexcept;

}  // namespace stockade::platform
