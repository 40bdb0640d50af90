// ASYNC-SIGNAL-SAFE: applyUserCounterCaps() only (it runs between clone and
// exec). planUserCounterCaps() runs in the parent.
#include "platform/linux/user_counters.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "platform/linux/features.h"
#include "platform/linux/raw_syscall.h"

namespace stockade::platform {
namespace {

// The supervisor's value of /proc/sys/<name>; nullopt when this kernel has
// no such counter.
std::optional<std::uint64_t> hostSysctl(const char* name) {
  char path[96];
  std::snprintf(path, sizeof path, "/proc/sys/%s", name);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[32];
  ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  std::uint64_t value = 0;
  if (n <= 0 || std::from_chars(text, text + n, value).ec != std::errc()) return std::nullopt;
  return value;
}

// The soft limit's share; 0 (left alone) when it is unlimited.
std::uint64_t rlimitShare(int resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return sandboxShare(limit.rlim_cur);
}

// Linux 5.14 moved RLIMIT_NPROC, _SIGPENDING, _MSGQUEUE and _MEMLOCK onto
// per-user-namespace counts ("Count rlimits in each user namespace").
bool rlimitsCountPerNamespace() { return kernelAtLeast(5, 14); }

}  // namespace

std::uint64_t sandboxShare(std::uint64_t hostLimit) noexcept {
  if (hostLimit == 0) return 0;
  return hostLimit / kSandboxShareDivisor > 0 ? hostLimit / kSandboxShareDivisor : 1;
}

std::uint64_t sandboxPtyShare(std::uint64_t ptyMax, std::uint64_t ptyReserve) noexcept {
  const std::uint64_t share = sandboxShare(ptyMax > ptyReserve ? ptyMax - ptyReserve : 0);
  return share > 0 ? share : 1;
}

UserCounterCaps planUserCounterCaps() {
  UserCounterCaps caps;
  for (const char* name : {"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"})
    if (auto host = hostSysctl((std::string("user/") + name).c_str()))
      caps.sysctls.push_back({std::string("sys/user/") + name, std::to_string(sandboxShare(*host))});
  // The kernel's defaults (NR_UNIX98_PTY_DEFAULT, NR_UNIX98_PTY_RESERVE) when unreadable.
  caps.ptys = sandboxPtyShare(hostSysctl("kernel/pty/max").value_or(4096),
                              hostSysctl("kernel/pty/reserve").value_or(1024));
  if (rlimitsCountPerNamespace()) {
    caps.processes = rlimitShare(RLIMIT_NPROC);
    caps.pendingSignals = rlimitShare(RLIMIT_SIGPENDING);
    caps.messageQueueBytes = rlimitShare(RLIMIT_MSGQUEUE);
    caps.lockedBytes = rlimitShare(RLIMIT_MEMLOCK);
  } else {
    caps.degradation =
        "host per-user counters: before Linux 5.14 RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE and "
        "RLIMIT_MEMLOCK count the host user's whole usage, so the sandbox can take all of the host user's processes, "
        "queued signals, message queues and locked memory";
  }
  return caps;
}

bool applyUserCounterCaps(int procFd, const UserCounterCaps& caps, ChildError& error) noexcept {
  for (const auto& s : caps.sysctls) {
    int fd = sys::openat(procFd, s.file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || sys::write(fd, s.value.data(), s.value.size()) != static_cast<ssize_t>(s.value.size())) {
      const int err = errno;
      if (fd >= 0) sys::close(fd);
      errno = err;
      error.add(fd < 0 ? "open(\"/proc/" : "write(\"/proc/").add(s.file.c_str()).add("\", ").quoted(s.value.c_str()).add(")");
      return error.fail(SetupStep::kUserCounters);
    }
    sys::close(fd);
  }
  return true;
}

}  // namespace stockade::platform
