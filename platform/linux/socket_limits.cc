#include "platform/linux/socket_limits.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/process_identity.h"
#include "platform/unique_fd.h"

namespace stockade::platform {
namespace {

// The size a socket's buffer starts with (net.core.rmem_default or
// wmem_default), read once; the kernel's own default when unreadable.
long startSize(const char* sysctl) {
  const std::string text = readSmallFile(std::string("/proc/sys/net/core/") + sysctl);
  long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  (void)end;
  return ec == std::errc() && v > 0 ? v : 212992;
}

}  // namespace

std::optional<long> netlinkSocketsIn(std::string_view protocols) noexcept {
  // "protocol  size sockets  memory press ..." then one row per protocol.
  for (std::size_t at = 0; at < protocols.size();) {
    std::size_t end = protocols.find('\n', at);
    if (end == std::string_view::npos) end = protocols.size();
    std::string_view line = protocols.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("NETLINK ")) continue;
    std::size_t field = 0;
    for (std::size_t i = 0; i < line.size();) {
      while (i < line.size() && line[i] == ' ') ++i;
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (i == j) break;
      if (field++ == 2) {
        long v = 0;
        auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + j, v);
        if (ec != std::errc() || ptr != line.data() + j || v < 0) return std::nullopt;
        return v;
      }
      i = j;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool mayStillBeInSocket(std::string_view text) noexcept {
  if (text.starts_with("running")) return true;
  long nr = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), nr);
  if (ec != std::errc() || (ptr != text.data() + text.size() && *ptr != ' ' && *ptr != '\n')) return false;
  return nr == SYS_socket;
}

int netlinkBufferRequest(int requested, long start) noexcept {
  const auto most = static_cast<unsigned>(std::clamp<long>(start / 2, 1, INT_MAX));
  return static_cast<int>(std::min(static_cast<unsigned>(requested), most));
}

void NetlinkSocketGate::seen(pid_t tid) {
  if (!anyPending_.load(std::memory_order_relaxed)) return;  // a missed one only counts a socket twice
  std::lock_guard hold(lock_);
  std::erase(pending_, tid);
  anyPending_.store(!pending_.empty(), std::memory_order_relaxed);
}

NetlinkSocketGate::Verdict NetlinkSocketGate::admit(pid_t tid, const std::function<bool()>& stillPending) {
  std::lock_guard hold(lock_);
  std::erase(pending_, tid);  // its earlier call, if any, is over: it is making this one
  auto count = [&]() -> std::optional<long> {
    const auto sockets = netlinkSocketsIn(readSmallFile("/proc/" + std::to_string(tid) + "/net/protocols"));
    if (!stillPending()) return std::nullopt;
    return sockets;
  };
  auto sockets = count();
  if (!sockets) {
    if (!stillPending()) return {Verdict::Kind::kGone};
    return {Verdict::Kind::kRefused, -1};  // no count: refused, never let through
  }
  if (*sockets + static_cast<long>(pending_.size()) >= kNetlinkSocketsPerSandbox) {
    // Those seen out of socket(2) since are counted by the kernel, or closed.
    std::erase_if(pending_, [](pid_t t) {
      return !mayStillBeInSocket(readSmallFile("/proc/" + std::to_string(t) + "/syscall"));
    });
    sockets = count();
    if (!sockets) return {stillPending() ? Verdict::Kind::kRefused : Verdict::Kind::kGone, -1};
  }
  const long total = *sockets + static_cast<long>(pending_.size());
  if (total >= kNetlinkSocketsPerSandbox) return {Verdict::Kind::kRefused, total};
  pending_.push_back(tid);
  anyPending_.store(true, std::memory_order_relaxed);
  return {Verdict::Kind::kContinue, total};
}

SocketBufferAnswer performSocketBufferOption(pid_t tid, const std::uint64_t* args,
                                             const std::function<bool()>& stillPending) {
  using Kind = SocketBufferAnswer::Kind;
  const int fd = static_cast<int>(args[0]);
  const int level = static_cast<int>(args[1]), name = static_cast<int>(args[2]);
  const int optlen = static_cast<int>(args[4]);
  const bool receive = name == SO_RCVBUF || name == SO_RCVBUFFORCE;
  if (level != SOL_SOCKET || (name != SO_RCVBUF && name != SO_SNDBUF && name != SO_RCVBUFFORCE && name != SO_SNDBUFFORCE))
    return {Kind::kContinue};  // not a buffer size: the filter does not hand it over
  if (optlen < 0) return {Kind::kDone, EINVAL};
  UniqueFd pidfd(linux_abi::pidfdOpen(tid, PIDFD_THREAD));
  if (!pidfd) pidfd.reset(linux_abi::pidfdOpen(tid, 0));  // before Linux 6.9: only a thread group's leader
  if (!pidfd || !stillPending()) return {Kind::kGone};
  UniqueFd socket(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
  if (!stillPending()) return {Kind::kGone};
  if (!socket) return {Kind::kDone, errno == EBADF ? EBADF : EPERM};
  struct stat st {};
  if (::fstat(socket.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {Kind::kDone, ENOTSOCK};
  if (optlen < static_cast<int>(sizeof(int))) return {Kind::kDone, EINVAL};
  int value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(args[3]), sizeof value};
  const ssize_t got = ::process_vm_readv(tid, &local, 1, &remote, 1, 0);
  if (!stillPending()) return {Kind::kGone};
  if (got != static_cast<ssize_t>(sizeof value)) return {Kind::kDone, EFAULT};
  if (name == SO_RCVBUFFORCE || name == SO_SNDBUFFORCE) return {Kind::kDone, EPERM};  // no CAP_NET_ADMIN in here
  int domain = 0;
  socklen_t size = sizeof domain;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0) return {Kind::kDone, errno};
  if (domain == AF_NETLINK) {
    static const long rmem = startSize("rmem_default"), wmem = startSize("wmem_default");
    value = netlinkBufferRequest(value, receive ? rmem : wmem);
  }
  if (::setsockopt(socket.get(), SOL_SOCKET, name, &value, sizeof value) != 0) return {Kind::kDone, errno};
  return {Kind::kDone, 0};
}

}  // namespace stockade::platform
