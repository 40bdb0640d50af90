#include "platform/linux/process.h"

#include <poll.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/kernel_abi.h"

namespace stockade::platform {

std::variant<ExitStatus, std::string> waitExit(const UniqueFd& pidfd) {
  siginfo_t info = {};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd.get()), &info, WEXITED) != 0) {
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
