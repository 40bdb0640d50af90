#include "platform/linux/process.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/kernel_abi.h"

namespace stockade::platform {

std::variant<ExitStatus, std::string> waitExit(const UniqueFd& pidfd) {
  siginfo_t info = {};
  struct rusage usage = {};
  // The raw call: glibc's waitid() has no rusage argument.
  while (::syscall(SYS_waitid, P_PIDFD, pidfd.get(), &info, WEXITED, &usage) != 0) {
    if (errno != EINTR)
      return "waitid(P_PIDFD, " + std::to_string(pidfd.get()) + ", WEXITED) failed: " + strerrorname_np(errno);
  }
  ExitStatus status;
  if (info.si_code == CLD_EXITED) {
    status.kind = ExitStatus::Kind::kExited;
  } else {
    status.kind = ExitStatus::Kind::kSignaled;
  }
  status.value = info.si_status;
  status.usage.cpuTime = std::chrono::seconds(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                         std::chrono::microseconds(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  status.usage.peakRssBytes = usage.ru_maxrss * 1024L;  // KiB
  return status;
}

std::variant<std::optional<ExitStatus>, std::string> waitExitFor(const UniqueFd& pidfd,
                                                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    pollfd p = {pidfd.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return std::string("poll(pidfd, POLLIN) failed: ") + strerrorname_np(errno);
    }
    if (rc == 0) return std::optional<ExitStatus>();
    auto status = waitExit(pidfd);
    if (auto* e = std::get_if<std::string>(&status)) return *e;
    return std::optional<ExitStatus>(std::get<ExitStatus>(status));
  }
}

std::optional<std::string> signalChild(const UniqueFd& pidfd, int signal) {
  if (linux_abi::pidfdSendSignal(pidfd.get(), signal) != 0 && errno != ESRCH)
    return "pidfd_send_signal(" + std::to_string(pidfd.get()) + ", " + std::to_string(signal) +
           ") failed: " + strerrorname_np(errno);
  return std::nullopt;
}

}  // namespace stockade::platform
