// Where the sandbox cgroup's controllers live, from the texts of
// /proc/self/mountinfo and /proc/self/cgroup, and when a limit is reached,
// from a cgroup's counters -- without touching the host's cgroups.
#include "platform/linux/cgroup.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace stockade::platform {
namespace {

// The pids candidates, as "<mechanism> <dir>".
std::vector<std::string> dirs(const std::vector<CgroupHierarchy>& found,
                              CgroupController controller = CgroupController::kPids) {
  std::vector<std::string> out;
  for (const auto& h : found)
    if (h.has(controller)) out.push_back(std::string(limitMechanismName(h.mechanism)) + " " + h.ownCgroupDir);
  return out;
}

// A v1/v2 hybrid: cgroup2 at /sys/fs/cgroup/unified, pids on its own v1 mount.
constexpr const char* kHybridMountinfo =
    "23 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime shared:5 - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(CgroupHierarchiesTest, AHybridHostOffersCgroup2FirstThenTheV1PidsHierarchy) {
  const char* cgroup = "9:name=systemd:/\n8:pids:/user.slice/u1\n1:cpu:/\n0::/user.slice/u1\n";
  EXPECT_EQ(dirs(cgroupHierarchies(kHybridMountinfo, cgroup)),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/unified/user.slice/u1",
                                      "cgroup-v1 /sys/fs/cgroup/pids/user.slice/u1"}));
}

TEST(CgroupHierarchiesTest, TheRootCgroupMapsToTheMountPointItself) {
  EXPECT_EQ(dirs(cgroupHierarchies(kHybridMountinfo, "8:pids:/\n0::/\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/unified", "cgroup-v1 /sys/fs/cgroup/pids"}));
}

TEST(CgroupHierarchiesTest, AV1MountWithoutThePidsControllerIsNoPidsCandidate) {
  const char* mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n";
  EXPECT_TRUE(dirs(cgroupHierarchies(mountinfo, "2:cpu,cpuacct:/a\n")).empty());
  // It is the cpu (cpuacct) candidate.
  EXPECT_EQ(dirs(cgroupHierarchies(mountinfo, "2:cpu,cpuacct:/a\n"), CgroupController::kCpu),
            (std::vector<std::string>{"cgroup-v1 /sys/fs/cgroup/cpu/a"}));
  // "pids" as part of another option is not the controller.
  EXPECT_TRUE(cgroupHierarchies("39 31 0:36 / /x rw - cgroup cgroup rw,name=mypids\n", "3:name=mypids:/\n").empty());
}

TEST(CgroupHierarchiesTest, APureCgroup2HostHasOneCandidate) {
  const char* mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  EXPECT_EQ(dirs(cgroupHierarchies(mountinfo, "0::/user.slice/user-1000.slice/session-2.scope\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"}));
}

TEST(CgroupHierarchiesTest, AMountOfASubtreeMapsOurPathBeneathItsRoot) {
  // A container: the hierarchy is mounted from /docker/abc; our path is inside it.
  const char* mountinfo = "50 40 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(dirs(cgroupHierarchies(mountinfo, "0::/docker/abc/job\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/job"}));
  EXPECT_EQ(dirs(cgroupHierarchies(mountinfo, "0::/docker/abc\n")), (std::vector<std::string>{"cgroup2 /sys/fs/cgroup"}));
  // A sibling that only shares a prefix, and a path outside the mounted subtree, are not shown by this mount.
  EXPECT_TRUE(cgroupHierarchies(mountinfo, "0::/docker/abcd\n").empty());
  EXPECT_TRUE(cgroupHierarchies(mountinfo, "0::/other\n").empty());
}

TEST(CgroupHierarchiesTest, EscapedMountPointsAreDecodedAndDuplicateMountsCollapse) {
  const char* mountinfo =
      "41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n"
      "42 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(dirs(cgroupHierarchies(mountinfo, "0::/a\n")), (std::vector<std::string>{"cgroup2 /mnt/my cgroups/a"}));
}

TEST(CgroupHierarchiesTest, MalformedLinesAreSkipped) {
  const char* mountinfo = "garbage\n1 2 3\n41 31 0:38 / /u rw - cgroup2\n\n";
  EXPECT_TRUE(cgroupHierarchies(mountinfo, "0::/\nnot-a-line\n8:pids\n").empty());
  EXPECT_TRUE(cgroupHierarchies(kHybridMountinfo, "0::relative\n8:pids:relative\n").empty());
}

TEST(CgroupHierarchiesTest, EachV1ControllerIsFoundInItsOwnHierarchyAtOurPathThere) {
  // This host's layout: memory in a nested cgroup, the others at the root.
  const char* mountinfo =
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";
  const char* cgroup = "8:pids:/\n4:memory:/process_api/b99a\n2:cpuacct:/\n1:cpu:/\n";
  auto found = cgroupHierarchies(mountinfo, cgroup);
  EXPECT_EQ(dirs(found, CgroupController::kMemory),
            (std::vector<std::string>{"cgroup-v1 /sys/fs/cgroup/memory/process_api/b99a"}));
  EXPECT_EQ(dirs(found, CgroupController::kCpu), (std::vector<std::string>{"cgroup-v1 /sys/fs/cgroup/cpuacct"}));
  EXPECT_EQ(dirs(found, CgroupController::kPids), (std::vector<std::string>{"cgroup-v1 /sys/fs/cgroup/pids"}));
  // The scheduler's "cpu" controller alone accounts no CPU time: not a cpu candidate.
  EXPECT_EQ(found.size(), 3u);
}

// Every read-write mount of a hierarchy, wherever it is (a bind into a
// workspace too), is where the sandbox could write its way out; a read-only
// one and another hierarchy's are not.
TEST(CgroupHierarchiesTest, EveryWritableMountOfTheHierarchyIsListedWhereverItIs) {
  const std::string mountinfo = std::string(kHybridMountinfo) +
                                "60 23 0:36 /user.slice /srv/ws/cg rw,relatime - cgroup cgroup rw,pids\n"
                                "61 23 0:36 / /srv/ro-cg ro,relatime - cgroup cgroup rw,pids\n"
                                "62 23 0:38 / /srv/ws/unified rw - cgroup2 cgroup2 rw\n";
  const char* cgroup = "9:name=systemd:/\n8:pids:/user.slice/u1\n1:cpu:/\n0::/user.slice/u1\n";
  const std::vector<std::string> unified{"/sys/fs/cgroup/unified", "/srv/ws/unified"},
      pids{"/sys/fs/cgroup/pids", "/srv/ws/cg"};
  auto found = cgroupHierarchies(mountinfo, cgroup);
  ASSERT_GE(found.size(), 2u);
  for (const auto& h : found)  // each mount showing our cgroup is a candidate; all see the same mounts
    EXPECT_EQ(h.writableMounts, h.mechanism == LimitMechanism::kCgroup2 ? unified : pids) << h.ownCgroupDir;
  EXPECT_EQ(found[0].ownCgroupDir, "/sys/fs/cgroup/unified/user.slice/u1");
}

TEST(CgroupHierarchiesTest, CoMountedV1ControllersShareOneHierarchy) {
  const char* mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
  auto found = cgroupHierarchies(mountinfo, "3:cpu,cpuacct:/job\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].has(CgroupController::kCpu));
  EXPECT_FALSE(found[0].has(CgroupController::kMemory));
  EXPECT_EQ(found[0].ownCgroupDir, "/sys/fs/cgroup/cpu,cpuacct/job");
}

TEST(LimitMechanismTest, EveryMechanismAndControllerHasADistinctName) {
  EXPECT_STREQ(limitMechanismName(LimitMechanism::kNone), "none");
  EXPECT_STREQ(limitMechanismName(LimitMechanism::kCgroup2), "cgroup2");
  EXPECT_STREQ(limitMechanismName(LimitMechanism::kCgroupV1), "cgroup-v1");
  EXPECT_STREQ(limitMechanismName(LimitMechanism::kRlimit), "rlimit");
  EXPECT_STREQ(cgroupControllerName(CgroupController::kPids), "pids");
  EXPECT_STREQ(cgroupControllerName(CgroupController::kMemory), "memory");
  EXPECT_STREQ(cgroupControllerName(CgroupController::kCpu), "cpu");
}

// limitToKillFor() / limitReached(): the pure checks the supervisor's timer
// and the exit report make on a sandbox cgroup's counters.
struct LimitCase {
  const char* name;
  CgroupUsage usage;
  CgroupLimits limits;
  const char* kill;     // limitToKillFor()
  const char* reached;  // limitReached()
};

class LimitCheckTest : public ::testing::TestWithParam<LimitCase> {};

TEST_P(LimitCheckTest, NamesTheLimitOnlyWhenItsCounterSaysSo) {
  const auto& c = GetParam();
  auto text = [](const char* s) { return std::string(s ? s : "(none)"); };
  EXPECT_EQ(text(limitToKillFor(c.usage, c.limits)), text(c.kill));
  EXPECT_EQ(text(limitReached(c.usage, c.limits)), text(c.reached));
}

constexpr std::uint64_t kSecond = 1'000'000'000;

INSTANTIATE_TEST_SUITE_P(
    Counters, LimitCheckTest,
    ::testing::Values(
        LimitCase{"NothingCounted", {0, 0, 0}, {8, 1 << 20, 1}, nullptr, nullptr},
        LimitCase{"CpuJustBelowTheLimit", {kSecond - 1, 0, 0}, {0, 0, 1}, nullptr, nullptr},
        LimitCase{"CpuAtTheLimit", {kSecond, 0, 0}, {0, 0, 1}, "limits.cpuSeconds", "limits.cpuSeconds"},
        LimitCase{"CpuFarOver", {56 * kSecond / 10, 0, 0}, {0, 0, 1}, "limits.cpuSeconds", "limits.cpuSeconds"},
        LimitCase{"CpuNotAccounted", {std::nullopt, 0, 0}, {0, 0, 1}, nullptr, nullptr},
        LimitCase{"CpuWithoutALimit", {100 * kSecond, 0, 0}, {0, 0, 0}, nullptr, nullptr},
        LimitCase{"HugeCpuLimitDoesNotOverflow", {kSecond, 0, 0}, {0, 0, ~0ULL}, nullptr, nullptr},
        LimitCase{"OneOomKill", {0, 1, 0}, {0, 1 << 20, 0}, "limits.memoryBytes", "limits.memoryBytes"},
        LimitCase{"OomKillWithoutAMemoryLimit", {0, 1, 0}, {0, 0, 0}, nullptr, nullptr},
        LimitCase{"ARefusedForkIsReachedNotKilled", {0, 0, 3}, {8, 0, 0}, nullptr, "limits.pids"},
        LimitCase{"MemoryWinsOverCpuAndPids", {5 * kSecond, 2, 1}, {8, 1 << 20, 1}, "limits.memoryBytes",
                  "limits.memoryBytes"},
        LimitCase{"CpuWinsOverPids", {5 * kSecond, 0, 1}, {8, 1 << 20, 1}, "limits.cpuSeconds", "limits.cpuSeconds"}),
    [](const ::testing::TestParamInfo<LimitCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace stockade::platform
