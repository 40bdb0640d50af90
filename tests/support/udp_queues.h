// Kernel memory held by datagrams left unread on the loopback of the
// caller's network namespace: socket buffers, which no address-space limit
// sees. Used from inside a sandbox (the probe, the red-team case) to show
// whether limits.memoryBytes bounds them.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace stockade::testing {

struct UdpQueues {
  std::size_t sent = 0;  // bytes the sender had accepted
  std::size_t held = 0;  // bytes the receive queues held at the end (/proc/net/udp rx_queue)
  int sockets = 0;       // receivers bound
  int error = 0;         // errno of a socket()/bind() that failed (0: none did)
};

// The bytes /proc/net/udp says this namespace's UDP sockets hold for reading.
inline std::size_t udpReceiveQueueBytes() {
  std::size_t total = 0;
  FILE* f = std::fopen("/proc/net/udp", "re");
  if (!f) return 0;
  char line[512];
  if (std::fgets(line, sizeof line, f))  // the header
    while (std::fgets(line, sizeof line, f)) {
      unsigned long tx = 0, rx = 0;
      if (std::sscanf(line, "%*d: %*s %*s %*x %lx:%lx", &tx, &rx) == 2) total += rx;
    }
  std::fclose(f);
  return total;
}

// `sockets` receivers bound on 127.0.0.1 (each asking for an 8 MiB receive
// buffer), one sender sending each `perSocket` bytes in 64,000-byte
// datagrams that nobody reads; measured while every socket is still open.
inline UdpQueues fillUdpReceiveQueues(int sockets, std::size_t perSocket) {
  UdpQueues out;
  std::vector<int> fds;
  const int big = 8 << 20;
  const int sender = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (sender < 0) {
    out.error = errno;
    return out;
  }
  (void)::setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  static char datagram[64000];
  for (int i = 0; i < sockets; ++i) {
    const int rx = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (rx < 0 || ::bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(rx, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      out.error = errno;
      if (rx >= 0) ::close(rx);
      break;
    }
    fds.push_back(rx);
    ++out.sockets;
    (void)::setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    // Bounded: a datagram the receiver has no room for is dropped, not refused.
    for (std::size_t sent = 0; sent < perSocket; sent += sizeof datagram) {
      const ssize_t n = ::sendto(sender, datagram, sizeof datagram, 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
      if (n > 0) out.sent += static_cast<std::size_t>(n);
      else if (errno == EAGAIN) ::usleep(100);  // the sender's own buffer: let loopback drain it
    }
  }
  out.held = udpReceiveQueueBytes();
  for (int fd : fds) ::close(fd);
  ::close(sender);
  return out;
}

}  // namespace stockade::testing
