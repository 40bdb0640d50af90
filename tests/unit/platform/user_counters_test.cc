// A sandbox's share of the host user's per-user counters, and the size of its
// private tmpfs mounts: pure rules, without spawning.
#include "platform/linux/user_counters.h"

#include <gtest/gtest.h>

#include "platform/linux/mounts.h"

namespace stockade::platform {
namespace {

TEST(SandboxShareTest, AQuarterOfTheHostLimitAndNeverNothingOfSomething) {
  EXPECT_EQ(sandboxShare(128), 32u);        // max_inotify_instances' default
  EXPECT_EQ(sandboxShare(192536), 48134u);  // max_inotify_watches here
  EXPECT_EQ(sandboxShare(3), 1u);           // rounding down would leave the sandbox none
  EXPECT_EQ(sandboxShare(0), 0u);
}

TEST(SandboxShareTest, APtyShareIsAQuarterOfWhatDevptsInstancesOtherThanTheHostsMayUse) {
  EXPECT_EQ(sandboxPtyShare(4096, 1024), 768u);  // the kernel's defaults
  EXPECT_EQ(sandboxPtyShare(1024, 1024), 1u);    // none left beside the reserve: still one
  EXPECT_EQ(sandboxPtyShare(100, 200), 1u);
  EXPECT_GE(planUserCounterCaps().ptys, 1u);
}

TEST(SandboxShareTest, EveryPerNamespaceCounterOfThisKernelIsCapped) {
  auto caps = planUserCounterCaps();
  for (const char* name : {"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"}) {
    bool found = false;
    for (const auto& s : caps.sysctls) found = found || s.file == std::string("sys/user/") + name;
    EXPECT_TRUE(found) << name << " is not capped";
  }
  EXPECT_FALSE(caps.degradation) << *caps.degradation;  // this kernel (>= 5.14) counts the RLIMITs per namespace
  EXPECT_NE(caps.processes, 0u);
  EXPECT_NE(caps.pendingSignals, 0u);
}

TEST(SandboxTmpfsTest, TmpAndShmGetTheMemoryLimitOrAQuarterOfTheHost) {
  EXPECT_EQ(sandboxTmpfsBytes(64 << 20, 24ULL << 30), 64u << 20);
  EXPECT_EQ(sandboxTmpfsBytes(0, 24ULL << 30), 6ULL << 30);
}

}  // namespace
}  // namespace stockade::platform
