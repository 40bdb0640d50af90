// Directory listings for the mandatory-deny scan: reused only while the
// directory provably has not changed, never through a symlink.
#include "policy/dir_listing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/support/temp_dir.h"

namespace stockade::policy {
namespace {

using testing::TempDir;

std::vector<std::string> names(const DirListing& l) {
  std::vector<std::string> out;
  for (const auto& e : l.entries()) out.push_back(e.name);
  std::sort(out.begin(), out.end());
  return out;
}

// One aged tree per test, made once for the suite.
class DirListingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    t_ = new TempDir();
    for (const char* test : {"unchanged", "changed", "symlink"}) {
      t_->file(std::string(test) + "/tree/sub/leaf/f");
      t_->file(std::string(test) + "/other/.bashrc");
    }
    // A listing is kept only when the directory's ctime was more than two
    // whole seconds old when it was read (dir_listing.h): let the trees age.
    std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  }
  static void TearDownTestSuite() {
    delete t_;
    t_ = nullptr;
  }
  static std::string at(const char* test, const std::string& rel) { return *t_ / (std::string(test) + "/" + rel); }

  static TempDir* t_;
};
TempDir* DirListingTest::t_ = nullptr;

TEST_F(DirListingTest, AnUnchangedTreeIsServedFromTheCacheAtEveryDepth) {
  auto root = [] { return at("unchanged", "tree"); };
  DirListing first = listDirectory(root());
  ASSERT_TRUE(first);
  DirListing firstSub = first.child("sub", root() + "/sub");
  DirListing firstLeaf = firstSub.child("leaf", root() + "/sub/leaf");
  ASSERT_TRUE(firstLeaf);
  DirListing again = listDirectory(root());
  DirListing againSub = again.child("sub", root() + "/sub");
  DirListing againLeaf = againSub.child("leaf", root() + "/sub/leaf");
  ASSERT_TRUE(againLeaf);
  EXPECT_EQ(&again.entries(), &first.entries());  // the very same cached vector
  EXPECT_EQ(&againSub.entries(), &firstSub.entries());
  EXPECT_EQ(&againLeaf.entries(), &firstLeaf.entries());
  EXPECT_EQ(names(againLeaf), std::vector<std::string>{"f"});
}

TEST_F(DirListingTest, AChangedDirectoryIsReadAfreshLeafOrNot) {
  auto root = [] { return at("changed", "tree"); };
  DirListing warm = listDirectory(root());
  DirListing warmSub = warm.child("sub", root() + "/sub");
  DirListing warmLeaf = warmSub.child("leaf", root() + "/sub/leaf");
  ASSERT_TRUE(warmLeaf);
  t_->file("changed/tree/sub/leaf/.gitconfig");  // a leaf gains a file
  t_->dir("changed/tree/sub/new");               // a directory with subdirectories gains one
  DirListing sub = listDirectory(root()).child("sub", root() + "/sub");
  EXPECT_EQ(names(sub), (std::vector<std::string>{"leaf", "new"}));
  DirListing leaf = sub.child("leaf", root() + "/sub/leaf");
  EXPECT_EQ(names(leaf), (std::vector<std::string>{".gitconfig", "f"}));
}

TEST_F(DirListingTest, ACachedDirectoryReplacedByASymlinkIsNotFollowed) {
  auto root = [] { return at("symlink", "tree"); };
  DirListing warm = listDirectory(root());
  ASSERT_TRUE(warm.child("sub", root() + "/sub"));
  std::filesystem::rename(root() + "/sub", at("symlink", "moved"));
  ASSERT_EQ(::symlink(at("symlink", "other").c_str(), (root() + "/sub").c_str()), 0);
  DirListing sub = listDirectory(root()).child("sub", root() + "/sub");
  EXPECT_FALSE(sub);  // neither the cached listing nor the symlink's target
  // The allowed neighbour: the moved directory is listed under its new name.
  EXPECT_EQ(names(listDirectory(at("symlink", "moved"))), std::vector<std::string>{"leaf"});
}

}  // namespace
}  // namespace stockade::policy
