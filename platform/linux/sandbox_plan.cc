#include "platform/linux/sandbox_plan.h"

#include "platform/linux/features.h"
#include "platform/linux/namespaces.h"
#include "policy/paths.h"

namespace stockade::platform {
namespace {

// Where the sandbox cgroup's controllers live, when the rules ask for one.
std::optional<CgroupControllers> cgroupsFor(const DerivedRules& rules) {
  const auto& limits = rules.limits();
  if (limits.pids == 0 && limits.memoryBytes == 0 && limits.cpuSeconds == 0) return std::nullopt;
  return findCgroupControllers();
}

// limits.pids, memoryBytes and cpuSeconds into `r`: the mechanism of each, or
// the degradation that says why it is weaker.
void probeLimits(const DerivedRules& rules, const MountPlan& mounts, const std::optional<CgroupControllers>& cgroups,
                 EnforcementReport& r) {
  if (!cgroups) return;
  const auto& limits = rules.limits();
  struct Limit {
    CgroupController controller;
    std::uint64_t value;
    const char* field;
    LimitMechanism* mechanism;
    const char* fallback;  // what enforces it without a cgroup; nullptr: nothing
  };
  const Limit kLimits[] = {
      {CgroupController::kPids, limits.pids, "limits.pids", &r.pidsLimit, nullptr},
      {CgroupController::kMemory, limits.memoryBytes, "limits.memoryBytes", &r.memoryLimit,
       "per process only, as RLIMIT_AS: address space, so tmpfs, /dev/shm, memfd and SysV shared memory pages are "
       "outside it, and each process of the sandbox may use the whole limit"},
      {CgroupController::kCpu, limits.cpuSeconds, "limits.cpuSeconds", &r.cpuLimit,
       "per process only, as RLIMIT_CPU: each process of the sandbox may use the whole limit"},
  };
  for (const auto& limit : kLimits) {
    if (limit.value == 0) continue;
    const auto& where = cgroups->of(limit.controller);
    if (const auto* h = std::get_if<CgroupHierarchy>(&where)) {
      *limit.mechanism = h->mechanism;
      // A writable cgroup tree would let the program move itself out of its
      // cgroup: any mount of the hierarchy beneath a brokered tree (the binds
      // carry their submounts, and the broker writes there) or holding one,
      // wherever it is mounted.
      for (const auto& w : mounts.brokeredTrees())
        for (const auto& m : h->writableMounts)
          if (policy::isWithin(m, w) || policy::isWithin(w, m)) {
            r.degradations.push_back(std::string(limit.field) + ": the policy makes \"" + w +
                                     "\" writable, and with it the cgroup tree mounted at \"" + m +
                                     "\" (" + h->ownCgroupDir + "): the program could leave its " +
                                     cgroupControllerName(limit.controller) + " cgroup");
            break;
          }
    } else if (limit.fallback) {
      *limit.mechanism = LimitMechanism::kRlimit;
      r.degradations.push_back(std::string(limit.field) + ": enforced " + limit.fallback + " (" +
                               std::get<std::string>(where) + ")");
    } else {
      r.degradations.push_back(std::string(limit.field) + ": not enforced: " + std::get<std::string>(where));
    }
  }
}

}  // namespace

std::vector<std::string> landlockWritable(const DerivedRules& rules, const MountPlan& mounts) {
  std::vector<std::string> out;
  for (const auto* list : {&rules.filesystem().allowWrite, &rules.filesystem().defaultWrite})
    for (const auto& p : *list) {
      if (p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/stdin" || !rules.writable(p)) continue;
      const MountView v = viewAt(mounts, p);
      if (v.writable && v.source != MountView::Source::kHost) out.push_back(p);
    }
  // Built by the mount layer, private to the sandbox.
  if (viewAt(mounts, "/tmp").source == MountView::Source::kPrivateTmp) out.emplace_back("/tmp");
  for (const char* p : {"/dev/shm", "/dev/pts"}) out.emplace_back(p);
  return out;
}

SandboxPlan planSandbox(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                        const WorkspaceMount& workspace) {
  SandboxPlan plan = planUncheckedSandbox(rules, proxyPort, workspace);
  checkSandboxPlan(rules, proxyPort, plan.writeRules ? &*plan.writeRules : nullptr, plan);
  return plan;
}

SandboxPlan planUncheckedSandbox(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                                 const WorkspaceMount& workspace) {
  SandboxPlan plan;
  plan.mounts = planMounts(rules, workspace);
  plan.cgroups = cgroupsFor(rules);
  EnforcementReport& r = plan.report;
  r.userNamespace = r.mountNamespace = r.pidNamespace = r.networkNamespace = r.ipcNamespace = r.utsNamespace = true;
  r.cgroupNamespace = cgroupNamespaceAvailable();
  if (!r.cgroupNamespace) r.degradations.push_back("cgroup namespace: not offered by this kernel; the child sees the host's cgroup paths");
  r.seccomp = true;
  r.noNewPrivs = true;
  r.landlockAbi = landlockAbi();
  if (r.landlockAbi == 0) {
    r.degradations.push_back("landlock: unavailable on this kernel; writes are restricted by read-only mounts only");
  } else {
    r.landlockFilesystem = true;
    r.landlockNetwork = r.landlockAbi >= 4;
    r.landlockScopes = r.landlockAbi >= 6;
    if (!r.landlockNetwork)
      r.degradations.push_back("landlock: ABI " + std::to_string(r.landlockAbi) +
                               " < 4: TCP connect and bind are not restricted (the network namespace still isolates the host)");
    if (!r.landlockScopes)
      r.degradations.push_back("landlock: ABI " + std::to_string(r.landlockAbi) +
                               " < 6: abstract unix sockets and signals are not scoped (the namespaces still isolate them)");
  }
  probeLimits(rules, plan.mounts, plan.cgroups, r);
  if (plan.mounts.userCounters.degradation) r.degradations.push_back(*plan.mounts.userCounters.degradation);
  // The write broker answers through SECCOMP_ADDFD_FLAG_SEND (5.14); without
  // it no brokered tree can be written, and the coverage check refuses them.
  r.brokeredTrees = plan.mounts.brokeredTrees();
  r.writeBroker = kernelAtLeast(5, 14);
  if (r.writeBroker) {
    plan.writeRules.emplace(rules, r.brokeredTrees, plan.mounts.ownTrees());
    if (!kernelAtLeast(5, 19))
      r.degradations.push_back("write broker: the kernel lacks SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19); a "
                               "signal can interrupt a write the broker has already performed (the program sees EINTR)");
  }

  plan.landlock.abi = r.landlockAbi;
  plan.landlock.writable = landlockWritable(rules, plan.mounts);
  plan.landlock.connectPort = proxyPort;
  plan.landlock.allowTcpBind = rules.network().allowLocalBinding;
  const auto& limits = rules.limits();
  plan.seccomp = {.allowUnixSockets = rules.network().unixSocketsAllowed(),
                  .limitFileSize = limits.fileSizeBytes != 0};
  // The rlimits stand in for a cgroup only where none is usable (a degradation says so).
  const auto& shares = plan.mounts.userCounters;
  plan.limits = {.cpuSeconds = r.cpuLimit == LimitMechanism::kRlimit ? limits.cpuSeconds : 0,
                 .fileSizeBytes = limits.fileSizeBytes,
                 .addressSpace = r.memoryLimit == LimitMechanism::kRlimit ? limits.memoryBytes : 0,
                 .processes = shares.processes,
                 .pendingSignals = shares.pendingSignals,
                 .messageQueueBytes = shares.messageQueueBytes,
                 .lockedBytes = shares.lockedBytes};

  auto inCgroup = [](LimitMechanism m) { return m == LimitMechanism::kCgroup2 || m == LimitMechanism::kCgroupV1; };
  plan.cgroupLimits = {.pids = inCgroup(r.pidsLimit) ? limits.pids : 0,
                       .memoryBytes = inCgroup(r.memoryLimit) ? limits.memoryBytes : 0,
                       .cpuSeconds = inCgroup(r.cpuLimit) ? limits.cpuSeconds : 0};
  return plan;
}

void checkSandboxPlan(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                      const policy::WriteRules* broker, SandboxPlan& plan) {
  EnforcementReport& r = plan.report;
  readHostMounts(rules, plan.mounts);
  const EnforcementPlan enforcement{plan.mounts,  plan.landlock, plan.seccomp,  proxyPort,
                                    plan.limits,  r.pidsLimit,    r.memoryLimit, r.cpuLimit,
                                    plan.cgroupLimits, r.degradations, broker};
  Coverage coverage = checkCoverage(rules, enforcement);
  for (const auto& g : coverage.degraded) r.degradations.push_back(g.text());
  plan.uncovered = std::move(coverage.uncovered);
}

}  // namespace stockade::platform
