// ASYNC-SIGNAL-SAFE: bringUpLoopback() and sendProxyListeners() run between
// clone and exec. receiveProxyListeners() runs in the parent.
#include "platform/linux/network.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/fd_channel.h"
#include "platform/linux/raw_syscall.h"

namespace stockade::platform {
namespace {

int listenOn(int family, std::uint16_t port, ChildError& error) noexcept {
  int fd = sys::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const char* shown = family == AF_INET ? "127.0.0.1" : "[::1]";
  if (fd < 0) {
    error.add("socket(").add(family == AF_INET ? "AF_INET" : "AF_INET6").add(", SOCK_STREAM)");
    error.fail(SetupStep::kProxyListeners);
    return -1;
  }
  int rc;
  if (family == AF_INET) {
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = sys::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    int one = 1;
    sys::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    sockaddr_in6 addr = {};
    addr.sin6_family = AF_INET6;
    addr.sin6_port = htons(port);
    addr.sin6_addr = in6addr_loopback;
    rc = sys::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (rc != 0) {
    error.add("bind(").add(shown).add(":").number(port).add(")");
    error.fail(SetupStep::kProxyListeners);
    sys::close(fd);
    return -1;
  }
  if (sys::listen(fd, 128) != 0) {
    error.add("listen(").add(shown).add(":").number(port).add(", 128)");
    error.fail(SetupStep::kProxyListeners);
    sys::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool bringUpLoopback(ChildError& error) noexcept {
  int fd = sys::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error.add("socket(AF_INET, SOCK_DGRAM)");
    return error.fail(SetupStep::kLoopback);
  }
  ifreq req = {};
  sys::copy(req.ifr_name, "lo", 3);
  bool ok = true;
  if (sys::ioctl(fd, SIOCGIFFLAGS, &req) != 0) {
    error.add("ioctl(\"lo\", SIOCGIFFLAGS)");
    ok = error.fail(SetupStep::kLoopback);
  } else {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
    if (sys::ioctl(fd, SIOCSIFFLAGS, &req) != 0) {
      error.add("ioctl(\"lo\", SIOCSIFFLAGS, IFF_UP)");
      ok = error.fail(SetupStep::kLoopback);
    }
  }
  sys::close(fd);
  return ok;
}

bool sendProxyListeners(int channel, std::uint16_t port, ChildError& error) noexcept {
  int fds[2] = {listenOn(AF_INET, port, error), -1};
  if (fds[0] < 0) return false;
  fds[1] = listenOn(AF_INET6, port, error);
  if (fds[1] < 0) {
    sys::close(fds[0]);
    return false;
  }
  bool ok = sendFds(channel, fds, SetupStep::kProxyListeners, "2 proxy listeners", error);
  sys::close(fds[0]);
  sys::close(fds[1]);
  return ok;
}

std::variant<std::vector<UniqueFd>, std::string> receiveProxyListeners(int channel) {
  return receiveFds(channel, 2, "proxy listener channel");
}

}  // namespace stockade::platform
