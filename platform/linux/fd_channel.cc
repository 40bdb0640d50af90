// sendFds() is ASYNC-SIGNAL-SAFE: it runs between clone and exec.
#include "platform/linux/fd_channel.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/raw_syscall.h"

namespace stockade::platform {

namespace {
constexpr std::size_t kMaxFds = 4;
}

bool sendFds(int channel, std::span<const int> fds, SetupStep step, const char* what, ChildError& error) noexcept {
  char byte = 'F';
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
  if (fds.empty() || fds.size() > kMaxFds) {
    errno = EINVAL;
    error.add("sendFds(").add(what).add("): bad count");
    return error.fail(step);
  }
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  sys::copy(CMSG_DATA(cmsg), fds.data(), fds.size() * sizeof(int));
  if (sys::sendmsg(channel, &msg, MSG_NOSIGNAL) != 1) {
    error.add("sendmsg(channel, SCM_RIGHTS, ").add(what).add(")");
    return error.fail(step);
  }
  return true;
}

std::variant<std::vector<UniqueFd>, std::string> receiveFds(int channel, std::size_t count, const char* what) {
  char byte = 0;
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = ::recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n != 1)
    return std::string("recvmsg(") + what + ", MSG_DONTWAIT) failed: " + (n < 0 ? strerrorname_np(errno) : "no message");
  std::vector<UniqueFd> out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < got; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.emplace_back(fd);
    }
  }
  if (out.size() != count || (msg.msg_flags & MSG_CTRUNC))
    return std::string("recvmsg(") + what + "): expected " + std::to_string(count) + " descriptors, got " +
           std::to_string(out.size());
  return out;
}

}  // namespace stockade::platform
