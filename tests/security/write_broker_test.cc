// The write broker from inside: every write-shaped way to reach a protected
// name -- one that exists at spawn or one made during the run -- is refused
// with the specific error and audited, beside the allowed neighbour that must
// keep working; every write-shaped call behaves as it does natively; real
// tools work unchanged; racing threads and a killed stockade write nothing
// they should not.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

class WriteBrokerTest : public SandboxTest {
 protected:
  // `sh -c SCRIPT` inside, with the probe as $P and the workspace as cwd.
  ProcessResult inside(const std::string& script, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> all = {"--env", "P=" + probe_};
    all.insert(all.end(), flags.begin(), flags.end());
    auto argv = stockadeArgv(all);
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    return runProcess(argv);
  }
  static bool refused(const ProcessResult& r, const std::string& errnoName) {
    return r.exitCode == 1 && r.out.find("errno=" + errnoName) != std::string::npos;
  }
  // `$P write NEIGHBOUR && $P write PATH` for each path: the neighbour is
  // written (the program ran), the path refused with EACCES.
  void expectWritesRefused(const std::string& neighbour, std::initializer_list<const char*> paths) {
    for (const char* path : paths) {
      auto r = inside("$P write " + neighbour + " && $P write " + path);
      EXPECT_TRUE(refused(r, "EACCES")) << path << ": " << r.out << r.err;
      EXPECT_TRUE(exists(ws + "/" + neighbour)) << "the allowed write before the attack ran: " << r.out << r.err;
    }
  }
  static bool exists(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }
  std::vector<nlohmann::json> auditEvents(const std::string& path, const std::string& event) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == event) out.push_back(j);
    }
    return out;
  }
};

// Each protected name made fresh during the run, at depth, beside an
// ordinary neighbour in the same directory.
TEST_F(WriteBrokerTest, ProtectedNamesMadeDuringTheRunAreRefusedAtAnyDepth) {
  struct Case {
    const char* dir;   // made first (allowed)
    const char* name;  // then this, refused
  };
  const Case cases[] = {{"a/b", ".bashrc"},           {"a/b", ".zshenv"},          {"deep/er", ".envrc"},
                        {"p", ".npmrc"},              {"p", ".gitmodules"},        {"p", ".mcp.json"},
                        {"p/.claude", "settings.json"}, {"p/.claude", "commands"}, {"p", ".vscode"},
                        {"p", ".husky"},              {"p", ".pre-commit-config.yaml"}, {"p", ".devcontainer"},
                        {"r/.hg", "hgrc"},            {"r/.hg", "sharedpath"},     {"p", ".helix"}};
  for (const auto& c : cases) {
    const std::string dir = ws + "/" + c.dir;
    auto r = inside(std::string("mkdir -p ") + c.dir + " && $P create " + c.dir + "/" + c.name);
    EXPECT_TRUE(refused(r, "EACCES")) << c.dir << "/" << c.name << ": " << r.out << r.err;
    EXPECT_FALSE(exists(dir + "/" + c.name)) << c.name;
    auto ok = inside(std::string("$P create ") + c.dir + "/neighbour-of" + c.name);
    EXPECT_EQ(ok.exitCode, 0) << c.name << ": " << ok.out << ok.err;
    EXPECT_EQ(slurp(dir + "/neighbour-of" + c.name), "probe\n");
  }
}

// The broker drops `.` components before it decides (tar names each file
// "./dir/file"): however a protected name is spelt, it is the name decided.
TEST_F(WriteBrokerTest, AProtectedNameSpeltWithDotsOrSlashesIsRefusedAsItself) {
  for (const char* spelling : {"./a/./b/./.bashrc", ".//a//b//.bashrc", "a/./b/../b/.bashrc", "./a/b/./.git/./config",
                               "/proc/self/cwd/a/b/.bashrc", "/proc/thread-self/cwd/a/b/../b/.git/config"}) {
    auto r = inside(std::string("mkdir -p a/b/.git && $P create ") + spelling);
    EXPECT_TRUE(refused(r, "EACCES")) << spelling << ": " << r.out << r.err;
  }
  EXPECT_FALSE(exists(ws + "/a/b/.bashrc"));
  EXPECT_FALSE(exists(ws + "/a/b/.git/config"));
  auto ok = inside("$P create ./a/./b//./neighbour && $P create /proc/self/cwd/a/b/neighbour2");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_EQ(slurp(ws + "/a/b/neighbour"), "probe\n");
  EXPECT_EQ(slurp(ws + "/a/b/neighbour2"), "probe\n") << "the cwd's magic link is followed as natively";
}

// The caller's own magic links, however they are spelt -- /proc/self/root,
// /proc/<its pid>/cwd, /proc/<pid>/task/<its tid>/root, a symlink to one --
// name the path they lead to: a write there is decided (EACCES and a denial
// for a protected name), and an allowed one is performed as natively, not
// left to fail EROFS in the read-only view. The probe runs as pid 2.
TEST_F(WriteBrokerTest, TheCallersOwnMagicLinksAreDecidedAsThePathsTheyName) {
  ASSERT_EQ(::symlink("/proc/self/cwd", (ws + "/to-cwd").c_str()), 0);
  ASSERT_EQ(::symlink("/proc/self/root", (ws + "/to-root").c_str()), 0);
  const std::string viaRoot = "/proc/self/root" + ws, viaLinkedRoot = "to-root" + ws;
  const std::string audit = root_ + "/audit.jsonl";
  struct Case {
    std::string neighbour, attack;  // each made with `create`
  };
  const Case cases[] = {{viaRoot + "/n1", viaRoot + "/.bash_profile"},
                        {"/proc/2/cwd/n2", "/proc/2/cwd/.git/config"},
                        {"/proc/2/task/2/root" + ws + "/n3", "/proc/2/task/2/root" + ws + "/.git/hooks/post-merge"},
                        {"/proc/thread-self/root/proc/self/cwd/n4", "/proc/thread-self/root/proc/self/cwd/.envrc"},
                        {"to-cwd/n5", "to-cwd/.vscode"},
                        {viaLinkedRoot + "/n6", viaLinkedRoot + "/.profile"}};
  for (const auto& c : cases) {
    auto ok = probe({"create", c.neighbour});
    EXPECT_EQ(ok.exitCode, 0) << c.neighbour << ": " << ok.out << ok.err;
    auto r = probe({"create", c.attack}, {"--audit", audit});
    EXPECT_TRUE(refused(r, "EACCES")) << c.attack << ": " << r.out << r.err;
  }
  for (const char* made : {"n1", "n2", "n3", "n4", "n5", "n6"}) EXPECT_EQ(slurp(ws + "/" + made), "probe\n") << made;
  for (const char* name : {".bash_profile", ".git/config", ".git/hooks/post-merge", ".envrc", ".vscode", ".profile"})
    EXPECT_FALSE(exists(ws + "/" + name)) << name;
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  auto denials = auditEvents(audit, "denial");
  ASSERT_EQ(denials.size(), std::size(cases)) << nlohmann::json(denials).dump();
  EXPECT_EQ(denials[0]["path"], viaRoot + "/.bash_profile");
  EXPECT_EQ(denials[0]["resolvedPath"], ws + "/.bash_profile");
  EXPECT_EQ(denials[4]["resolvedPath"], ws + "/.vscode");
  // Another process's links are the kernel's: the sandbox's init is not
  // the program's to follow (EACCES from the kernel, no denial).
  auto init = probe({"create", "/proc/1/cwd/n7"});
  EXPECT_TRUE(refused(init, "EACCES")) << init.out << init.err;
}

// A case-insensitive directory (casefold ext4 or tmpfs, vfat, exFAT, SMB)
// takes `.BashRC` for `.bashrc`: protected names are decided by their keys
// on every filesystem (name_fold.h), so each such spelling is refused here
// too, on a case-sensitive workspace, beside the neighbour that writes.
TEST_F(WriteBrokerTest, EverySpellingACaseInsensitiveDirectoryTakesForAProtectedNameIsRefused) {
  for (const char* made : {".BashRC", ".bashrc.", ".ba\u017fhrc", "\u200b.envrc", ".VSCode", ".git/CONFIG",
                           ".Git/hooks", "sub/.GIT"}) {
    auto r = inside(std::string("mkdir -p sub .Git && $P write neighbour && $P create '") + made + "'");
    EXPECT_TRUE(refused(r, "EACCES")) << made << ": " << r.out << r.err;
    EXPECT_FALSE(exists(ws + "/" + made)) << made;
  }
  EXPECT_EQ(slurp(ws + "/neighbour"), "probe\n");
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
}

// The same on a real case-insensitive filesystem: an exFAT image (FUSE) as
// the workspace, where `.BASHRC` *is* `.bashrc` and `LOCKED/keep` is the
// denyWrite file `locked/keep`. Each wrote the protected file before.
TEST_F(WriteBrokerTest, OnACaseInsensitiveFilesystemNoOtherSpellingReachesAProtectedFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting an exFAT image (losetup, mount.exfat-fuse) needs root";
  if (::access("/usr/sbin/mount.exfat-fuse", X_OK) != 0 || ::access("/usr/sbin/mkfs.exfat", X_OK) != 0)
    GTEST_SKIP() << "exfat-fuse and exfatprogs are not installed (scripts/bootstrap installs them)";
  const std::string image = root_ + "/exfat.img", mnt = root_ + "/ci";
  std::filesystem::create_directories(mnt);
  struct Mounted {
    std::string mnt, loop;
    ~Mounted() {
      if (!mnt.empty()) runProcess({"/bin/umount", mnt});
      if (!loop.empty()) runProcess({"/sbin/losetup", "-d", loop});
    }
  } mounted;
  ASSERT_EQ(runProcess({"/usr/bin/truncate", "-s", "16M", image}).exitCode, 0);
  ASSERT_EQ(runProcess({"/usr/sbin/mkfs.exfat", image}).exitCode, 0);
  auto loop = runProcess({"/sbin/losetup", "-f", "--show", image});
  if (loop.exitCode != 0) GTEST_SKIP() << "no loop device for the exFAT image: " << loop.err;
  mounted.loop = loop.out.substr(0, loop.out.find('\n'));
  auto mount = runProcess({"/usr/sbin/mount.exfat-fuse", mounted.loop, mnt});
  if (mount.exitCode != 0) GTEST_SKIP() << "mount.exfat-fuse " << mounted.loop << " failed: " << mount.err;
  mounted.mnt = mnt;
  file(mnt + "/.bashrc", "ORIGINAL-BASHRC\n");
  file(mnt + "/.git/hooks/pre-commit", "ORIGINAL-HOOK\n");
  file(mnt + "/locked/keep", "KEEP\n");
  file(mnt + "/secret/key", "SECRET-IN-THE-WORKSPACE\n");
  ASSERT_EQ(slurp(mnt + "/.BASHRC"), "ORIGINAL-BASHRC\n") << "the image is not case-insensitive";
  ws = mnt;
  policy["filesystem"]["allowWrite"] = {mnt};
  policy["filesystem"]["denyWrite"] = {mnt + "/locked"};
  policy["filesystem"]["denyRead"] = {mnt + "/secret"};
  // The mask is on the sandbox's view; a write-open the broker performed by
  // another spelling opened the host's file, and handed it over to read.
  auto read = inside("$P write neighbour && $P cat-rdwr SECRET/key");
  EXPECT_TRUE(refused(read, "EROFS")) << read.out << read.err;
  EXPECT_EQ(read.out.find("SECRET-IN-THE-WORKSPACE"), std::string::npos) << read.out;
  for (const char* path : {".BASHRC", ".GIT/HOOKS/pre-commit", ".Git/Hooks/post-checkout", "LOCKED/keep"}) {
    auto r = inside(std::string("$P write neighbour && $P write ") + path);
    EXPECT_TRUE(refused(r, "EACCES")) << path << ": " << r.out << r.err;
    EXPECT_EQ(slurp(mnt + "/neighbour"), "probe\n") << "the allowed write before the attack ran";
  }
  EXPECT_EQ(slurp(mnt + "/.bashrc"), "ORIGINAL-BASHRC\n");
  EXPECT_EQ(slurp(mnt + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  EXPECT_FALSE(exists(mnt + "/.git/hooks/post-checkout"));
  EXPECT_EQ(slurp(mnt + "/locked/keep"), "KEEP\n");
}

TEST_F(WriteBrokerTest, AGitDirectoryMadeDuringTheRunIsProtectedByName) {
  // `git init sub` then a hook: refused at the hooks directory already.
  auto init = inside("mkdir -p sub/.git && $P mkdir sub/.git/hooks");
  EXPECT_TRUE(refused(init, "EACCES")) << init.out << init.err;
  for (const char* entry : {"config", "config.worktree", "commondir", "info"}) {
    auto r = inside(std::string("$P create sub/.git/") + entry);
    EXPECT_TRUE(refused(r, "EACCES")) << entry << ": " << r.out;
    EXPECT_FALSE(exists(ws + "/sub/.git/" + entry)) << entry;
  }
  // Whether or not HEAD exists: renaming the workspace's HEAD away changes nothing.
  auto head = inside("$P rename .git/HEAD .git/HEAD.away && $P write .git/hooks/post-checkout");
  EXPECT_TRUE(refused(head, "EACCES")) << head.out << head.err;
  EXPECT_FALSE(exists(ws + "/.git/hooks/post-checkout"));
  // The neighbours in a git directory: objects, refs, HEAD, the index.
  for (const char* entry : {"HEAD", "index", "objects/ab"}) {
    auto ok = inside(std::string("mkdir -p sub/.git/objects && $P create sub/.git/") + entry);
    EXPECT_EQ(ok.exitCode, 0) << entry << ": " << ok.out << ok.err;
  }
}

// git keeps a linked worktree's submodules in .git/worktrees/<wt>/modules/:
// their config and hooks are protected by name there as in .git/modules.
TEST_F(WriteBrokerTest, ALinkedWorktreesSubmodulesAreProtectedByName) {
  const std::string sub = ".git/worktrees/wt/modules/lib/sub";
  for (const char* entry : {"config", "hooks", "info", "commondir", "config.worktree"}) {
    auto r = inside("mkdir -p " + sub + "/objects && $P create " + sub + "/HEAD.new && $P create " + sub + "/" + entry);
    EXPECT_TRUE(refused(r, "EACCES")) << entry << ": " << r.out << r.err;
    EXPECT_FALSE(exists(ws + "/" + sub + "/" + entry)) << entry;
    EXPECT_TRUE(exists(ws + "/" + sub + "/HEAD.new")) << "the allowed create before the attack ran";
    ::unlink((ws + "/" + sub + "/HEAD.new").c_str());
  }
  auto ok = inside("$P create " + sub + "/HEAD && $P create " + sub + "/objects/ab");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
}

TEST_F(WriteBrokerTest, EveryWayGitIsRedirectedToAnotherGitDirectoryIsRefused) {
  // A .git file (submodules, worktrees) or symlink names another git dir.
  auto gitfile = inside("mkdir -p sub && $P create sub/.git");
  EXPECT_TRUE(refused(gitfile, "EACCES")) << gitfile.out;
  auto gitlink = inside("mkdir -p s && $P symlink ../elsewhere s/.git");
  EXPECT_TRUE(refused(gitlink, "EACCES")) << gitlink.out << gitlink.err;
  EXPECT_FALSE(exists(ws + "/s/.git"));
  // commondir, a submodule's git directory, a linked worktree's.
  for (const char* path : {".git/commondir", ".git/modules/lib/hooks", ".git/modules/a/b/config",
                           ".git/worktrees/wt/commondir"}) {
    std::string parent = std::string(path).substr(0, std::string(path).rfind('/'));
    auto r = inside("mkdir -p " + parent + " ; $P create " + path);
    EXPECT_TRUE(refused(r, "EACCES")) << path << ": " << r.out << r.err;
    EXPECT_FALSE(exists(ws + "/" + path)) << path;
  }
  auto ok = inside("mkdir -p .git/modules/lib/objects && $P create .git/modules/lib/objects/pack");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
}

// A file the repository's config includes is configuration git reads (a
// shared team config is a common one): the host's next git status would run
// the core.fsmonitor written there.
TEST_F(WriteBrokerTest, AFileTheRepositorysConfigIncludesIsProtected) {
  file(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  file(ws + "/.git/config", "[include]\n\tpath = ../team.gitconfig\n\tpath = local.inc\n");
  file(ws + "/team.gitconfig", "[core]\n");
  expectWritesRefused("notes.md", {"team.gitconfig", ".git/local.inc"});
  EXPECT_EQ(slurp(ws + "/team.gitconfig"), "[core]\n");
  EXPECT_FALSE(exists(ws + "/.git/local.inc"));
  auto replaced = inside("$P create team.new && $P rename team.new team.gitconfig");
  EXPECT_TRUE(refused(replaced, "EACCES")) << replaced.out << replaced.err;
  EXPECT_EQ(slurp(ws + "/team.gitconfig"), "[core]\n");
  // The neighbour: a file beside it that nothing includes.
  auto ok = inside("$P write team.gitconfig.example && $P write .git/other.inc");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
}

// A program the repository's config has git run by itself, named by path
// in the working tree (core.fsmonitor runs at every git status).
TEST_F(WriteBrokerTest, AProgramTheRepositorysConfigNamesIsProtected) {
  file(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  file(ws + "/.git/config", "[core]\n\tfsmonitor = tools/fsmonitor.sh\n[diff \"nb\"]\n\ttextconv = ./tools/nb.py\n");
  file(ws + "/tools/fsmonitor.sh", "ORIGINAL\n");
  expectWritesRefused("tools/other.sh", {"tools/fsmonitor.sh", "tools/nb.py"});
  EXPECT_EQ(slurp(ws + "/tools/fsmonitor.sh"), "ORIGINAL\n");
  EXPECT_FALSE(exists(ws + "/tools/nb.py"));
}

// A hook the host made as a symlink into the working tree (a common way to
// share hooks) runs what it leads to: that file is protected, whether or not
// it exists yet.
TEST_F(WriteBrokerTest, WhatALinkedHookLeadsToIsProtected) {
  file(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  file(ws + "/scripts/pre-push", "ORIGINAL\n");
  ASSERT_EQ(::symlink("../../scripts/pre-push", (ws + "/.git/hooks/pre-push").c_str()), 0);
  ASSERT_EQ(::symlink("../../scripts/post-merge", (ws + "/.git/hooks/post-merge").c_str()), 0);
  expectWritesRefused("scripts/other", {"scripts/pre-push", "scripts/post-merge"});
  EXPECT_EQ(slurp(ws + "/scripts/pre-push"), "ORIGINAL\n");
  EXPECT_FALSE(exists(ws + "/scripts/post-merge"));
  auto moved = inside("$P rename scripts scripts2");
  EXPECT_TRUE(refused(moved, "EACCES")) << moved.out << moved.err;
}

// A bare repository is a git directory by its contents, under any name.
TEST_F(WriteBrokerTest, ABareRepositorysConfigAndHooksAreProtectedByItsContents) {
  ASSERT_EQ(runProcess({"git", "init", "-q", "--bare", ws + "/mirror.git"}).exitCode, 0);
  for (const char* path : {"mirror.git/hooks/post-receive", "mirror.git/config", "mirror.git/info/attributes"}) {
    auto r = inside(std::string("$P write ") + path);
    EXPECT_TRUE(refused(r, "EACCES")) << path << ": " << r.out << r.err;
  }
  EXPECT_FALSE(exists(ws + "/mirror.git/hooks/post-receive"));
  // Taking HEAD away (to write the config while it is no git directory) is
  // refused, and so is taking objects away.
  const std::string config = slurp(ws + "/mirror.git/config");
  auto away = probe({"rename", ws + "/mirror.git/HEAD", ws + "/mirror.git/HEAD.away"});
  EXPECT_TRUE(refused(away, "EACCES")) << away.out << away.err;
  EXPECT_TRUE(refused(probe({"rename", ws + "/mirror.git/objects", ws + "/objects.away"}), "EACCES"));
  EXPECT_EQ(slurp(ws + "/mirror.git/config"), config);
  // Nor does building one around configuration the program wrote first.
  auto built = inside("mkdir -p evil/objects evil/refs && $P create evil/config && $P create evil/HEAD");
  EXPECT_TRUE(refused(built, "EACCES")) << built.out << built.err;
  EXPECT_FALSE(exists(ws + "/evil/HEAD"));
  // The neighbours: a repository's objects, and a directory that merely has
  // git-like names.
  auto ok = inside("mkdir -p mirror.git/objects/ab && $P create mirror.git/objects/ab/cd && "
                   "mkdir -p plain/objects plain/refs && $P create plain/HEAD && mkdir -p src/config && "
                   "$P create src/config/app.json");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
}

// Git takes objects and refs of any kind it can search (a symlink to a
// directory, an executable file), and a commondir beside HEAD sends it to
// another directory's config and hooks: each is a git directory too.
TEST_F(WriteBrokerTest, AGitDirectoryMadeOfSymlinksOrThroughACommondirIsProtectedToo) {
  // objects a symlink: HEAD is made (git now takes the directory for a
  // repository), its config is refused.
  auto linked = inside("mkdir -p evil/refs evil/od && $P symlink od evil/objects && $P create evil/HEAD && "
                       "$P write evil/config");
  EXPECT_TRUE(refused(linked, "EACCES")) << linked.out << linked.err;
  ASSERT_TRUE(exists(ws + "/evil/HEAD")) << "the steps before the attack ran: " << linked.out << linked.err;
  EXPECT_FALSE(exists(ws + "/evil/config"));
  ASSERT_EQ(slurp(ws + "/evil/HEAD"), "probe\n");
  file(ws + "/evil/HEAD", "ref: refs/heads/main\n");
  auto gitdir = runProcess({"git", "-C", ws + "/evil", "rev-parse", "--git-dir"});
  EXPECT_EQ(gitdir.out, ".\n") << "git takes it for a git directory: " << gitdir.err;
  // objects a file, made a git directory around the hooks already there.
  auto fileObjects = inside("mkdir -p ex/refs ex/hooks && $P create ex/objects && $P create ex/HEAD");
  EXPECT_TRUE(refused(fileObjects, "EACCES")) << fileObjects.out << fileObjects.err;
  EXPECT_TRUE(exists(ws + "/ex/objects"));
  EXPECT_FALSE(exists(ws + "/ex/HEAD"));
  // A commondir beside HEAD, in either order, pointing at a directory whose
  // config and hooks are ordinary files.
  auto common = inside("mkdir -p common/objects common/refs common/hooks b && $P create b/HEAD && $P create b/commondir");
  EXPECT_TRUE(refused(common, "EACCES")) << common.out << common.err;
  EXPECT_TRUE(exists(ws + "/b/HEAD"));
  EXPECT_FALSE(exists(ws + "/b/commondir"));
  auto reverse = inside("mkdir b2 && $P create b2/commondir && $P create b2/HEAD");
  EXPECT_TRUE(refused(reverse, "EACCES")) << reverse.out << reverse.err;
  EXPECT_TRUE(exists(ws + "/b2/commondir"));
  EXPECT_FALSE(exists(ws + "/b2/HEAD"));
  // The neighbours: a git-shaped directory with no configuration, its other
  // entries, and a commondir where there is no HEAD.
  auto ok = inside("mkdir -p plain/refs && $P symlink refs plain/objects && $P create plain/HEAD && "
                   "$P create plain/notes && mkdir n && $P create n/commondir");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
}

TEST_F(WriteBrokerTest, RenamesOntoOrAwayFromProtectedNamesAreRefused) {
  auto onto = probe({"rename", ws + "/README", ws + "/.bashrc"});
  EXPECT_TRUE(refused(onto, "EACCES")) << onto.out;
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  auto away = probe({"rename", ws + "/.bashrc", ws + "/bashrc.old"});
  EXPECT_TRUE(refused(away, "EACCES")) << away.out;
  // A directory filled by the child, renamed into the place of .git or its hooks.
  auto dir = inside("mkdir -p x/hooks && $P create x/hooks/pre-commit && $P rename x .git");
  EXPECT_TRUE(refused(dir, "EACCES")) << dir.out << dir.err;
  auto hooks = inside("$P rename x/hooks .git/hooks");
  EXPECT_TRUE(refused(hooks, "EACCES")) << hooks.out;
  EXPECT_EQ(slurp(ws + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  // mv .git elsewhere (then edit its config): the directory is held by its name.
  auto git = probe({"rename", ws + "/.git", ws + "/git-old"});
  EXPECT_TRUE(refused(git, "EACCES")) << git.out;
  // Exchanging names swaps both ways; a whiteout leaves one behind.
  auto exchange = inside("$P create evil && $P rename2 evil .git/hooks/pre-commit exchange");
  EXPECT_TRUE(refused(exchange, "EACCES")) << exchange.out;
  EXPECT_EQ(slurp(ws + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  auto whiteout = probe({"rename2", ws + "/README", ws + "/.zshrc", "whiteout"});
  EXPECT_TRUE(refused(whiteout, "EACCES")) << whiteout.out;
  // The neighbours: ordinary renames and exchanges.
  auto ok = inside("mkdir -p src && $P rename src src2 && $P create a && $P create b && $P rename2 a b exchange");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_TRUE(exists(ws + "/src2"));
}

TEST_F(WriteBrokerTest, LinksSymlinksAndUnnamedFilesCannotReachAProtectedName) {
  // A second name for a hook would make it writable under that name.
  auto hard = probe({"link", ws + "/.git/hooks/pre-commit", ws + "/innocent"});
  EXPECT_TRUE(refused(hard, "EACCES")) << hard.out;
  EXPECT_FALSE(exists(ws + "/innocent"));
  auto intoName = probe({"link", ws + "/README", ws + "/.profile"});
  EXPECT_TRUE(refused(intoName, "EACCES")) << intoName.out;
  // A symlink at a protected name, and creation through a dangling one.
  auto symlink = probe({"symlink", ws + "/README", ws + "/.zshrc"});
  EXPECT_TRUE(refused(symlink, "EACCES")) << symlink.out;
  auto dangling = inside("$P symlink .kshrc pointer && $P write pointer");
  EXPECT_TRUE(refused(dangling, "EACCES")) << dangling.out << dangling.err;
  EXPECT_FALSE(exists(ws + "/.kshrc"));
  // Writing through a symlink to an existing hook.
  auto through = inside("$P symlink .git/hooks/pre-commit h && $P write h");
  EXPECT_TRUE(refused(through, "EACCES")) << through.out << through.err;
  EXPECT_EQ(slurp(ws + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  // An O_TMPFILE file given a protected name.
  auto tmpfile = probe({"tmpfile-link", ws, ws + "/.bash_login"});
  EXPECT_TRUE(refused(tmpfile, "EACCES")) << tmpfile.out;
  EXPECT_FALSE(exists(ws + "/.bash_login"));
  // The neighbours.
  EXPECT_EQ(probe({"link", ws + "/README", ws + "/README.hard"}).exitCode, 0);
  EXPECT_EQ(inside("$P symlink README r && $P write r").exitCode, 0);
  auto named = probe({"tmpfile-link", ws, ws + "/named"});
  EXPECT_EQ(named.exitCode, 0) << named.out;
  EXPECT_EQ(slurp(ws + "/named"), "probe\n");
}

// A symlink at a name whose contents a rule protects (.claude for
// .claude/settings.json, .config for .config/git, a directory above a
// denyWrite path) sends the host's next look there to what the program wrote
// elsewhere: refused when made, moved or linked there, as a directory moved
// there is.
TEST_F(WriteBrokerTest, ASymlinkCannotStandWhereAProtectedNameLeads) {
  policy["filesystem"]["denyWrite"] = {ws + "/future/secret.txt"};
  auto claude = inside("mkdir cl && $P create cl/settings.json && $P symlink cl .claude");
  EXPECT_TRUE(refused(claude, "EACCES")) << claude.out << claude.err;
  EXPECT_TRUE(exists(ws + "/cl/settings.json")) << "the steps before the attack ran";
  EXPECT_FALSE(exists(ws + "/.claude"));
  for (const char* name : {".config", ".docker", ".git/modules", "sub/.git/worktrees", "future"}) {
    auto r = inside(std::string("mkdir -p sub/.git && $P symlink cl ") + name);
    EXPECT_TRUE(refused(r, "EACCES")) << name << ": " << r.out << r.err;
    EXPECT_FALSE(exists(ws + "/" + name)) << name;
  }
  auto moved = inside("$P symlink cl plain-link && $P rename plain-link .kube");
  EXPECT_TRUE(refused(moved, "EACCES")) << moved.out << moved.err;
  EXPECT_FALSE(exists(ws + "/.kube"));
  // A second name for the symlink is a symlink too.
  auto linked = inside("$P link plain-link .aws");
  EXPECT_TRUE(refused(linked, "EACCES")) << linked.out << linked.err;
  EXPECT_FALSE(exists(ws + "/.aws"));
  // The neighbours: symlinks at ordinary names, and beside the protected
  // ones inside a real .claude.
  auto ok = inside("$P symlink cl cl-link && $P rename cl-link cl-link2 && $P link plain-link plain-link2 && "
                   "mkdir .claude && $P symlink ../cl .claude/notes && $P write cl-link2/more.json");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_TRUE(exists(ws + "/cl/more.json"));
}

// A symlink in the private /tmp that leads into the workspace (dangling or
// not) is followed as natively -- and a protected name it leads to is still
// refused.
TEST_F(WriteBrokerTest, ASymlinkOutsideTheTreeIsFollowedIntoItAsNatively) {
  auto ok = inside("ln -s " + ws + "/via-tmp /tmp/l && ln -s ../" + ws.substr(1) + "/via-rel /tmp/r && ln -s /tmp/l /tmp/l2 && "
                   "$P write /tmp/l && $P write /tmp/r && $P write-text /tmp/l2 more");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_EQ(slurp(ws + "/via-tmp"), "moree\n");
  EXPECT_TRUE(exists(ws + "/via-rel"));
  auto bashrc = inside("ln -s " + ws + "/sub/.zshrc /tmp/z && mkdir sub && $P write /tmp/z");
  EXPECT_TRUE(refused(bashrc, "EACCES")) << bashrc.out << bashrc.err;
  EXPECT_FALSE(exists(ws + "/sub/.zshrc"));
  auto loop = inside("ln -s /tmp/loop /tmp/loop && $P write /tmp/loop");
  EXPECT_TRUE(refused(loop, "ELOOP")) << loop.out << loop.err;
}

TEST_F(WriteBrokerTest, WhatAProtectedFileDoesCannotBeChangedThroughItsMetadata) {
  const std::string hook = ws + "/.git/hooks/pre-commit";
  struct stat before;
  ASSERT_EQ(::stat(hook.c_str(), &before), 0);
  // Making the existing hook executable, by name (the broker refuses it) and
  // through a descriptor opened read-only (the kernel refuses it: the
  // sandbox's own view of the tree is read-only).
  EXPECT_TRUE(refused(probe({"chmod", hook, "755"}), "EACCES"));
  EXPECT_TRUE(refused(probe({"fchmod-read-only", hook, "755"}), "EROFS"));
  EXPECT_TRUE(refused(probe({"utimes", hook}), "EACCES"));
  EXPECT_TRUE(refused(probe({"setxattr", hook, "user.evil", "1"}), "EACCES"));
  EXPECT_TRUE(refused(probe({"truncate", hook, "0"}), "EACCES"));
  EXPECT_TRUE(refused(probe({"write-text", hook, "evil"}), "EACCES"));
  EXPECT_TRUE(refused(probe({"unlink", hook}), "EACCES"));
  struct stat after;
  ASSERT_EQ(::stat(hook.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(slurp(hook), "ORIGINAL-HOOK\n");
  // The neighbours.
  const std::string readme = ws + "/README";
  EXPECT_EQ(probe({"chmod", readme, "755"}).exitCode, 0);
  EXPECT_EQ(probe({"utimes", readme}).exitCode, 0);
  EXPECT_EQ(probe({"truncate", readme, "3"}).exitCode, 0);
  struct stat st;
  ASSERT_EQ(::stat(readme.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_size, 3);
}

TEST_F(WriteBrokerTest, ARefusalIsAuditedWithTheOperationBothPathsAndTheRule) {
  const std::string audit = root_ + "/audit.jsonl";
  auto r = inside("mkdir sub && cd sub && $P create ../.zshrc; $P create ok", {"--audit", audit});
  EXPECT_TRUE(exists(ws + "/sub/ok")) << r.out << r.err;
  auto denials = auditEvents(audit, "denial");
  std::vector<nlohmann::json> broker;
  for (const auto& d : denials)
    if (d["layer"] == "broker") broker.push_back(d);
  ASSERT_EQ(broker.size(), 1u) << nlohmann::json(denials).dump();
  const auto& d = broker[0];
  EXPECT_EQ(d["operation"], "create");
  EXPECT_EQ(d["syscall"], "openat");
  EXPECT_EQ(d["path"], "../.zshrc");
  EXPECT_EQ(d["resolvedPath"], ws + "/.zshrc");
  EXPECT_EQ(d["rule"], "protected name \".zshrc\"");
  EXPECT_EQ(d["error"], "EACCES");
  EXPECT_FALSE(d["reason"].get<std::string>().empty());
  // The allowed create is not an event.
  auto exits = auditEvents(audit, "exit");
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_GE(exits[0]["denials"].get<long>(), 1);
  auto spawn = auditEvents(audit, "spawn");
  ASSERT_EQ(spawn.size(), 1u);
  EXPECT_EQ(spawn[0]["enforcement"]["writeBroker"]["active"], true);
  EXPECT_EQ(spawn[0]["enforcement"]["writeBroker"]["trees"], nlohmann::json::array({ws}));
  // Linux 6.6 wakes the answering thread on the caller's CPU (and the caller
  // on its): the event says whether this sandbox's listener has it.
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(u.release, "%d.%d", &major, &minor), 2) << u.release;
  EXPECT_EQ(spawn[0]["enforcement"]["writeBroker"]["synchronousWakeUp"], major > 6 || (major == 6 && minor >= 6))
      << u.release;
}

TEST_F(WriteBrokerTest, ADenyWritePathThatDoesNotExistYetHolds) {
  policy["filesystem"]["denyWrite"] = {ws + "/future/secret.txt", ws + "/later.env"};
  auto r = inside("mkdir -p future && $P create future/secret.txt; $P create later.env; $P create future/other");
  EXPECT_NE(r.out.find("errno=EACCES"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(exists(ws + "/future/secret.txt"));
  EXPECT_FALSE(exists(ws + "/later.env"));
  EXPECT_TRUE(exists(ws + "/future/other"));
  // Moving the directory above a denied path would take the denial off it.
  auto moved = probe({"rename", ws + "/future", ws + "/past"});
  EXPECT_TRUE(refused(moved, "EACCES")) << moved.out;
  EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << "no degradation is reported any more: " << r.err;
}

// A read-denied directory inside the workspace is a mask in the sandbox's
// view; moving a directory above it (or exchanging it) would give the
// secret a name no rule covers, which the broker would then open for the
// child -- O_RDWR reads it.
TEST_F(WriteBrokerTest, AReadDeniedPathCannotBeMovedOutFromUnderItsMask) {
  file(ws + "/a/secret/key", "TOPSECRET\n");
  policy["filesystem"]["denyRead"] = {ws + "/a/secret"};
  const std::pair<const char*, const char*> moves[] = {
      {"$P rename a b", "b"}, {"mkdir -p c && $P rename2 a c exchange", "c"}, {"$P symlink a/secret s2 && $P rename s2 a", "a"}};
  for (const auto& [step, to] : moves) {
    auto r = inside(std::string("$P cat-rdwr a/notes; $P mkdir a/mine && ") + step + " ; $P cat-rdwr " + to +
                    "/secret/key");
    EXPECT_TRUE(exists(ws + "/a/mine")) << "the step before the attack ran: " << r.out << r.err;
    EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << step << ": " << r.out;
    EXPECT_NE(r.out.find("errno=EACCES"), std::string::npos) << step << ": " << r.out << r.err;
    EXPECT_EQ(slurp(ws + "/a/secret/key"), "TOPSECRET\n") << step;
    std::filesystem::remove(ws + "/a/mine");
  }
  // The neighbours: an O_RDWR read beside the mask, and directories beside
  // it, or elsewhere, moved.
  file(ws + "/a/notes", "NOTES\n");
  auto ok = inside("mkdir -p a/x d && $P rename a/x a/y && $P rename d e && $P cat-rdwr a/notes");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("NOTES"), std::string::npos) << ok.out;
}

// The child's view of a tree is mounted nodev; the broker's own mount of it
// is not. A device node the host made there (an extracted root filesystem's
// /dev) must open for the child as the view says -- EACCES -- never as the
// device (a disk, /dev/kmsg, a tty).
TEST_F(WriteBrokerTest, ADeviceNodeInATreeOpensForNoOne) {
  if (::mknod((ws + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod((ws + "/zero").c_str(), S_IFCHR | 0666, makedev(1, 5)) != 0)
    GTEST_SKIP() << "making a device node in the workspace needs CAP_MKNOD on the host: " << strerrorname_np(errno);
  auto write = inside("$P write-text README ok && $P write-text null x");
  EXPECT_TRUE(refused(write, "EACCES")) << write.out << write.err;
  EXPECT_EQ(slurp(ws + "/README").substr(0, 2), "ok") << "the allowed write before the attack ran";
  for (const char* op : {"cat-rdwr", "cat"}) {
    auto r = probe({op, ws + "/zero"});
    EXPECT_TRUE(refused(r, "EACCES")) << op << ": " << r.out << r.err;
  }
  auto truncated = inside("$P create fresh && $P write null");
  EXPECT_TRUE(refused(truncated, "EACCES")) << truncated.out << truncated.err;
  // Audited as a refusal.
  const std::string audit = root_ + "/audit.jsonl";
  inside("$P write-text null x", {"--audit", audit});
  auto denials = auditEvents(audit, "denial");
  ASSERT_EQ(denials.size(), 1u) << nlohmann::json(denials).dump();
  EXPECT_EQ(denials[0]["rule"], "device node in a writable tree");
  EXPECT_EQ(denials[0]["resolvedPath"], ws + "/null");
}

// A FIFO (or socket, or device node) at a name in a tree is what the host's
// next tool opens there: a FIFO at .git/index hangs every `git status`. Only
// files, directories and symlinks are made; the private /tmp keeps FIFOs.
TEST_F(WriteBrokerTest, NoSpecialFileIsMadeInATreeWhileOneInThePrivateTmpIs) {
  const std::string audit = root_ + "/audit.jsonl";
  struct Case {
    const char* attack;
    const char* error;
  };
  const Case cases[] = {{"$P mkfifo .git/index", "EPERM"},
                        {"$P mkfifo sub/fifo", "EPERM"},
                        {"$P mknod-socket sub/sock", "EPERM"},
                        {"$P mkfifo /tmp/f && $P rename /tmp/f sub/moved", "EXDEV"}};
  for (const auto& c : cases) {
    auto r = inside(std::string("mkdir -p sub && $P write sub/neighbour && ") + c.attack, {"--audit", audit});
    EXPECT_TRUE(refused(r, c.error)) << c.attack << ": " << r.out << r.err;
    EXPECT_EQ(slurp(ws + "/sub/neighbour"), "probe\n") << "the allowed write before the attack ran";
  }
  for (const char* name : {"/.git/index", "/sub/fifo", "/sub/sock", "/sub/moved"})
    EXPECT_FALSE(exists(ws + name)) << name;
  auto denials = auditEvents(audit, "denial");
  ASSERT_EQ(denials.size(), 3u) << nlohmann::json(denials).dump();
  EXPECT_EQ(denials[0]["rule"], "special file in a writable tree");
  EXPECT_EQ(denials[0]["resolvedPath"], ws + "/.git/index");
  EXPECT_EQ(denials[2]["resolvedPath"], ws + "/sub/sock");
  // The neighbours: a file at the same name, a FIFO in the private /tmp.
  auto ok = inside("$P create .git/index && $P mkfifo /tmp/fifo");
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_EQ(slurp(ws + "/.git/index"), "probe\n");
}

TEST_F(WriteBrokerTest, NothingIsPlacedOnTheHost) {
  auto listing = [](const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) names.insert(e.path().string());
    return names;
  };
  auto before = listing(ws);
  auto r = inside("$P create .bashrc; $P create .git/config; $P mkdir .vscode; $P create .claude.json; true");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(listing(ws), before);
}

// The table of write_ops.cc, once natively in a temporary directory and once
// inside a sandbox: every line -- result, errno, what was left -- is the same.
TEST_F(WriteBrokerTest, EveryWriteShapedCallBehavesAsItDoesNatively) {
  const std::string native = root_ + "/native", sandboxed = ws + "/cases";
  std::filesystem::create_directories(native);
  std::filesystem::create_directories(sandboxed);
  ::chmod(sandboxed.c_str(), 0755);
  auto nat = runProcess({"/bin/sh", "-c", "cd " + native + " && exec " + probe_ + " write-ops"});
  ASSERT_EQ(nat.exitCode, 0) << nat.err;
  auto in = inside("cd cases && exec $P write-ops");
  ASSERT_EQ(in.exitCode, 0) << in.err;
  // The documented differences (README, known limits): metadata calls on a
  // descriptor the program opened itself are not brokered, and its view of
  // the tree is read-only.
  const std::map<std::string, std::string> different = {
      {"fchmod-on-a-read-only-descriptor", "rc=-1 errno=EROFS f:file0644 size=1 links=1 \"x\""},
      {"fchmod-on-a-directory-descriptor", "rc=-1 errno=EROFS d:dir0755"},
      {"futimens-on-a-read-only-descriptor", "rc=-1 errno=EROFS"},
      {"fsetxattr-on-a-read-only-descriptor", "rc=-1 errno=EROFS"},
      {"mkfifo", "rc=-1 errno=EPERM"},  // no special file in a writable tree
  };
  std::istringstream a(nat.out), b(in.out);
  std::string lineA, lineB;
  int compared = 0;
  while (std::getline(a, lineA)) {
    ASSERT_TRUE(std::getline(b, lineB)) << "the sandbox printed fewer cases, stopping before: " << lineA;
    const std::string name = lineA.substr(0, lineA.find(':'));
    if (auto d = different.find(name); d != different.end()) {
      EXPECT_EQ(lineB.substr(0, name.size() + 2 + d->second.size()), name + ": " + d->second) << lineA;
    } else {
      EXPECT_EQ(lineB, lineA);
    }
    ++compared;
  }
  EXPECT_FALSE(std::getline(b, lineB)) << "the sandbox printed more cases: " << lineB;
  EXPECT_GT(compared, 90);
}

TEST_F(WriteBrokerTest, RealToolsWorkUnchanged) {
  // On the host: a repository, a tarball, a tree.
  const std::string repo = ws + "/repo";
  std::filesystem::create_directories(repo);
  for (int i = 0; i < 20; ++i) file(repo + "/d" + std::to_string(i % 4) + "/f" + std::to_string(i), std::to_string(i) + "\n");
  auto git = [&](const std::string& args) { return runProcess({"/bin/sh", "-c", "cd " + repo + " && git " + args}); };
  ASSERT_EQ(git("init -q . && git config user.email t@example.invalid && git config user.name t").exitCode, 0);
  for (int i = 0; i < 30; ++i) file(ws + "/tree/d" + std::to_string(i % 5) + "/f" + std::to_string(i), "x" + std::to_string(i));
  ASSERT_EQ(::symlink("d1/f1", (ws + "/tree/link").c_str()), 0);
  ASSERT_EQ(::chmod((ws + "/tree/d2").c_str(), 0700), 0);
  ASSERT_EQ(runProcess({"tar", "cf", ws + "/t.tar", "-C", ws + "/tree", "."}).exitCode, 0);
  auto r = inside(
      "set -e\n"
      "cd repo && git add -A && git commit -qm one && git checkout -qb feature\n"
      "echo more >> d1/f1 && git commit -qam two && git checkout -q - && git gc -q\n"
      "echo commits=$(git log --oneline --all | wc -l) && cd ..\n"
      "mkdir x && tar xf t.tar -C x && diff -r tree x && echo tar=ok\n"
      "cp -a tree copy && diff -r tree copy && [ \"$(stat -c %a copy/d2)\" = 700 ] && echo cp=ok\n"
      "printf 'v1' > .notes.swp && mv .notes.swp notes && printf 'v2' > .notes.swp && mv .notes.swp notes && echo edit=$(cat notes)\n"
      "python3 -m venv venv && ./venv/bin/python -c 'import sys; print(\"venv=\" + sys.prefix)'\n"
      "cd /tmp && git init -q scratch && echo tmp-git=ok\n");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  for (const char* line : {"commits=2", "tar=ok", "cp=ok", "edit=v2", "tmp-git=ok"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find("venv=" + ws + "/venv"), std::string::npos) << r.out << r.err;
  // What git wrote is a repository the host's git reads.
  auto log = git("log --oneline --all");
  EXPECT_EQ(log.exitCode, 0) << log.err;
  EXPECT_EQ(std::count(log.out.begin(), log.out.end(), '\n'), 2) << log.out;
  EXPECT_EQ(git("fsck --no-progress").exitCode, 0);
}

TEST_F(WriteBrokerTest, RacingThreadsNeverWriteAProtectedName) {
  std::filesystem::create_directories(ws + "/race");
  auto r = probe({"race", ws + "/race", "2"});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  long created = std::stol(r.out.substr(r.out.find("created=") + 8));
  EXPECT_GT(created, 10) << "the allowed creates must have worked";
  EXPECT_TRUE(exists(ws + "/race/allowed"));
  EXPECT_FALSE(exists(ws + "/race/.bashrc"));
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
}

// Two sandboxes on one workspace (each with its own broker): one swaps a
// git-shaped directory (HEAD, objects, refs) with an ordinary one while the
// other creates a config in each. What the decision asks of a directory's
// contents must be asked of the directory the call then writes in, not of
// whatever bears its name a moment later.
TEST_F(WriteBrokerTest, TwoSandboxesOnOneTreeCannotRaceAConfigIntoAGitDirectory) {
  file(ws + "/bare/HEAD", "ref: refs/heads/main\n");
  std::filesystem::create_directories(ws + "/bare/objects");
  std::filesystem::create_directories(ws + "/bare/refs");
  std::filesystem::create_directories(ws + "/plain");
  auto swapper = std::async(std::launch::async, [&] { return probe({"exchange-loop", ws + "/bare", ws + "/plain", "3"}); });
  auto writer = probe({"config-race", ws + "/bare", ws + "/plain", "3"});
  auto swapped = swapper.get();
  EXPECT_EQ(writer.exitCode, 0) << writer.out << writer.err;
  ASSERT_NE(writer.out.find("created="), std::string::npos) << writer.out << writer.err;
  EXPECT_GT(std::stol(writer.out.substr(writer.out.find("created=") + 8)), 10)
      << "the creates in the ordinary directory must have worked";
  ASSERT_NE(swapped.out.find("swaps="), std::string::npos) << swapped.out << swapped.err;
  EXPECT_GT(std::stol(swapped.out.substr(swapped.out.find("swaps=") + 6)), 10) << "the swaps must have run";
  for (const char* dir : {"/bare", "/plain"})
    EXPECT_FALSE(exists(ws + dir + "/HEAD") && exists(ws + dir + "/config")) << dir << " is a git directory with a config";
}

// Processes whose executable is `path`.
std::vector<pid_t> processesRunning(const std::string& path) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    char exe[4096];
    std::string link = std::string("/proc/") + e->d_name + "/exe";
    ssize_t n = ::readlink(link.c_str(), exe, sizeof exe - 1);
    if (n > 0 && std::string(exe, static_cast<std::size_t>(n)) == path) out.push_back(std::atoi(e->d_name));
  }
  if (proc) ::closedir(proc);
  return out;
}

TEST_F(WriteBrokerTest, AKilledStockadeLeavesNoWriteAfterwardsAndNothingBehind) {
  const std::string flood = ws + "/flood";
  std::filesystem::create_directories(flood);
  auto argv = stockadeArgv();
  argv.insert(argv.end(), {probe_, "create-flood", flood, "4"});
  pid_t stockade = ::fork();
  if (stockade == 0) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ASSERT_GT(stockade, 0);
  auto count = [&] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(flood)) ++n;
    return n;
  };
  for (int i = 0; i < 500 && count() < 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(count(), 200u) << "the flood of brokered creates did not get going";
  ASSERT_EQ(::kill(stockade, SIGKILL), 0);
  ::waitpid(stockade, nullptr, 0);
  // The sandbox dies with it (parent-death signal); its calls fail meanwhile.
  for (int i = 0; i < 500 && !processesRunning(probe_).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(processesRunning(probe_).empty()) << "the sandboxed flood outlived stockade";
  const std::size_t settled = count();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(count(), settled) << "files appeared after stockade was killed";
  for (const auto& e : std::filesystem::directory_iterator(flood)) {
    std::string name = e.path().filename().string();
    EXPECT_NE(name.find('-'), std::string::npos) << "left behind: " << name;
    EXPECT_TRUE(e.is_regular_file()) << name;
  }
  // Nothing outside the flood's own files appeared in the workspace.
  for (const auto& e : std::filesystem::directory_iterator(ws)) {
    std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "flood" || name == "README" || name == ".bashrc" || name == ".git") << "left behind: " << name;
  }
}

}  // namespace
}  // namespace stockade::testing
