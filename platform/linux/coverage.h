// checkCoverage(): the one check between planning a sandbox and handing its
// init the program (spawn() makes it while the init builds the sandbox;
// sandbox_plan.h: checkSandboxPlan()).
//
// Every entry of the DerivedRules must be honoured by the enforcement plan:
// each read-denied path masked (no host object under it visible unless an
// allowRead entry carves it back); each writable path either the sandbox's
// own object, writable by the child, or the host's object in a brokered tree
// (bound read-only) whose write broker is installed, serves that tree and
// would perform the write -- on a mount the host does not hold read-only
// (MountPlan::readOnlyHost); each write-denied path and each protected name
// inside a brokered tree refused by the broker's decision (asked here: the
// pure function the broker runs, policy/write_decision.h), and elsewhere
// read-only; Landlock granting the child write rights of its own exactly
// where the sandbox's own objects are writable, never in a brokered tree;
// each network rule installed, and each limit: a cgroup made with its value
// or a reported fallback, every tmpfs sized (within limits.memoryBytes when
// set), the sandbox's shares of the per-user counters planned. An entry the
// plan does not honour is either a degradation -- weaker for a reason
// stockade knows, reported to the caller (a write-denied file with other
// names, unix sockets allowed as a whole, no usable cgroup, a read-only
// mount beneath a writable entry) -- or uncovered, which refuses the spawn
// naming the entry.
//
// A pure function of its arguments (no system call): a test can run it over
// any rules and any plan, including a plan it has damaged on purpose.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "platform/linux/cgroup.h"
#include "platform/linux/landlock.h"
#include "platform/linux/mounts.h"
#include "platform/linux/privileges.h"
#include "platform/linux/seccomp.h"
#include "policy/write_decision.h"
#include "stockade/rules.h"

namespace stockade::platform {

// Everything prepare() has decided before clone.
struct EnforcementPlan {
  const MountPlan& mounts;
  const LandlockPlan& landlock;
  SeccompOptions seccomp;
  std::optional<std::uint16_t> proxyPort;  // set: the proxy's listeners are made in the sandbox
  RlimitPlan limits;
  // What enforces limits.pids, memoryBytes, cpuSeconds (cgroup.h), and the
  // values the sandbox cgroup is made with. A limit no cgroup holds is
  // covered only as a degradation the planner has reported (`reported`
  // names the field): the rlimit fallback, planned with the limit's value,
  // or pids not enforced at all.
  LimitMechanism pids = LimitMechanism::kNone;
  LimitMechanism memory = LimitMechanism::kNone;
  LimitMechanism cpu = LimitMechanism::kNone;
  CgroupLimits cgroup;
  std::span<const std::string> reported;  // the planner's degradations so far
  // The write broker's rules (write_decision.h) for the trees the mount plan
  // brokers; nullptr: no broker will run, so nothing brokered is writable.
  const policy::WriteRules* broker = nullptr;
};

struct CoverageGap {
  std::string entry;   // `filesystem.denyRead "/proc"`, `limits.pids`
  std::string reason;  // what the plan does there instead
  std::string text() const { return entry + ": " + reason; }
};

struct Coverage {
  std::vector<CoverageGap> uncovered;  // refuse the spawn
  std::vector<CoverageGap> degraded;   // run weaker, and say so (EnforcementReport::degradations)
};

Coverage checkCoverage(const DerivedRules& rules, const EnforcementPlan& plan);

}  // namespace stockade::platform
