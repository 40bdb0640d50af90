// The plan of one sandbox: everything prepare() decides before clone (the
// mount plan, Landlock, the seccomp filter's options, rlimits, which cgroup
// enforces each limit), the layers this kernel offers, and the coverage
// check of that plan against the rules (coverage.h). Runs in the parent;
// allocates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/linux/cgroup.h"
#include "platform/linux/coverage.h"
#include "platform/linux/landlock.h"
#include "platform/linux/mounts.h"
#include "platform/linux/privileges.h"
#include "platform/linux/seccomp.h"
#include "policy/write_decision.h"
#include "stockade/rules.h"

namespace stockade::platform {

// Which layers are active for one child.
struct EnforcementReport {
  bool userNamespace = false;
  bool mountNamespace = false;
  bool pidNamespace = false;
  bool networkNamespace = false;
  bool ipcNamespace = false;
  bool utsNamespace = false;
  bool cgroupNamespace = false;
  int landlockAbi = 0;            // 0: Landlock not applied
  bool landlockFilesystem = false;
  bool landlockNetwork = false;   // ABI >= 4: TCP connect restricted to the proxy port (unless local binding is allowed)
  bool landlockScopes = false;    // ABI >= 6: abstract unix sockets and signals scoped
  bool seccomp = false;
  bool noNewPrivs = false;
  // Writes in these trees are brokered: read-only in the sandbox's own view,
  // with no Landlock right there, every write-shaped call into them is
  // decided by the write broker (write_broker.h) when it is made -- protected
  // names, denyWrite and mandatory denies included, whether or not the name
  // exists at spawn.
  bool writeBroker = false;
  std::vector<std::string> brokeredTrees;
  // The seccomp listener wakes its answering thread on the trapped caller's
  // CPU and the caller on the answerer's (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
  // Linux 6.6; seccomp_notify.h): a brokered call's round trip. Set once the
  // sandbox is ready; false before Linux 6.6, where the loop answers the
  // listener between its other events (slower, not weaker).
  bool synchronousWakeUp = false;
  // limits.pids, limits.memoryBytes, limits.cpuSeconds: what enforces each
  // for the whole sandbox (cgroup.h). kNone when the limit is not asked for,
  // or (pids) when no cgroup is usable; kRlimit: memoryBytes and cpuSeconds
  // fell back to per-process RLIMIT_AS / RLIMIT_CPU. Both are degradations
  // that say why.
  LimitMechanism pidsLimit = LimitMechanism::kNone;
  LimitMechanism memoryLimit = LimitMechanism::kNone;
  LimitMechanism cpuLimit = LimitMechanism::kNone;
  // spawn() only: the sandbox cgroup directory of each limit enforced by one
  // (one directory may hold several), removed once the sandbox has exited.
  std::string pidsCgroup, memoryCgroup, cpuCgroup;
  // Each entry says what is weaker than the rules call for, and why.
  std::vector<std::string> degradations;
};

struct SandboxPlan {
  MountPlan mounts;
  LandlockPlan landlock;
  SeccompOptions seccomp;
  RlimitPlan limits;
  // Where the sandbox cgroup's controllers live, when the rules ask for a
  // cgroup-enforced limit.
  std::optional<CgroupControllers> cgroups;
  // The values the sandbox cgroup is made with: each limit a cgroup enforces
  // (report.*Limit), 0 for the others.
  CgroupLimits cgroupLimits;
  // The kernel's layers and what enforces each limit; degradations: the
  // kernel's and the limits', then the plan's (Coverage::degraded).
  EnforcementReport report;
  // The write broker's rules for the trees the mount plan brokers; nullopt
  // when this kernel cannot run a broker (the coverage check then refuses
  // every brokered entry).
  std::optional<policy::WriteRules> writeRules;
  // Entries the plan does not honour: a spawn under it is refused.
  std::vector<CoverageGap> uncovered;
};

// `proxyPort`: the proxy's listeners are made in the sandbox (spawn.h);
// `workspace`: shown at /workspace (mounts.h). planUncheckedSandbox() and
// then checkSandboxPlan() with the plan's own writeRules.
SandboxPlan planSandbox(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                        const WorkspaceMount& workspace = {});

// The plan without its coverage check: `uncovered` empty, `report` without
// the plan's degradations. spawn() clones the sandbox's init with it and
// makes the check while the init builds the sandbox: the init waits for its
// program, which is sent only once the check has passed (a refused spawn
// kills the init first).
SandboxPlan planUncheckedSandbox(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                                 const WorkspaceMount& workspace = {});
// The coverage check of `plan` (coverage.h): fills mounts.readOnlyHost and
// `uncovered`, and appends the plan's degradations to `report`. `broker`: the write broker's rules
// (the plan's writeRules, or the broker's made from them); nullptr: no
// broker can run. Once per plan.
void checkSandboxPlan(const DerivedRules& rules, std::optional<std::uint16_t> proxyPort,
                      const policy::WriteRules* broker, SandboxPlan& plan);

// The paths Landlock grants write rights beneath: where the child writes with
// rights of its own -- the writable rule entries the mount plan shows as the
// sandbox's own objects (/dev/null, the private /tmp; the /dev/std* fd links
// aside) and the sandbox's own /tmp, /dev/shm, /dev/pts. Brokered trees get
// nothing: the broker performs their writes, and the kernel refuses any the
// broker does not decide.
std::vector<std::string> landlockWritable(const DerivedRules& rules, const MountPlan& mounts);

}  // namespace stockade::platform
