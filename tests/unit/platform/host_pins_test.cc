// HostPin (host_pins.h): one descriptor per host object in the process,
// shared by identity, closed with its last holder; a replaced object is a new
// identity with a descriptor of its own.
#include "platform/linux/host_pins.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace stockade::platform {
namespace {

std::size_t openDescriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(HostPinTest, PinsOfOneObjectShareOneDescriptorClosedWithTheLastHolder) {
  testing::TempDir dir;
  const std::string file = dir.path() + "/f";
  std::ofstream(file) << "x";
  const std::size_t before = openDescriptors();
  std::optional<HostPin> first = HostPin::open(file.c_str());
  ASSERT_TRUE(*first);
  HostPin second = HostPin::open(file.c_str());
  ASSERT_TRUE(second);
  EXPECT_EQ(first->fd(), second.fd());
  EXPECT_EQ(openDescriptors(), before + 1);
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(second.device(), st.st_dev);
  EXPECT_EQ(second.inode(), st.st_ino);
  EXPECT_EQ(second.links(), 1u);
  EXPECT_TRUE(S_ISREG(second.mode()));
  // The descriptor stays while one holder is left, and goes with the last.
  first.reset();
  struct stat held;
  ASSERT_EQ(::fstat(second.fd(), &held), 0);
  EXPECT_EQ(held.st_ino, st.st_ino);
  EXPECT_EQ(openDescriptors(), before + 1);
  second = HostPin();
  EXPECT_EQ(openDescriptors(), before);
}

TEST(HostPinTest, AReplacedObjectGetsADescriptorOfItsOwnWhileTheOldOneStaysPinned) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/d";
  std::filesystem::create_directory(path);
  HostPin old = HostPin::open(path.c_str());
  ASSERT_TRUE(old);
  std::filesystem::rename(path, dir.path() + "/moved");
  std::filesystem::create_directory(path);
  HostPin now = HostPin::open(path.c_str());
  ASSERT_TRUE(now);
  EXPECT_NE(now.fd(), old.fd());
  EXPECT_NE(now.inode(), old.inode());
  // The old pin still holds the object it identified (now at "moved").
  struct stat held, moved;
  ASSERT_EQ(::fstat(old.fd(), &held), 0);
  ASSERT_EQ(::stat((dir.path() + "/moved").c_str(), &moved), 0);
  EXPECT_EQ(held.st_ino, moved.st_ino);
}

TEST(HostPinTest, AMissingPathOrASymlinkIsPinnedAsWhatIsThere) {
  testing::TempDir dir;
  EXPECT_FALSE(HostPin::open((dir.path() + "/missing").c_str()));
  EXPECT_EQ(HostPin::open((dir.path() + "/missing").c_str()).fd(), -1);
  const std::string target = dir.path() + "/target", link = dir.path() + "/link";
  std::filesystem::create_directory(target);
  std::filesystem::create_directory_symlink(target, link);
  HostPin pinned = HostPin::open(link.c_str());
  ASSERT_TRUE(pinned);
  EXPECT_TRUE(S_ISLNK(pinned.mode())) << "the link's target was pinned, not the link";
  EXPECT_NE(pinned.inode(), HostPin::open(target.c_str()).inode());
}

TEST(MountTableWatchTest, AGenerationIsStableWhileNoMountComesOrGoes) {
  auto first = MountTableWatch::generation();
  ASSERT_TRUE(first.has_value()) << "/proc/self/mountinfo cannot be watched";
  EXPECT_EQ(MountTableWatch::generation(), first);
}

// Counted once for every watcher: a change seen by one call is not lost to
// the next (poll() tells a descriptor of it only once).
TEST(MountTableWatchTest, AMountThatCameAndWentChangesTheGenerationForEveryLaterCall) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root; the unprivileged run cannot change the mount table";
  testing::TempDir dir;
  auto before = MountTableWatch::generation();
  ASSERT_TRUE(before.has_value());
  ASSERT_EQ(::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=4k"), 0) << std::strerror(errno);
  ASSERT_EQ(::umount2(dir.path().c_str(), MNT_DETACH), 0) << std::strerror(errno);
  auto after = MountTableWatch::generation();
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(*after, *before);
  EXPECT_EQ(MountTableWatch::generation(), after);
}

}  // namespace
}  // namespace stockade::platform
