// Red-team cases of the 2026-12-02 audit of issue 9 (redteam9d): host
// resources a sandbox reaches past its limits by a path the earlier cases
// did not take.
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/security/redteam/redteam.h"
#include "tests/support/udp_queues.h"

namespace stockade::redteam {
namespace {

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kSmallMemory = 128 * kMiB;

// The socket-buffer case runs under memoryBytes 128 MiB: twice that in
// unread datagrams shows the escape without holding a GiB of the host's
// kernel memory when it is not stopped.
void smallMemory(HostContext& h) {
  auto policy = nlohmann::json::parse(h.policy);
  policy["limits"]["memoryBytes"] = kSmallMemory;
  h.policy = policy.dump();
}

// Datagrams nobody reads, on the sandbox's own loopback: socket buffers are
// kernel memory, not address space, and cgroup v1 charged them to no
// counter (the whole host's net.ipv4.udp_mem was the only ceiling).
Verdict udpReceiveQueues(const Context&) {
  const auto q = testing::fillUdpReceiveQueues(32, 8 * kMiB);  // 256 MiB sent
  errno = q.error;
  if (auto n = neighbour(q.sockets > 0 && q.sent > 0, "bind a UDP socket on the sandbox's loopback and send to it"))
    return *n;
  const std::string figures = std::to_string(q.held / kMiB) + " MiB held of " + std::to_string(q.sent / kMiB) +
                              " MiB sent in " + std::to_string(q.sockets) + " receive queues";
  if (q.held > kSmallMemory) return escaped(figures + " under memoryBytes 128 MiB");
  return held(figures + ": the rest dropped at the limit");
}

// The bytes /proc/net/netlink says this namespace's netlink sockets hold for reading.
std::size_t netlinkReceiveQueueBytes() {
  std::size_t total = 0;
  FILE* f = std::fopen("/proc/net/netlink", "re");
  if (!f) return 0;
  char line[512];
  if (std::fgets(line, sizeof line, f))
    while (std::fgets(line, sizeof line, f)) {
      unsigned long sk = 0, groups = 0;
      int protocol = 0, pid = 0;
      long rmem = 0, wmem = 0;
      if (std::sscanf(line, "%lx %d %d %lx %ld %ld", &sk, &protocol, &pid, &groups, &rmem, &wmem) == 6 && rmem > 0)
        total += static_cast<std::size_t>(rmem);
    }
  std::fclose(f);
  return total;
}

// NETLINK_ROUTE is allowed (getifaddrs, if_nameindex). The kernel answers a
// refused request with an error that echoes it whole: 60,000-byte requests
// nobody reads the answers to fill each socket's receive queue (up to twice
// net.core.rmem_max), and netlink's buffers are charged to no cgroup counter.
Verdict netlinkAckQueues(const Context&) {
  std::vector<int> fds;
  static char request[60000];
  auto* h = reinterpret_cast<nlmsghdr*>(request);
  h->nlmsg_len = sizeof request;
  h->nlmsg_type = RTM_NEWLINK;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  std::size_t sent = 0;
  const int big = 8 << 20;
  for (int i = 0; i < 64; ++i) {
    const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0) break;
    fds.push_back(fd);
    for (int option : {SO_RCVBUFFORCE, SO_RCVBUF, SO_SNDBUFFORCE, SO_SNDBUF})
      (void)::setsockopt(fd, SOL_SOCKET, option, &big, sizeof big);
    for (int k = 0; k < 150; ++k)  // 9 MB each: past any receive buffer the host allows
      if (::send(fd, request, sizeof request, 0) == static_cast<ssize_t>(sizeof request)) sent += sizeof request;
  }
  const std::size_t heldBytes = netlinkReceiveQueueBytes();
  for (int fd : fds) ::close(fd);
  if (auto n = neighbour(!fds.empty() && sent > 0, "send a NETLINK_ROUTE request")) return *n;
  const std::string figures = std::to_string(heldBytes / kMiB) + " MiB of answers held in " +
                              std::to_string(fds.size()) + " netlink receive queues";
  if (heldBytes > kSmallMemory) return escaped(figures + " under memoryBytes 128 MiB");
  return held(figures);
}

constexpr Expectation kNoCgroupUnprivileged{Who::kUnprivileged, 9,
                                            "no cgroup for an unprivileged user: per-process rlimits, a reported degradation"};

const bool registered = registerCases({
    {"resource-exhaustion", "udp-receive-queues", "hold unread datagrams on the sandbox's loopback past memoryBytes",
     "issue 9 §4 (socket buffers are kernel memory; cgroup v1 charges them only with a TCP limit)", udpReceiveQueues,
     {}, kNoCgroupUnprivileged, {}, smallMemory},
    {"resource-exhaustion", "netlink-ack-queues", "hold unread NETLINK_ROUTE answers past memoryBytes",
     "issue 9 §4 (netlink's socket buffers are charged to no memory cgroup counter)", netlinkAckQueues, {}, {}, {},
     smallMemory},
});

}  // namespace
}  // namespace stockade::redteam
