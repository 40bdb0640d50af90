// Whether this test run must find a whole-sandbox limit enforced by a cgroup.
#pragma once

#include <unistd.h>

#include <algorithm>

#include "platform/linux/cgroup.h"
#include "tests/support/read_file.h"

namespace stockade::testing {

// As root, on a host that mounts a hierarchy with the controller, the limit
// must be enforced by a cgroup; otherwise (the unprivileged re-run) it must be
// reported as a degradation.
inline bool cgroupRequired(platform::CgroupController controller) {
  if (::geteuid() != 0) return false;
  auto found = platform::cgroupHierarchies(readWholeFile("/proc/self/mountinfo"), readWholeFile("/proc/self/cgroup"));
  return std::any_of(found.begin(), found.end(), [&](const auto& h) { return h.has(controller); });
}

inline bool pidsCgroupRequired() { return cgroupRequired(platform::CgroupController::kPids); }

}  // namespace stockade::testing
