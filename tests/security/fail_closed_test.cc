// Every rule is enforced or the spawn is refused naming it: the denied root,
// the sandbox's own /proc and /dev, a write-allowed /tmp, a working directory
// inside a denied tree, a write-allowed directory the host mounts read-only.
// Each beside the allowed neighbour that must work.
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "tests/security/sandbox_fixture.h"
#include "tests/support/private_mounts.h"

namespace stockade::testing {
namespace {

class FailClosedTest : public SandboxTest {
 protected:
  // `sh -c script` under the current policy, in `cwd` (default: the workspace).
  ProcessResult sh(const std::string& script, const std::string& cwd = "") {
    auto argv = stockadeArgv();
    if (!cwd.empty()) {
      auto at = std::find(argv.begin(), argv.end(), "--cwd");
      *(at + 1) = cwd;
    }
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    return runProcess(argv);
  }
  static std::string outcome(const ProcessResult& r) { return std::to_string(r.exitCode) + "\n" + r.out + "\x1f" + r.err; }
  // Two runs ("exit\nstdout\x1fstderr" each) after `mount` made its mounts
  // in a mount namespace of the test's own (tests/support/private_mounts.h);
  // the first is "SETUP: ..." when that could not be made.
  std::pair<std::string, std::string> twoRunsInOwnMounts(const std::function<const char*()>& mount,
                                                         const std::function<ProcessResult()>& first,
                                                         const std::function<ProcessResult()>& second) {
    const std::string both = inPrivateMounts([&]() -> std::string {
      if (const char* failed = mount()) return std::string("SETUP: ") + failed;
      const std::string a = outcome(first());
      return a + "\x1e" + outcome(second());
    });
    const auto cut = both.find('\x1e');
    return {both.substr(0, cut), cut == std::string::npos ? "" : both.substr(cut + 1)};
  }
  // What a system program needs under a denied "/": the usual directories
  // and the symlinks (merged /usr) they are reached through.
  static nlohmann::json systemCarveOuts() { return {"/usr", "/lib", "/lib64", "/bin", "/etc"}; }
};

TEST_F(FailClosedTest, DenyReadRootDeniesEveryReadWhileCarveOutsAreReadable) {
  nlohmann::json allow = systemCarveOuts();
  allow.push_back(ws);
  policy["filesystem"] = {{"denyRead", {"/", "/etc/shadow"}},
                          {"allowRead", allow},
                          {"allowWrite", {ws}},
                          {"denyWrite", nlohmann::json::array()}};
  auto r = sh("cat " + home + "/.ssh/id_ed25519; echo key=$?; cat " + home + "/notes.txt; echo notes=$?; "
              "ls \"$HOME\" >/dev/null 2>&1; echo home=$?; cat /etc/shadow; echo shadow=$?; cat " + ws + "/README; "
              "echo made > " + ws + "/out && cat " + ws + "/out; ls /");
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("HOME-NOTES"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("notes=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("home=2\n"), std::string::npos) << "the real home is gone too: " << r.out;
  // A deny inside a carve-out holds: /etc/shadow is an empty file there.
  EXPECT_NE(r.out.find("home=2\nshadow=0\nWORKSPACE-README"), std::string::npos) << r.out;
  // The same run: the program ran, read its carve-out and wrote its workspace.
  EXPECT_NE(r.out.find("WORKSPACE-README\nmade\n"), std::string::npos) << r.out << r.err;
  // Only what the policy carved back (and the sandbox's own /dev, /proc, /tmp) is there.
  EXPECT_NE(r.out.find("bin\ndev\netc\nlib\nlib64\nproc\ntmp\nusr\nvar\n"), std::string::npos) << r.out;
}

TEST_F(FailClosedTest, UnderADeniedRootAProgramNotCarvedOutFailsSayingWhatToAllow) {
  policy["filesystem"] = {{"denyRead", {"/"}}, {"allowRead", {ws}}, {"allowWrite", {ws}},
                          {"denyWrite", nlohmann::json::array()}};
  auto r = sh("echo ran");
  EXPECT_EQ(r.exitCode, 127) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("lies in the read-denied \"/\" (filesystem.denyRead)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(R"("allowRead": ["/usr", "/lib", "/lib64", "/bin", "/etc"])"), std::string::npos) << r.err;
}

TEST_F(FailClosedTest, ADeniedProcAndSysAreMaskedWhileTheProgramRuns) {
  policy["filesystem"]["denyRead"] = {"/proc", "/sys"};
  auto r = sh("cat /proc/self/status; echo proc=$?; ls /sys | wc -l; cat " + ws + "/README");
  EXPECT_EQ(r.out.find("Name:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("proc=1\n0\nWORKSPACE-README\n"), std::string::npos) << r.out << r.err;
}

// A path that reaches /proc/self (or another process's directory) through a
// link names the deriving process's files: "/etc/mtab" was derived as
// "/proc/<stockade's pid>/mounts", which the sandbox's own /proc does not
// have, so nothing was masked and the child read its mount table while
// `policy check` called the entry denied. Such an entry is refused naming
// it; denying "/proc" itself (the fix the message names) holds.
TEST_F(FailClosedTest, ADeniedPathThroughProcSelfIsRefusedNamingItWhileADeniedProcHidesIt) {
  const std::string link = ws + "/mounts-link";
  std::filesystem::create_symlink("/proc/self/mounts", link);
  for (const std::string& entry : {std::string("/proc/self/mountinfo"), std::string("/proc/mounts"), link}) {
    policy["filesystem"]["denyRead"] = {entry};
    auto refused = sh("echo ran; cat /proc/self/mountinfo");
    EXPECT_EQ(refused.exitCode, 125) << entry << ": " << refused.out;
    EXPECT_EQ(refused.out, "") << entry;
    EXPECT_NE(refused.err.find("filesystem.denyRead[0]: \"" + entry + "\" resolves through \"/proc/self\""),
              std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("Deny \"/proc\" as a whole"), std::string::npos) << refused.err;
  }
  // The neighbour: "/proc" denied, the link into it finds nothing, and the program ran.
  policy["filesystem"]["denyRead"] = {"/proc"};
  auto masked = sh("cat " + link + "; echo link=$?; cat /proc/self/mountinfo; echo own=$?; cat " + ws + "/README");
  EXPECT_EQ(masked.out.find(" / "), std::string::npos) << "a mount table was read: " << masked.out;
  EXPECT_NE(masked.out.find("link=1\nown=1\nWORKSPACE-README\n"), std::string::npos) << masked.out << masked.err;
}

TEST_F(FailClosedTest, ADeniedDevIsRefusedNamingTheEntryWhileADeniedDevShmIsMasked) {
  policy["filesystem"]["denyRead"] = {"/dev"};
  auto refused = sh("echo ran");
  EXPECT_EQ(refused.exitCode, 125);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("setup step \"coverage\""), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("filesystem.defaultWrite \"/dev/null\": hidden by the mask for filesystem.denyRead \"/dev\""),
            std::string::npos)
      << refused.err;
  policy["filesystem"]["denyRead"] = {"/dev/shm"};
  auto masked = sh("echo x > /dev/shm/f; echo shm=$?; echo ran > /dev/null && echo ran");
  EXPECT_EQ(masked.out, "shm=2\nran\n") << masked.err;
  EXPECT_NE(masked.err.find("/dev/shm/f: Read-only file system"), std::string::npos) << masked.err;
}

TEST_F(FailClosedTest, AProjectInTmpWithAReadDeniedDirectoryRunsWithItMasked) {
  // /tmp is a default write path (the sandbox's own TMPDIR); a read-denied
  // directory of a project beneath it is masked there, not a missing default.
  const std::string project = "/tmp/stockade-fc-project-" + std::to_string(::getpid());
  std::filesystem::create_directories(project + "/secret");
  file(project + "/secret/key", "PROJECT-SECRET");
  file(project + "/README", "PROJECT-README");
  policy["filesystem"] = {{"denyRead", {project + "/secret"}},
                          {"allowRead", nlohmann::json::array()},
                          {"allowWrite", {project}},
                          {"denyWrite", nlohmann::json::array()}};
  auto r = sh("cat secret/key; echo key=$?; echo x > secret/new; echo new=$?; cat README; "
              "echo made > out && cat out",
              project);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("PROJECT-SECRET"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key=1\nnew=2\nPROJECT-READMEmade\n"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(project + "/secret/new"));
  EXPECT_TRUE(std::filesystem::exists(project + "/out"));
  std::filesystem::remove_all(project);
}

TEST_F(FailClosedTest, AWorkingDirectoryInsideADeniedTreeNamesTheDenyingEntry) {
  file(ws + "/private/sub/notes", "P");
  policy["filesystem"]["denyRead"] = {ws + "/private"};
  for (const std::string& cwd : {ws + "/private/sub", ws + "/private"}) {
    auto r = sh("pwd", cwd);
    EXPECT_EQ(r.exitCode, 125) << cwd;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("chdir(\"" + cwd + "\") failed: ENOENT"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the working directory \"" + cwd + "\" lies in the read-denied \"" + ws +
                         "/private\" (filesystem.denyRead)"),
              std::string::npos)
        << r.err;
  }
  auto ok = sh("pwd", ws);
  EXPECT_EQ(ok.out, ws + "\n") << ok.err;
}

TEST_F(FailClosedTest, AWriteAllowedTmpIsTheHostsTmpOtherwiseThePrivateOne) {
  const std::string name = "/tmp/stockade-fail-closed-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove(name, ec);
  policy["filesystem"]["allowWrite"] = {ws, "/tmp"};
  auto host = sh("echo host > " + name + " && echo wrote");
  EXPECT_EQ(host.out, "wrote\n") << host.err;
  EXPECT_EQ(slurp(name), "host\n") << "a write-allowed /tmp is the host's";
  std::filesystem::remove(name, ec);
  policy["filesystem"]["allowWrite"] = {ws};
  auto privateTmp = sh("echo private > " + name + " && cat " + name);
  EXPECT_EQ(privateTmp.out, "private\n") << privateTmp.err;
  EXPECT_FALSE(std::filesystem::exists(name)) << "without it, writes stay in the sandbox's own /tmp";
}

TEST_F(FailClosedTest, AWriteAllowedDirectoryUnderTmpIsTheHostsWhileTheRestOfTmpIsPrivate) {
  const std::string dir = "/tmp/stockade-fail-closed-dir-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0777);  // the unprivileged re-run writes it too
  policy["filesystem"]["allowWrite"] = {ws, dir};
  auto r = sh("echo in > " + dir + "/f && echo out > /tmp/beside-" + std::to_string(::getpid()) + " && echo wrote");
  EXPECT_EQ(r.out, "wrote\n") << r.err;
  EXPECT_EQ(slurp(dir + "/f"), "in\n");
  EXPECT_FALSE(std::filesystem::exists("/tmp/beside-" + std::to_string(::getpid())));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// A write-allowed directory the host mounts read-only would be claimed
// writable while every write there fails with EROFS: the spawn is refused
// naming the entry. The same mount beneath a writable entry is a reported
// degradation, and the rest of that entry stays writable. The read-only
// mount is made in a child's own mount namespace (private_mounts.h), where
// stockade runs.
// A mask hides a path, not the object: a read-denied directory the host also
// shows elsewhere by a bind mount stayed readable there (the key read at the
// second mount point while policy check called it denied). The spawn is
// refused naming the other name; with that denied too, both are hidden.
TEST_F(FailClosedTest, AReadDeniedDirectoryTheHostAlsoMountsElsewhereIsRefusedNamingTheOtherName) {
  const std::string alias = outside + "/keys-again";
  std::filesystem::create_directories(alias);
  const auto [first, second] = twoRunsInOwnMounts(
      [&]() -> const char* {
        return ::mount((home + "/.ssh").c_str(), alias.c_str(), nullptr, MS_BIND, nullptr) == 0 ? nullptr : "bind";
      },
      [&] {
        policy["filesystem"]["allowRead"] = nlohmann::json::array();
        return sh("echo ran; cat " + alias + "/id_ed25519");
      },
      [&] {
        policy["filesystem"]["denyRead"].push_back(alias);
        return sh("cat " + home + "/.ssh/id_ed25519; cat " + alias + "/id_ed25519; cat " + ws + "/README");
      });
  if (first == "SETUP: unshare") GTEST_SKIP() << "unshare(CLONE_NEWUSER | CLONE_NEWNS) is refused to this user: no mounts of its own to make";
  ASSERT_FALSE(first.starts_with("SETUP")) << first;
  EXPECT_TRUE(first.starts_with("125\n")) << first;
  EXPECT_EQ(first.find("SECRET"), std::string::npos) << first;
  EXPECT_NE(first.find("setup step \"coverage\""), std::string::npos) << first;
  EXPECT_NE(first.find("filesystem.denyRead \"" + home + "/.ssh\": the host shows it (or a directory in it) at \"" +
                       alias + "\" too"),
            std::string::npos)
      << first;
  // The neighbour: both names denied, the program runs and finds neither.
  EXPECT_EQ(second.find("SECRET"), std::string::npos) << second;
  EXPECT_NE(second.find("WORKSPACE-README"), std::string::npos) << second;
}

TEST_F(FailClosedTest, AWriteAllowedDirectoryTheHostMountsReadOnlyIsRefusedNamingIt) {
  const std::string vol = ws + "/volume";
  std::filesystem::create_directories(vol);
  ::chmod(vol.c_str(), 0777);
  const auto [first, second] = twoRunsInOwnMounts(
      [&]() -> const char* {
        return ::mount(vol.c_str(), vol.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
                       ::mount(nullptr, vol.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0
                   ? nullptr
                   : "read-only bind";
      },
      [&] {
        policy["filesystem"]["allowWrite"] = {ws, vol};
        return sh("echo the-program-ran");  // (not a word a temporary directory's random name can hold)
      },
      [&] {
        policy["filesystem"]["allowWrite"] = {ws};
        return sh("echo made > " + ws + "/made && cat " + ws + "/made; touch " + vol + "/x 2>/dev/null; echo rc=$?");
      });
  if (first == "SETUP: unshare") GTEST_SKIP() << "unshare(CLONE_NEWUSER | CLONE_NEWNS) is refused to this user: no mounts of its own to make";
  ASSERT_FALSE(first.starts_with("SETUP")) << first;
  EXPECT_TRUE(first.starts_with("125\n")) << first;
  EXPECT_EQ(first.find("the-program-ran"), std::string::npos) << first;
  EXPECT_NE(first.find("filesystem.allowWrite \"" + vol + "\": the host mounts \"" + vol + "\" read-only"),
            std::string::npos)
      << first;
  // The neighbour: the workspace around it runs and writes; the mount inside it is named, not hidden.
  EXPECT_TRUE(second.starts_with("0\nmade\nrc=1\n")) << second;
  EXPECT_NE(second.find("filesystem.allowWrite \"" + ws + "\": the host mounts \"" + vol + "\" read-only inside it"),
            std::string::npos)
      << second;
}

}  // namespace
}  // namespace stockade::testing
