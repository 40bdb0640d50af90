#include "src/audit/limits_event.h"

#include <cstdio>

namespace stockade {
namespace {

nlohmann::json oneLimit(platform::LimitMechanism mechanism, const std::string& cgroup) {
  if (mechanism == platform::LimitMechanism::kNone) return nullptr;
  nlohmann::json out = {{"mechanism", platform::limitMechanismName(mechanism)}};
  if (!cgroup.empty()) out["cgroup"] = cgroup;
  return out;
}

}  // namespace

nlohmann::json limitEnforcementJson(const platform::EnforcementReport& r) {
  return {{"pids", oneLimit(r.pidsLimit, r.pidsCgroup)},
          {"memory", oneLimit(r.memoryLimit, r.memoryCgroup)},
          {"cpu", oneLimit(r.cpuLimit, r.cpuCgroup)}};
}

void addExitUsage(nlohmann::json& event, const platform::ExitStatus& status) {
  if (status.limit) event["limit"] = status.limit;
  if (status.cpuTime)
    event["cpuTimeMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(*status.cpuTime).count();
}

std::string limitMessage(const platform::ExitStatus& status, const Limits& limits) {
  const std::string limit = status.limit ? status.limit : "";
  if (limit == "limits.memoryBytes")
    return limit + ": the sandbox reached its limit of " + std::to_string(limits.memoryBytes) +
           " bytes (tmpfs, /dev/shm and memfd pages count too) and the kernel's OOM killer ended a task";
  if (limit == "limits.cpuSeconds") {
    char used[32] = "?";
    if (status.cpuTime) std::snprintf(used, sizeof used, "%.2f", std::chrono::duration<double>(*status.cpuTime).count());
    return limit + ": the sandbox used " + used + " s of CPU time; its limit is " + std::to_string(limits.cpuSeconds) +
           " s";
  }
  if (limit == "limits.pids")
    return limit + ": a fork was refused (EAGAIN) at the limit of " + std::to_string(limits.pids) + " tasks";
  if (limit == "limits.fileSizeBytes")
    return limit + ": a write went past the limit of " + std::to_string(limits.fileSizeBytes) +
           " bytes per file, and the kernel's SIGXFSZ ended the program";
  return limit;
}

}  // namespace stockade
