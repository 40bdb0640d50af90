// Admission against the proxy's connection limits (proxy/admission.h).
#include "proxy/admission.h"

#include <gtest/gtest.h>

namespace stockade::proxy {
namespace {

TEST(AdmissionTest, TheSandboxLimitComesFirstThenTheListenersPendingLimitThenDrops) {
  ProxyLimits limits;
  limits.maxConnectionsPerSandbox = 10;
  limits.maxPendingPerListener = 3;
  struct Case {
    AdmissionCounts counts;
    Admission want;
  };
  for (const Case& c : std::initializer_list<Case>{
           {{0, 0, 0}, Admission::kServe},
           {{9, 2, 0}, Admission::kServe},
           {{9, 2, 3}, Admission::kServe},  // refusals being answered do not stop a connection within the limits
           {{10, 0, 0}, Admission::kRefuseConnectionLimit},
           {{10, 3, 0}, Admission::kRefuseConnectionLimit},
           {{5, 3, 0}, Admission::kRefusePendingLimit},
           {{5, 3, 2}, Admission::kRefusePendingLimit},
           {{5, 3, 3}, Admission::kDrop},
           {{10, 0, 3}, Admission::kDrop},
       }) {
    EXPECT_EQ(admit(c.counts, limits), c.want) << c.counts.sandboxConnections << "/" << c.counts.listenerPending
                                               << "/" << c.counts.listenerRefusing;
  }
}

TEST(AdmissionTest, SlotsCountPerSandboxAndReleaseWhenDestroyed) {
  SandboxCounters counters;
  {
    auto a = counters.connection("a");
    auto a2 = counters.connection("a");
    auto b = counters.connection("b");
    EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "a"), 2u);
    EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "b"), 1u);
    auto moved = std::move(a2);
    EXPECT_FALSE(a2);  // NOLINT(bugprone-use-after-move): a moved-from slot is empty
    EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "a"), 2u);
    moved.reset();
    EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "a"), 1u);
  }
  EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "a"), 0u);
  EXPECT_EQ(counters.count(SandboxCounters::Kind::kConnection, "b"), 0u);
}

TEST(AdmissionTest, TunnelSlotsStopAtTheLimit) {
  SandboxCounters counters;
  auto t1 = counters.tunnel("a", 2);
  auto t2 = counters.tunnel("a", 2);
  ASSERT_TRUE(t1 && t2);
  EXPECT_FALSE(counters.tunnel("a", 2));
  EXPECT_TRUE(counters.tunnel("b", 2)) << "another sandbox has its own count";
  t1.reset();
  EXPECT_TRUE(counters.tunnel("a", 2));
  EXPECT_EQ(counters.count(SandboxCounters::Kind::kTunnel, "a"), 1u);
}

}  // namespace
}  // namespace stockade::proxy
