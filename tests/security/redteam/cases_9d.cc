// Red-team cases of the 2026-12-02 audit of issue 9 (redteam9d): host
// resources a sandbox reaches past its limits by a path the earlier cases
// did not take.
#include <nlohmann/json.hpp>

#include <string>

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

constexpr Expectation kNoCgroupUnprivileged{Who::kUnprivileged, 9,
                                            "no cgroup for an unprivileged user: per-process rlimits, a reported degradation"};

const bool registered = registerCases({
    {"resource-exhaustion", "udp-receive-queues", "hold unread datagrams on the sandbox's loopback past memoryBytes",
     "issue 9 §4 (socket buffers are kernel memory; cgroup v1 charges them only with a TCP limit)", udpReceiveQueues,
     {}, kNoCgroupUnprivileged, {}, smallMemory},
});

}  // namespace
}  // namespace stockade::redteam
