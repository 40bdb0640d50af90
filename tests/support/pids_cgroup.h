// Whether this test run must find limits.pids enforced.
#pragma once

#include <unistd.h>

#include "platform/linux/cgroup.h"
#include "tests/support/read_file.h"

namespace stockade::testing {

// As root, on a host that mounts a pids hierarchy, the pids limit must be
// enforced; otherwise (the unprivileged re-run) it must be reported.
inline bool pidsCgroupRequired() {
  return ::geteuid() == 0 && !platform::pidsHierarchies(readWholeFile("/proc/self/mountinfo"),
                                                        readWholeFile("/proc/self/cgroup"))
                                   .empty();
}

}  // namespace stockade::testing
