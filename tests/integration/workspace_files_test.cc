// The file API against a real directory: hostile path spellings and planted
// symlinks (each asserting the host is unchanged), a symlink swapped while
// uploads and downloads run, the policy's read and write denies, size
// limits, atomic replacement.
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "tests/support/read_file.h"
#include "tests/support/workspace_fixture.h"

namespace stockade {
namespace {

using testing::codeOf;
using testing::messageOf;
using testing::WorkspaceFixture;

class WorkspaceFilesTest : public WorkspaceFixture {
 protected:
  void SetUp() override {
    t_.file("ws/inner/file.txt", "INSIDE\n");
    t_.symlink("../outside", "ws/up");                 // a relative link that climbs out
    t_.symlink(outside_, "ws/abs");                    // an absolute link
    t_.symlink("../../outside/secret", "ws/inner/deep");  // a final link out
    t_.symlink("up", "ws/chain");                      // a link to a link out
    t_.symlink("/proc/self/root" + outside_, "ws/magic");  // through a magic link
    t_.symlink("inner/file.txt", "ws/ok_link");        // a link that stays inside
  }
};

struct HostilePath {
  const char* name;
  std::string path;
};

const std::vector<HostilePath>& hostilePaths() {
  static const std::vector<HostilePath> paths = {
      {"dotdot", "/workspace/../outside/secret"},
      {"dotdot_deep", "/workspace/inner/../../outside/secret"},
      {"absolute_elsewhere", "/etc/passwd"},
      {"nul_byte", std::string("/workspace/inner/file.txt\0/../../../outside/secret", 49)},
      {"relative_link_out", "/workspace/up/secret"},
      {"absolute_link_out", "/workspace/abs/secret"},
      {"final_link_out", "/workspace/inner/deep"},
      {"chained_link_out", "/workspace/chain/secret"},
      {"magic_link_out", "/workspace/magic/secret"},
      {"link_out_then_new_name", "/workspace/up/new-file"},
  };
  return paths;
}

TEST_F(WorkspaceFilesTest, HostileSpellingsAreInvalidPathForEveryOperationAndTheHostIsUnchanged) {
  Workspace w = open();
  const auto before = host();
  for (const auto& h : hostilePaths()) {
    SCOPED_TRACE(h.name);
    auto up = w.upload(h.path, "PLANTED");
    EXPECT_EQ(codeOf(up), "invalid_path") << messageOf(up);
    auto down = w.download(h.path);
    EXPECT_EQ(codeOf(down), "invalid_path") << messageOf(down);
    EXPECT_EQ(codeOf(w.list(h.path)), "invalid_path");
    EXPECT_EQ(codeOf(w.makeDir(h.path)), "invalid_path");
    EXPECT_EQ(codeOf(w.exportTree(h.path)), "invalid_path");
    MemorySource empty("");
    EXPECT_EQ(codeOf(w.importTree(empty, h.path)), "invalid_path");
    EXPECT_EQ(codeOf(w.watch(h.path, true)), "invalid_path");
    // A final symlink is itself something that exists (and is removable, as
    // a link); every other spelling is refused.
    if (std::string(h.name) != "final_link_out") {
      EXPECT_EQ(codeOf(w.exists(h.path)), "invalid_path");
      EXPECT_EQ(codeOf(w.remove(h.path)), "invalid_path");
    }
  }
  EXPECT_EQ(host(), before);
  EXPECT_EQ(testing::listTree(outside_).size(), 1u);
}

TEST_F(WorkspaceFilesTest, AFinalSymlinkOutIsRemovedAsALinkAndWhatItNamesStays) {
  Workspace w = open();
  EXPECT_EQ(std::get<bool>(w.exists("/workspace/inner/deep")), true);
  EXPECT_EQ(codeOf(w.remove("/workspace/inner/deep")), "ok");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(ws_ + "/inner/deep")));
  EXPECT_EQ(testing::readAll(::open(secret_.c_str(), O_RDONLY)), "OUTSIDE-SECRET\n");
}

TEST_F(WorkspaceFilesTest, ALinkThatStaysInsideIsFollowed) {
  Workspace w = open();
  auto r = w.download("/workspace/ok_link");
  ASSERT_EQ(codeOf(r), "ok") << messageOf(r);
  EXPECT_EQ(std::get<std::string>(r), "INSIDE\n");
}

TEST_F(WorkspaceFilesTest, AnUploadThroughALinkInsideWritesTheFileItNames) {
  Workspace w = open();
  ASSERT_EQ(codeOf(w.upload("/workspace/ok_link", "NEW")), "ok");
  EXPECT_EQ(testing::listTree(ws_).at("ok_link"), "symlink -> inner/file.txt");  // the link stays a link
  EXPECT_EQ(std::get<std::string>(w.download("/workspace/inner/file.txt")), "NEW");
  t_.symlink("inner/missing", "ws/dangling");
  EXPECT_EQ(codeOf(w.upload("/workspace/dangling", "x")), "not_found");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/inner/missing"));
}

TEST_F(WorkspaceFilesTest, UploadCreatesParentsAndReplacesAtomically) {
  Workspace w = open();
  ASSERT_EQ(codeOf(w.upload("/workspace/a/b/c.txt", "one")), "ok");
  EXPECT_EQ(std::get<std::string>(w.download("/workspace/a/b/c.txt")), "one");
  ::chmod((ws_ + "/a/b/c.txt").c_str(), 0600);
  ASSERT_EQ(codeOf(w.upload("/workspace/a/b/c.txt", "two!")), "ok");
  EXPECT_EQ(std::get<std::string>(w.download("/workspace/a/b/c.txt")), "two!");
  struct stat st {};
  ASSERT_EQ(::stat((ws_ + "/a/b/c.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // a replaced file keeps its permissions
  // No temporary is left behind.
  EXPECT_EQ(testing::listTree(ws_ + "/a/b").size(), 1u);
}

// While an upload runs its temporary has no name (O_TMPFILE): a daemon
// killed meanwhile (SIGKILL) leaves nothing in the workspace.
TEST_F(WorkspaceFilesTest, AnUploadInProgressHasNothingInTheWorkspaceUntilItIsCommitted) {
  Workspace w = open();
  ASSERT_EQ(codeOf(w.upload("/workspace/d/keep", "k")), "ok");
  auto writer = w.openWrite("/workspace/d/f");
  ASSERT_TRUE(std::holds_alternative<FileWriter>(writer)) << std::get<WorkspaceError>(writer).message;
  auto& fw = std::get<FileWriter>(writer);
  ASSERT_FALSE(fw.write(std::string(100000, 'x')));
  EXPECT_EQ(testing::listTree(ws_ + "/d").size(), 1u) << "a named temporary is in the workspace mid-upload";
  ASSERT_FALSE(fw.commit());
  EXPECT_EQ(testing::readWholeFile(ws_ + "/d/f"), std::string(100000, 'x'));
  EXPECT_EQ(testing::listTree(ws_ + "/d").size(), 2u);
}

TEST_F(WorkspaceFilesTest, AReaderNeverSeesAPartlyWrittenFile) {
  Workspace w = open();
  const std::string a(1 << 20, 'a'), b(1 << 20, 'b');
  ASSERT_EQ(codeOf(w.upload("/workspace/f", a)), "ok");
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::thread reader([&] {
    while (!stop) {
      int fd = ::open((ws_ + "/f").c_str(), O_RDONLY);
      if (fd < 0) continue;
      std::string got = testing::readAll(fd);
      ::close(fd);
      if (got != a && got != b) ++torn;
      ++reads;
    }
  });
  for (int i = 0; i < 40; ++i) ASSERT_EQ(codeOf(w.upload("/workspace/f", i % 2 ? a : b)), "ok");
  stop = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

TEST_F(WorkspaceFilesTest, MissingDirectoriesAndTypesGetTheSeedCodes) {
  Workspace w = open();
  EXPECT_EQ(codeOf(w.download("/workspace/missing")), "not_found");
  EXPECT_EQ(codeOf(w.download("/workspace/inner")), "is_directory");
  EXPECT_EQ(codeOf(w.download("/workspace")), "is_directory");
  EXPECT_EQ(codeOf(w.upload("/workspace/inner", "x")), "is_directory");
  EXPECT_EQ(codeOf(w.upload("/workspace", "x")), "is_directory");
  EXPECT_EQ(codeOf(w.upload("/workspace/inner/file.txt/x", "x")), "not_directory");
  EXPECT_EQ(codeOf(w.list("/workspace/inner/file.txt")), "not_directory");
  EXPECT_EQ(codeOf(w.list("/workspace/nope")), "not_found");
  EXPECT_EQ(codeOf(w.remove("/workspace/nope")), "not_found");
  EXPECT_EQ(codeOf(w.remove("/workspace")), "invalid_path");
  EXPECT_EQ(std::get<bool>(w.exists("/workspace/nope")), false);
  EXPECT_EQ(std::get<bool>(w.exists("/workspace/inner/file.txt/x")), false);
  EXPECT_EQ(std::get<bool>(w.exists("/workspace/inner/file.txt")), true);
  EXPECT_EQ(std::get<bool>(w.exists("/workspace")), true);
  ::mkfifo((ws_ + "/fifo").c_str(), 0600);
  auto fifo = w.download("/workspace/fifo");  // refused without opening it (it would block)
  EXPECT_EQ(codeOf(fifo), "invalid_path");
  EXPECT_NE(messageOf(fifo).find("a fifo"), std::string::npos);
}

TEST_F(WorkspaceFilesTest, ListGivesNameTypeAndSandboxPath) {
  Workspace w = open();
  auto r = w.list("/workspace/inner");
  ASSERT_EQ(codeOf(r), "ok");
  auto items = std::get<std::vector<EntryInfo>>(r);
  std::sort(items.begin(), items.end(), [](auto& x, auto& y) { return x.name < y.name; });
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], (EntryInfo{"deep", EntryType::kSymlink, "/workspace/inner/deep"}));
  EXPECT_EQ(items[1], (EntryInfo{"file.txt", EntryType::kFile, "/workspace/inner/file.txt"}));
  EXPECT_EQ(entryTypeName(EntryType::kDirectory), "dir");
}

TEST_F(WorkspaceFilesTest, MakeDirCreatesParentsAndSaysWhetherItMadeOne) {
  Workspace w = open();
  EXPECT_EQ(std::get<bool>(w.makeDir("/workspace/x/y/z")), true);
  EXPECT_TRUE(std::filesystem::is_directory(ws_ + "/x/y/z"));
  EXPECT_EQ(std::get<bool>(w.makeDir("/workspace/x/y/z")), false);
  EXPECT_EQ(codeOf(w.makeDir("/workspace/inner/file.txt")), "not_directory");
}

TEST_F(WorkspaceFilesTest, RemoveTakesFilesLinksAndWholeTreesWithoutFollowingLinks) {
  Workspace w = open();
  t_.file("ws/tree/a/b/c", "c");
  t_.symlink(outside_, "ws/tree/a/out");
  ASSERT_EQ(codeOf(w.remove("/workspace/tree")), "ok");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/tree"));
  EXPECT_EQ(testing::listTree(outside_).size(), 1u);  // the link's target is untouched
  ASSERT_EQ(codeOf(w.remove("/workspace/inner/file.txt")), "ok");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/inner/file.txt"));
}

TEST_F(WorkspaceFilesTest, PolicyDeniedReadsAndWritesArePermissionDeniedNamingTheRule) {
  t_.file("ws/.secret", "WS-SECRET");
  t_.file("ws/.env", "A=1");
  t_.dir("ws/.git/hooks");
  t_.file("ws/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("ws/.git/config", "[core]\n");
  Workspace w = open();
  const auto before = host();
  auto read = w.download("/workspace/.secret");
  EXPECT_EQ(codeOf(read), "permission_denied");
  EXPECT_NE(messageOf(read).find("filesystem.denyRead"), std::string::npos) << messageOf(read);
  // The same object through a link inside the workspace: judged by what it is.
  t_.symlink(".secret", "ws/alias");
  EXPECT_EQ(codeOf(w.download("/workspace/alias")), "permission_denied");
  auto write = w.upload("/workspace/.env", "A=2");
  EXPECT_EQ(codeOf(write), "permission_denied");
  EXPECT_NE(messageOf(write).find("filesystem.denyWrite"), std::string::npos) << messageOf(write);
  EXPECT_EQ(codeOf(w.upload("/workspace/.git/hooks/pre-commit", "#!/bin/sh\n")), "permission_denied");
  EXPECT_EQ(codeOf(w.upload("/workspace/.git/config", "[core]\n\thooksPath=/tmp\n")), "permission_denied");
  EXPECT_EQ(codeOf(w.remove("/workspace/.env")), "permission_denied");
  EXPECT_EQ(codeOf(w.remove("/workspace/.git")), "permission_denied");  // a tree holding protected names
  EXPECT_EQ(codeOf(w.remove("/workspace/.secret")), "permission_denied");
  EXPECT_EQ(codeOf(w.makeDir("/workspace/.git/hooks/sub")), "permission_denied");
  // A read-denied path is masked read-only in the sandbox's view: no writes there either.
  EXPECT_EQ(codeOf(w.upload("/workspace/.secret", "replaced")), "permission_denied");
  ::unlink((ws_ + "/alias").c_str());
  EXPECT_EQ(host(), before);
  // The neighbours are allowed.
  EXPECT_EQ(codeOf(w.upload("/workspace/.envrc.example", "ok")), "ok");
  EXPECT_EQ(codeOf(w.upload("/workspace/src/.env.d", "ok")), "ok");
  EXPECT_EQ(codeOf(w.download("/workspace/inner/file.txt")), "ok");
}

TEST_F(WorkspaceFilesTest, ARefusedUploadOrMakeDirLeavesNoParentItWouldHaveMade) {
  Workspace w = open();
  const auto before = host();
  // The file (a hook) is refused: the directories leading to it are not made either.
  EXPECT_EQ(codeOf(w.upload("/workspace/fresh/.git/hooks/pre-commit", "#!/bin/sh\n")), "permission_denied");
  EXPECT_EQ(codeOf(w.makeDir("/workspace/other/.git/hooks/sub")), "permission_denied");
  EXPECT_EQ(codeOf(w.upload("/workspace/deep/er/.bashrc", "evil")), "permission_denied");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/fresh"));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/other"));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/deep"));
  EXPECT_EQ(host(), before);
  // The neighbours: a file beside the protected names, with its new parents.
  EXPECT_EQ(codeOf(w.upload("/workspace/fresh/.git-notes/readme", "ok")), "ok");
  EXPECT_EQ(codeOf(w.makeDir("/workspace/other/hooks/sub")), "ok");
  EXPECT_TRUE(std::filesystem::is_directory(ws_ + "/other/hooks/sub"));
}

TEST_F(WorkspaceFilesTest, WritesOutsideAllowWriteAreRefused) {
  t_.dir("ws/out");
  Workspace w = open(R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["./out"], "denyWrite": []}})");
  auto r = w.upload("/workspace/top.txt", "x");
  EXPECT_EQ(codeOf(r), "permission_denied");
  EXPECT_NE(messageOf(r).find("allowWrite"), std::string::npos);
  EXPECT_EQ(codeOf(w.upload("/workspace/out/ok.txt", "x")), "ok");
  EXPECT_EQ(codeOf(w.makeDir("/workspace/newdir")), "permission_denied");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/top.txt"));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/newdir"));
}

TEST_F(WorkspaceFilesTest, OverTheSizeLimitIsTooLargeAndNothingIsWritten) {
  Workspace w = open(testing::kWorkspacePolicy, {.maxFileBytes = 1000});
  auto big = w.upload("/workspace/big", std::string(1001, 'x'));
  EXPECT_EQ(codeOf(big), "too_large");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/big"));
  EXPECT_EQ(testing::listTree(ws_).count("big"), 0u);
  EXPECT_EQ(codeOf(w.upload("/workspace/fits", std::string(1000, 'x'))), "ok");
  t_.file("ws/huge", std::string(1001, 'y'));
  EXPECT_EQ(codeOf(w.download("/workspace/huge")), "too_large");
  // No temporary left in the directory.
  for (const auto& [rel, _] : testing::listTree(ws_)) EXPECT_EQ(rel.find(".stockade-upload-"), std::string::npos) << rel;
}

TEST_F(WorkspaceFilesTest, ThePolicysFileSizeLimitHoldsForUploads) {
  Workspace w = open(R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."], "denyWrite": []},
                         "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 100}})");
  auto r = w.upload("/workspace/f", std::string(101, 'x'));
  EXPECT_EQ(codeOf(r), "too_large");
  EXPECT_NE(messageOf(r).find("limits.fileSizeBytes"), std::string::npos) << messageOf(r);
  EXPECT_EQ(codeOf(w.upload("/workspace/f", std::string(100, 'x'))), "ok");
}

// 2 GiB up and down through the streaming calls: the bytes pass through the
// caller's buffer only, and every one arrives where it belongs.
TEST_F(WorkspaceFilesTest, ATwoGibUploadAndDownloadStreamInBoundedMemory) {
  constexpr std::uint64_t kBytes = std::uint64_t{2} << 30;
  // Byte i of the file is a function of i (not of its position in a chunk).
  auto byteAt = [](std::uint64_t i) { return static_cast<char>((i * 2654435761u) >> 13); };
  class Generated final : public ByteSource {
   public:
    explicit Generated(decltype(byteAt) f) : at(f) {}
    WorkspaceResult<std::size_t> read(std::span<char> buf) override {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), kBytes - offset));
      for (std::size_t k = 0; k < n; ++k) buf[k] = at(offset + k);
      offset += n;
      return n;
    }
    decltype(byteAt) at;
    std::uint64_t offset = 0;
  } source(byteAt);
  class Checked final : public ByteSink {
   public:
    explicit Checked(decltype(byteAt) f) : at(f) {}
    WorkspaceStatus write(std::string_view bytes) override {
      for (char c : bytes) mismatches += c != at(offset++);
      return std::nullopt;
    }
    decltype(byteAt) at;
    std::uint64_t offset = 0, mismatches = 0;
  } sink(byteAt);

  Workspace w = open();
  struct rusage before {};
  ::getrusage(RUSAGE_SELF, &before);
  ASSERT_EQ(codeOf(w.upload("/workspace/big/blob", source)), "ok");
  EXPECT_EQ(std::filesystem::file_size(ws_ + "/big/blob"), kBytes);
  ASSERT_EQ(codeOf(w.download("/workspace/big/blob", sink)), "ok");
  struct rusage after {};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(sink.offset, kBytes);
  EXPECT_EQ(sink.mismatches, 0u);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak RSS growth";
}

TEST_F(WorkspaceFilesTest, AGoneSandboxIsStaleEpoch) {
  auto live = std::make_shared<std::atomic<bool>>(true);
  Workspace w = open(testing::kWorkspacePolicy, {.live = [live] { return live->load(); }});
  EXPECT_EQ(codeOf(w.upload("/workspace/a", "x")), "ok");
  *live = false;
  EXPECT_EQ(codeOf(w.upload("/workspace/a", "y")), "stale_epoch");
  EXPECT_EQ(codeOf(w.download("/workspace/a")), "stale_epoch");
  EXPECT_EQ(codeOf(w.list("/workspace")), "stale_epoch");
}

// A thread swaps /workspace/swap between a real directory and a symlink to
// the outside while uploads and downloads go through it: nothing outside is
// ever read or written.
TEST_F(WorkspaceFilesTest, ASymlinkSwappedDuringUploadsAndDownloadsNeverLetsThemOut) {
  t_.file("ws/swap/data", "INSIDE");
  t_.file("outside/data", "OUTSIDE");
  t_.symlink("../outside", "ws/swaplink");
  Workspace w = open();
  const auto outsideBefore = testing::listTree(outside_);
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    while (!stop) {
      if (::renameat2(AT_FDCWD, (ws_ + "/swap").c_str(), AT_FDCWD, (ws_ + "/swaplink").c_str(), RENAME_EXCHANGE) == 0)
        ++swaps;
    }
  });
  int inside = 0, refused = 0, escaped = 0;
  for (int i = 0; i < 3000; ++i) {
    auto d = w.download("/workspace/swap/data");
    if (auto* s = std::get_if<std::string>(&d)) {
      if (*s == "INSIDE") ++inside;
      else ++escaped;
    } else {
      ++refused;
    }
    auto u = w.upload("/workspace/swap/new" + std::to_string(i % 10), "PLANTED");
    if (u) {
      EXPECT_TRUE(u->code == WorkspaceErrorCode::kInvalidPath || u->code == WorkspaceErrorCode::kNotFound) << u->message;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(escaped, 0);
  EXPECT_GT(swaps.load(), 100);
  EXPECT_GT(inside, 0);
  EXPECT_GT(refused, 0);  // the race was really run both ways
  EXPECT_EQ(testing::listTree(outside_), outsideBefore);
}

}  // namespace
}  // namespace stockade
