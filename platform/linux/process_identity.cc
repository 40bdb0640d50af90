#include "platform/linux/process_identity.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/kernel_abi.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

namespace {

struct StatFields {
  char state = '?';             // field 3: R, S, D, Z, ...
  std::uint64_t startTime = 0;  // field 22
};

// Fields 3 and 22 of /proc/<pid>/stat. The second field (comm) is in
// parentheses and may hold spaces and ')' itself: fields are counted after
// the last ')'.
std::optional<StatFields> statOf(pid_t pid) {
  std::string stat = readSmallFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  StatFields out;
  int field = 2;
  std::size_t i = close + 1;
  while (i < stat.size()) {
    while (i < stat.size() && stat[i] == ' ') ++i;
    std::size_t end = stat.find(' ', i);
    if (end == std::string::npos) end = stat.size();
    if (end == i) break;
    ++field;
    if (field == 3) out.state = stat[i];
    if (field == 22) {
      std::uint64_t v = 0;
      for (std::size_t k = i; k < end; ++k) {
        if (stat[k] < '0' || stat[k] > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(stat[k] - '0');
      }
      out.startTime = v;
      return out;
    }
    i = end;
  }
  return std::nullopt;
}

}  // namespace

std::string readSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  char buf[4096];
  std::string out;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > 16384) break;
  }
  return out;
}

std::string currentBootId() {
  // Read once: it names the boot this process runs in, which cannot change under it.
  static const std::string id = [] {
    std::string text = readSmallFile("/proc/sys/kernel/random/boot_id");
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  }();
  return id;
}

std::optional<ProcessIdentity> identifyProcess(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto stat = statOf(pid);
  if (!stat || stat->state == 'Z') return std::nullopt;
  return ProcessIdentity{pid, stat->startTime, currentBootId()};
}

KillResult killIdentified(const ProcessIdentity& identity, std::chrono::milliseconds wait) {
  if (identity.pid <= 1) return {KillOutcome::kFailed, "refusing to signal pid " + std::to_string(identity.pid)};
  if (identity.bootId.empty() || identity.bootId != currentBootId()) return {KillOutcome::kAlreadyGone, ""};
  UniqueFd pidfd(linux_abi::pidfdOpen(identity.pid, 0));
  if (!pidfd) {
    if (errno == ESRCH) return {KillOutcome::kAlreadyGone, ""};
    return {KillOutcome::kFailed,
            "pidfd_open(" + std::to_string(identity.pid) + ") failed: " + strerrorname_np(errno)};
  }
  // The pidfd was opened on whatever process had the pid then. If the
  // process at that pid now has the recorded start time, it is the recorded
  // one and it was alive when the pidfd was opened (it started before):
  // the pidfd names it, and only it can receive the signal.
  auto stat = statOf(identity.pid);
  if (!stat || stat->startTime != identity.startTime || stat->state == 'Z') return {KillOutcome::kAlreadyGone, ""};
  if (linux_abi::pidfdSendSignal(pidfd.get(), SIGKILL) != 0) {
    if (errno == ESRCH) return {KillOutcome::kAlreadyGone, ""};
    return {KillOutcome::kFailed, "pidfd_send_signal(" + std::to_string(identity.pid) + ", SIGKILL) failed: " +
                                      strerrorname_np(errno)};
  }
  // A pidfd polls readable once its process has exited (also for a process
  // that is not our child).
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{pidfd.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count())));
    if (rc > 0) return {KillOutcome::kKilled, ""};
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0)
      return {KillOutcome::kFailed, std::string("poll(pidfd of ") + std::to_string(identity.pid) +
                                        ") failed: " + strerrorname_np(errno)};
    return {KillOutcome::kFailed, "pid " + std::to_string(identity.pid) + " got SIGKILL but is still alive after " +
                                      std::to_string(wait.count()) + " ms"};
  }
}

}  // namespace stockade::platform
