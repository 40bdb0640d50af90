// What the running kernel offers stockade, detected at run time (for the
// daemon's /v1/health and for degradation reports).
#pragma once

namespace stockade::platform {

struct KernelFeatures {
  int landlockAbi = 0;          // 0: no Landlock
  bool seccompFilter = false;   // SECCOMP_MODE_FILTER
  bool seccompUserNotif = false;  // SECCOMP_RET_USER_NOTIF (Linux 5.0)
  bool userNamespaces = false;  // this user may create a user namespace
};

// Reads /proc/sys/kernel/seccomp/actions_avail and probes a user namespace
// (fork + unshare(CLONE_NEWUSER) in the child); a few hundred microseconds.
KernelFeatures detectKernelFeatures() noexcept;

// The running kernel's release (uname(2), read once) is at least major.minor.
bool kernelAtLeast(int major, int minor) noexcept;

}  // namespace stockade::platform
