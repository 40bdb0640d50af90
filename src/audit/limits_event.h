// Whole-sandbox limits (limits.pids, memoryBytes, cpuSeconds) in audit
// records and messages, shared by the manager's audit stream and
// `stockade run --audit`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "platform/linux/process.h"
#include "platform/linux/spawn.h"
#include "stockade/policy.h"

namespace stockade {

// {"pids": ..., "memory": ..., "cpu": ...}: each {"mechanism", "cgroup"} (no
// cgroup for "rlimit"), or null when the limit is not asked for or not
// enforced (then a degradation says why).
nlohmann::json limitEnforcementJson(const platform::EnforcementReport& r);

// Adds "limit" (the limit the sandbox reached) and "cpuTimeMs" (its CPU time,
// when its cgroup accounted it) to an exit event.
void addExitUsage(nlohmann::json& event, const platform::ExitStatus& status);

// One line for the operator: which limit, its value, and what it did
// ("limits.cpuSeconds: the sandbox used 1.04 s of CPU time; its limit is 1 s").
std::string limitMessage(const platform::ExitStatus& status, const Limits& limits);

}  // namespace stockade
