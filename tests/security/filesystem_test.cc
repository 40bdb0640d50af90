// Escape attempts against the filesystem layers (mount view + Landlock), each
// beside the allowed neighbour that must keep working.
#include <unistd.h>

#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

using FilesystemEscapeTest = SandboxTest;

TEST_F(FilesystemEscapeTest, ReadingADeniedSshKeyShowsNothing) {
  // One run: the carve-out beside the key is read (the program ran); the key
  // is not there at all (the denied directory is an empty mask with only the
  // carve-out bound back into it).
  auto r = probe({"cat", home + "/.ssh/known_hosts", "+", "cat", home + "/.ssh/id_ed25519"});
  EXPECT_EQ(r.out, "KNOWN-HOSTS-LINE\nstep-exit=0\nerrno=ENOENT\nstep-exit=1\n") << r.err;
}

TEST_F(FilesystemEscapeTest, ListingADeniedDirectoryShowsOnlyCarveOuts) {
  auto r = probe({"ls", home + "/.ssh"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "known_hosts\n");
}

TEST_F(FilesystemEscapeTest, AnAllowReadCarveOutInsideADeniedTreeIsReadable) {
  auto r = probe({"cat", home + "/.ssh/known_hosts"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "KNOWN-HOSTS-LINE\n");
}

TEST_F(FilesystemEscapeTest, ANeighbourOfADeniedTreeIsReadable) {
  auto r = probe({"cat", home + "/notes.txt"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "HOME-NOTES\n");
}

TEST_F(FilesystemEscapeTest, ReadingEtcShadowShowsNothingWhileEtcPasswdIsReadable) {
  auto shadow = probe({"cat", "/etc/shadow"});
  EXPECT_EQ(shadow.out, "");
  auto passwd = probe({"cat", "/etc/passwd"});
  ASSERT_EQ(passwd.exitCode, 0) << passwd.err;
  EXPECT_NE(passwd.out.find("root:"), std::string::npos);
}

// A policy that names only the network keeps the default policy's read
// denies, writable "." and environment (it used to replace them with nothing).
TEST_F(FilesystemEscapeTest, APartialPolicyKeepsTheDefaultReadDeniesWritesAndEnvironment) {
  policy = {{"network", {{"allowedDomains", {"github.com"}}}}};
  auto withHome = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = stockadeArgv();
    argv.insert(argv.begin(), {"/usr/bin/env", "HOME=" + home, "STOCKADE_TEST_NOT_ALLOWED=leak"});
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv);
  };
  auto key = withHome({probe_, "cat", home + "/.ssh/id_ed25519"});
  EXPECT_NE(key.exitCode, 0);
  EXPECT_EQ(key.out.find("SECRET"), std::string::npos) << key.out;
  auto notes = withHome({probe_, "cat", home + "/notes.txt"});
  ASSERT_EQ(notes.exitCode, 0) << notes.err;
  EXPECT_EQ(notes.out, "HOME-NOTES\n");
  EXPECT_EQ(withHome({probe_, "write", ws + "/new.txt"}).exitCode, 0) << "\".\" (the --cwd) is writable";
  EXPECT_NE(withHome({probe_, "write", outside + "/new.txt"}).exitCode, 0);
  EXPECT_FALSE(std::filesystem::exists(outside + "/new.txt"));
  auto env = withHome({"/usr/bin/env"});
  ASSERT_EQ(env.exitCode, 0) << env.err;
  EXPECT_NE(env.out.find("HOME=" + home + "\n"), std::string::npos) << env.out;
  EXPECT_NE(env.out.find("PATH="), std::string::npos) << env.out;
  EXPECT_EQ(env.out.find("STOCKADE_TEST_NOT_ALLOWED"), std::string::npos) << env.out;
}

TEST_F(FilesystemEscapeTest, ADeniedKeyStaysHiddenThroughAPlantedSymlink) {
  ASSERT_EQ(::symlink((home + "/.ssh/id_ed25519").c_str(), (ws + "/key-link").c_str()), 0);
  auto r = probe({"cat", ws + "/key-link"});
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos) << r.out;
  ASSERT_EQ(::symlink((ws + "/README").c_str(), (ws + "/readme-link").c_str()), 0);
  auto ok = probe({"cat", ws + "/readme-link"});
  EXPECT_EQ(ok.out, "WORKSPACE-README\n");
}

TEST_F(FilesystemEscapeTest, ADeniedKeyStaysHiddenThroughProcSelfRoot) {
  auto r = probe({"cat", "/proc/self/root" + home + "/.ssh/id_ed25519"});
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos) << r.out;
  auto ok = probe({"cat", "/proc/self/root" + home + "/notes.txt"});
  EXPECT_EQ(ok.out, "HOME-NOTES\n");
}

TEST_F(FilesystemEscapeTest, ADeniedKeyStaysHiddenThroughDotDotSpellings) {
  auto r = probe({"cat", ws + "/../home/./.ssh/../.ssh/id_ed25519"});
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos) << r.out;
  auto ok = probe({"cat", ws + "/../home/./notes.txt"});
  EXPECT_EQ(ok.out, "HOME-NOTES\n");
}

TEST_F(FilesystemEscapeTest, AHardLinkToADeniedKeyCannotBeMadeFromInside) {
  auto r = probe({"link", home + "/.ssh/id_ed25519", ws + "/hard"});
  EXPECT_NE(r.exitCode, 0);
  auto cat = probe({"cat", ws + "/hard"});
  EXPECT_EQ(cat.out.find("SECRET"), std::string::npos);
  auto ok = probe({"link", ws + "/README", ws + "/readme-hard"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

TEST_F(FilesystemEscapeTest, WritingOutsideTheWorkspaceFailsWhileInsideWorks) {
  // EROFS: the read-only mount of the host tree refuses, before Landlock
  // would (its refusal is EACCES), for the uid 0 of root's runs and anyone.
  auto out = probe({"write", outside + "/target.txt"});
  EXPECT_EQ(out.out, "errno=EROFS\n") << out.err;
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
  auto created = probe({"write", outside + "/new.txt"});
  EXPECT_EQ(created.out, "errno=EROFS\n") << created.err;
  EXPECT_FALSE(std::filesystem::exists(outside + "/new.txt"));
  auto in = probe({"write", ws + "/new.txt"});
  EXPECT_EQ(in.exitCode, 0) << in.err;
  EXPECT_EQ(slurp(ws + "/new.txt"), "probe\n");
}

TEST_F(FilesystemEscapeTest, WritingAGitHookFailsWhileOtherGitFilesAreWritable) {
  auto hook = probe({"write", ws + "/.git/hooks/pre-commit"});
  EXPECT_NE(hook.exitCode, 0);
  EXPECT_EQ(slurp(ws + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  auto newHook = probe({"write", ws + "/.git/hooks/post-checkout"});
  EXPECT_NE(newHook.exitCode, 0);
  EXPECT_FALSE(std::filesystem::exists(ws + "/.git/hooks/post-checkout"));
  auto object = probe({"write", ws + "/.git/objects/abc"});
  EXPECT_EQ(object.exitCode, 0) << object.err;
}

TEST_F(FilesystemEscapeTest, AReadOnlyTreeCannotBeRenamedAwayAndReplaced) {
  // `mv .git elsewhere; mkdir -p .git/hooks` would put a writable hooks
  // directory where the read-only one was.
  auto moved = probe({"rename", ws + "/.git", ws + "/git-old"});
  EXPECT_NE(moved.exitCode, 0);
  EXPECT_TRUE(std::filesystem::exists(ws + "/.git/hooks/pre-commit"));
  auto hooks = probe({"rename", ws + "/.git/hooks", ws + "/hooks-old"});
  EXPECT_NE(hooks.exitCode, 0);
  auto removed = probe({"rename", ws + "/.bashrc", ws + "/bashrc-old"});
  EXPECT_NE(removed.exitCode, 0);
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  std::filesystem::create_directories(ws + "/src");
  auto ok = probe({"rename", ws + "/src", ws + "/src2"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

TEST_F(FilesystemEscapeTest, WritingBashrcInTheWorkspaceFailsWhileANeighbourWorks) {
  auto rc = probe({"write", ws + "/.bashrc"});
  EXPECT_NE(rc.exitCode, 0);
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  auto renamed = probe({"rename", ws + "/README", ws + "/.bashrc"});
  EXPECT_NE(renamed.exitCode, 0);
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  auto ok = probe({"write", ws + "/notes.md"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

TEST_F(FilesystemEscapeTest, WritingThroughASymlinkPlantedInTheWorkspaceFails) {
  ASSERT_EQ(::symlink(outside.c_str(), (ws + "/escape").c_str()), 0);
  auto r = probe({"write", ws + "/escape/target.txt"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
  ASSERT_EQ(::symlink((ws + "/sub").c_str(), (ws + "/inner").c_str()), 0);
  std::filesystem::create_directories(ws + "/sub");
  auto ok = probe({"write", ws + "/inner/file"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

TEST_F(FilesystemEscapeTest, ASymlinkCreatedInsideCannotRedirectWritesOutside) {
  auto r = probe({"symlink", outside + "/target.txt", ws + "/made-inside"});
  ASSERT_EQ(r.exitCode, 0) << r.err;  // making the link is allowed ...
  auto w = probe({"write", ws + "/made-inside"});
  EXPECT_NE(w.exitCode, 0);  // ... writing through it is not
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
}

TEST_F(FilesystemEscapeTest, DenyWriteInsideTheWorkspaceIsReadOnlyAtEveryDepth) {
  file(ws + "/protected/deep/file", "KEEP\n");
  policy["filesystem"]["denyWrite"] = {ws + "/protected"};
  auto deep = probe({"write", ws + "/protected/deep/file"});
  EXPECT_NE(deep.exitCode, 0);
  EXPECT_EQ(slurp(ws + "/protected/deep/file"), "KEEP\n");
  auto ok = probe({"write", ws + "/unprotected"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

TEST_F(FilesystemEscapeTest, ThePrivateTmpIsWritableAndLeavesNothingOnTheHost) {
  auto r = probe({"write", "/tmp/stockade-probe-private"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // Removed when it is there (a build without the private /tmp, scripts/mutate), not left on the host.
  std::error_code ignored;
  EXPECT_FALSE(std::filesystem::remove("/tmp/stockade-probe-private", ignored));
}

TEST_F(FilesystemEscapeTest, MasksLeaveNoPlaceholderOnTheHost) {
  policy["filesystem"]["denyRead"].push_back(home + "/does-not-exist");
  auto r = probe({"cat", home + "/notes.txt"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home + "/does-not-exist"));
  EXPECT_EQ(slurp(home + "/.ssh/id_ed25519"), "SECRET-PRIVATE-KEY\n");
}

TEST_F(FilesystemEscapeTest, SetuidBinariesGainNothing) {
  // A copy of the probe owned by another user with the setuid bit: outside
  // the sandbox it runs with that user's euid, inside it must not.
  const char* prepared = std::getenv("STOCKADE_TEST_SETUID_PROBE");
  std::string suid = prepared && *prepared ? prepared : outside + "/probe-suid";
  uid_t owner;
  if (!(prepared && *prepared)) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root or STOCKADE_TEST_SETUID_PROBE to create a setuid binary";
    std::filesystem::copy_file(probeBinary(), suid);
    owner = 65534;
    ASSERT_EQ(::chown(suid.c_str(), owner, owner), 0);
    ASSERT_EQ(::chmod(suid.c_str(), 04755), 0);
  } else {
    struct stat st;
    ASSERT_EQ(::stat(suid.c_str(), &st), 0);
    owner = st.st_uid;
  }
  auto outsideRun = runProcess({suid, "ids"});
  ASSERT_NE(outsideRun.out.find("euid=" + std::to_string(owner)), std::string::npos)
      << "the setuid bit does not work on " << suid << " even outside: " << outsideRun.out;
  auto argv = stockadeArgv();
  argv.push_back(suid);
  argv.push_back("ids");
  auto r = runProcess(argv);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("euid=" + std::to_string(::geteuid())), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stockade::testing
