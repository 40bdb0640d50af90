// Where the pids cgroup lives, from the texts of /proc/self/mountinfo and
// /proc/self/cgroup, without touching the host's cgroups.
#include "platform/linux/cgroup.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stockade::platform {
namespace {

std::vector<std::string> dirs(const std::vector<PidsHierarchy>& found) {
  std::vector<std::string> out;
  for (const auto& h : found) out.push_back(std::string(pidsMechanismName(h.mechanism)) + " " + h.ownCgroupDir);
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

TEST(PidsHierarchiesTest, AHybridHostOffersCgroup2FirstThenTheV1PidsHierarchy) {
  const char* cgroup = "9:name=systemd:/\n8:pids:/user.slice/u1\n1:cpu:/\n0::/user.slice/u1\n";
  EXPECT_EQ(dirs(pidsHierarchies(kHybridMountinfo, cgroup)),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/unified/user.slice/u1",
                                      "cgroup-v1 /sys/fs/cgroup/pids/user.slice/u1"}));
}

TEST(PidsHierarchiesTest, TheRootCgroupMapsToTheMountPointItself) {
  EXPECT_EQ(dirs(pidsHierarchies(kHybridMountinfo, "8:pids:/\n0::/\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/unified", "cgroup-v1 /sys/fs/cgroup/pids"}));
}

TEST(PidsHierarchiesTest, AV1MountWithoutThePidsControllerIsNoCandidate) {
  const char* mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n";
  EXPECT_TRUE(pidsHierarchies(mountinfo, "2:cpu,cpuacct:/a\n").empty());
  // "pids" as part of another option is not the controller.
  EXPECT_TRUE(pidsHierarchies("39 31 0:36 / /x rw - cgroup cgroup rw,name=mypids\n", "3:name=mypids:/\n").empty());
}

TEST(PidsHierarchiesTest, APureCgroup2HostHasOneCandidate) {
  const char* mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  EXPECT_EQ(dirs(pidsHierarchies(mountinfo, "0::/user.slice/user-1000.slice/session-2.scope\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"}));
}

TEST(PidsHierarchiesTest, AMountOfASubtreeMapsOurPathBeneathItsRoot) {
  // A container: the hierarchy is mounted from /docker/abc; our path is inside it.
  const char* mountinfo = "50 40 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(dirs(pidsHierarchies(mountinfo, "0::/docker/abc/job\n")),
            (std::vector<std::string>{"cgroup2 /sys/fs/cgroup/job"}));
  EXPECT_EQ(dirs(pidsHierarchies(mountinfo, "0::/docker/abc\n")), (std::vector<std::string>{"cgroup2 /sys/fs/cgroup"}));
  // A sibling that only shares a prefix, and a path outside the mounted subtree, are not shown by this mount.
  EXPECT_TRUE(pidsHierarchies(mountinfo, "0::/docker/abcd\n").empty());
  EXPECT_TRUE(pidsHierarchies(mountinfo, "0::/other\n").empty());
}

TEST(PidsHierarchiesTest, EscapedMountPointsAreDecodedAndDuplicateMountsCollapse) {
  const char* mountinfo =
      "41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n"
      "42 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(dirs(pidsHierarchies(mountinfo, "0::/a\n")), (std::vector<std::string>{"cgroup2 /mnt/my cgroups/a"}));
}

TEST(PidsHierarchiesTest, MalformedLinesAreSkipped) {
  const char* mountinfo = "garbage\n1 2 3\n41 31 0:38 / /u rw - cgroup2\n\n";
  EXPECT_TRUE(pidsHierarchies(mountinfo, "0::/\nnot-a-line\n8:pids\n").empty());
  EXPECT_TRUE(pidsHierarchies(kHybridMountinfo, "0::relative\n8:pids:relative\n").empty());
}

TEST(PidsMechanismTest, EveryMechanismHasADistinctName) {
  EXPECT_STREQ(pidsMechanismName(PidsMechanism::kNone), "none");
  EXPECT_STREQ(pidsMechanismName(PidsMechanism::kCgroup2), "cgroup2");
  EXPECT_STREQ(pidsMechanismName(PidsMechanism::kCgroupV1), "cgroup-v1");
}

}  // namespace
}  // namespace stockade::platform
