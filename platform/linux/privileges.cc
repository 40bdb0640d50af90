// ASYNC-SIGNAL-SAFE: everything here runs between clone and exec.
#include "platform/linux/privileges.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "platform/linux/raw_syscall.h"

namespace stockade::platform {
namespace {

bool setLimit(int resource, const char* name, std::uint64_t value, ChildError& error) noexcept {
  if (value == 0) return true;
  rlimit limit = {value, value};
  if (sys::setrlimit(resource, &limit) != 0) {
    error.add("setrlimit(").add(name).add(", ").number(static_cast<long long>(value)).add(")");
    return error.fail(SetupStep::kLimits);
  }
  return true;
}

}  // namespace

bool applyRlimits(const RlimitPlan& plan, ChildError& error) noexcept {
  return setLimit(RLIMIT_CPU, "RLIMIT_CPU", plan.cpuSeconds, error) &&
         setLimit(RLIMIT_FSIZE, "RLIMIT_FSIZE", plan.fileSizeBytes, error) &&
         setLimit(RLIMIT_AS, "RLIMIT_AS", plan.addressSpace, error) &&
         setLimit(RLIMIT_NPROC, "RLIMIT_NPROC", plan.processes, error) &&
         setLimit(RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", plan.pendingSignals, error) &&
         setLimit(RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE", plan.messageQueueBytes, error) &&
         setLimit(RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", plan.lockedBytes, error);
}

bool dropCapabilities(ChildError& error) noexcept {
  // Bounding set: drop every capability the kernel knows (until EINVAL).
  for (int cap = 0; cap < 64; ++cap) {
    if (sys::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      error.add("prctl(PR_CAPBSET_DROP, ").number(cap).add(")");
      return error.fail(SetupStep::kCapabilities);
    }
  }
  if (sys::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    error.add("prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)");
    return error.fail(SetupStep::kCapabilities);
  }
  constexpr unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (sys::prctl(PR_SET_SECUREBITS, kBits, 0, 0, 0) != 0) {
    error.add("prctl(PR_SET_SECUREBITS, NOROOT|NO_SETUID_FIXUP|NO_CAP_AMBIENT_RAISE, all locked)");
    return error.fail(SetupStep::kCapabilities);
  }
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (sys::call(SYS_capset, sys::arg(&header), sys::arg(data)) != 0) {
    error.add("capset(effective=0, permitted=0, inheritable=0)");
    return error.fail(SetupStep::kCapabilities);
  }
  return true;
}

bool setNoNewPrivs(ChildError& error) noexcept {
  if (sys::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    error.add("prctl(PR_SET_NO_NEW_PRIVS, 1)");
    return error.fail(SetupStep::kNoNewPrivs);
  }
  return true;
}

}  // namespace stockade::platform
