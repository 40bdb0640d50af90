#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "stockade/rules.h"
#include "tests/support/private_mounts.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using testing::TempDir;

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

class DeriveTest : public ::testing::Test {
 protected:
  DeriveContext ctx() const { return {.home = home_, .cwd = work_, .tmpdir = std::nullopt}; }

  DerivedRules deriveOk(const std::string& json, DeriveContext c) {
    auto r = derive(SandboxPolicy::fromJson(json), c);
    if (auto* e = std::get_if<PolicyError>(&r)) ADD_FAILURE() << e->text();
    return std::get<DerivedRules>(std::move(r));
  }
  DerivedRules deriveOk(const std::string& json) { return deriveOk(json, ctx()); }

  TempDir t_;
  std::string home_ = t_.dir("home");
  std::string work_ = t_.dir("work");
};

TEST_F(DeriveTest, ExpandsTildeAgainstHome) {
  auto r = deriveOk(R"({"filesystem":{"denyRead":["~/.ssh","~"]}})");
  EXPECT_TRUE(has(r.filesystem().denyRead, home_ + "/.ssh"));
  EXPECT_TRUE(has(r.filesystem().denyRead, home_));
}

TEST_F(DeriveTest, ResolvesRelativePathsAgainstCwd) {
  auto r = deriveOk(R"({"filesystem":{"allowWrite":[".","./build/../out"],"denyWrite":[".env"]}})");
  EXPECT_EQ(r.filesystem().allowWrite, (std::vector<std::string>{work_, work_ + "/out"}));
  EXPECT_EQ(r.filesystem().denyWrite, std::vector<std::string>{work_ + "/.env"});
}

TEST_F(DeriveTest, RelativePathWithoutCwdIsAnErrorNamingTheField) {
  DeriveContext c = ctx();
  c.cwd.reset();
  auto r = derive(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["/tmp","build"]}})"), c);
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r));
  EXPECT_EQ(std::get<PolicyError>(r).path, "filesystem.allowWrite[1]");
  EXPECT_NE(std::get<PolicyError>(r).message.find("\"build\" is relative"), std::string::npos);
}

TEST_F(DeriveTest, TildeWithoutHomeIsAnError) {
  DeriveContext c = ctx();
  c.home.clear();
  auto r = derive(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["~/.ssh"]}})"), c);
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r));
  EXPECT_EQ(std::get<PolicyError>(r).path, "filesystem.denyRead[0]");
}

TEST_F(DeriveTest, SymlinkedPathsResolveToTheRealObject) {
  std::string real = t_.dir("real/secrets");
  t_.symlink(real, "home/.ssh");
  t_.symlink(t_ / "real", "work/link");
  auto r = deriveOk(R"({"filesystem":{"denyRead":["~/.ssh"],"allowWrite":["link/out"]}})");
  EXPECT_EQ(r.filesystem().denyRead, std::vector<std::string>{real});
  EXPECT_EQ(r.filesystem().allowWrite, std::vector<std::string>{t_ / "real/out"});
}

TEST_F(DeriveTest, DanglingSymlinkResolvesToItsTarget) {
  t_.symlink(t_ / "nowhere/yet", "work/dangling");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["dangling"]}})");
  EXPECT_EQ(r.filesystem().allowWrite, std::vector<std::string>{t_ / "nowhere/yet"});
}

TEST_F(DeriveTest, RelativeSymlinkAndDotDotResolveLikeTheKernel) {
  t_.dir("a/b");
  t_.symlink("../c", "a/b/up");  // a/b/up -> a/c
  auto r = deriveOk(R"({"filesystem":{"allowWrite":[")" + t_ / "a/b/up/../d" + R"("]}})");
  // The kernel follows the link first, then "..": a/c/.. = a, so a/d.
  EXPECT_EQ(r.filesystem().allowWrite, std::vector<std::string>{t_ / "a/d"});
}

TEST_F(DeriveTest, SymlinkLoopIsAnError) {
  t_.symlink(t_ / "work/loop2", "work/loop1");
  t_.symlink(t_ / "work/loop1", "work/loop2");
  auto r = derive(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["loop1"]}})"), ctx());
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r));
  EXPECT_NE(std::get<PolicyError>(r).message.find("symlink loop"), std::string::npos);
}

TEST_F(DeriveTest, ReadDenyGlobsExpandToExistingMatchesAndKeepThePattern) {
  std::string top = t_.file("work/key.pem");
  std::string deep = t_.file("work/a/b/c/d/server.pem");
  t_.file("work/a/readme.md");
  t_.file("work/a/pem.txt");
  auto r = deriveOk(R"({"filesystem":{"denyRead":["**/*.pem"]}})");
  EXPECT_EQ(r.filesystem().denyReadPatterns, std::vector<std::string>{work_ + "/**/*.pem"});
  EXPECT_EQ(r.filesystem().denyRead, (std::vector<std::string>{deep, top}));
}

TEST_F(DeriveTest, GlobMatchThatIsASymlinkDeniesTheLinkAndItsTarget) {
  std::string target = t_.file("elsewhere/actual-key", "k");
  std::string link = t_.symlink(target, "work/id.pem");
  auto r = deriveOk(R"({"filesystem":{"denyRead":["*.pem"]}})");
  EXPECT_TRUE(has(r.filesystem().denyRead, link));
  EXPECT_TRUE(has(r.filesystem().denyRead, target));
}

TEST_F(DeriveTest, ADeniedFileWithAnUndeniedHardLinkIsRefused) {
  std::string key = t_.file("home/.ssh/id_rsa", "PRIVATE");
  std::filesystem::create_hard_link(key, work_ + "/copy");
  auto r = derive(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["/etc/shadow","~/.ssh/id_rsa"]}})"), ctx());
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r)) << "the object stays readable as work/copy";
  EXPECT_EQ(std::get<PolicyError>(r).path, "filesystem.denyRead[1]");
  EXPECT_EQ(std::get<PolicyError>(r).message,
            "\"" + key + "\" has 2 hard links and only 1 of them is denied, so the file stays readable under \"" +
                work_ + "/copy\". Deny every name too, or remove the extra links");
  // Denying every name is fine.
  deriveOk(R"({"filesystem":{"denyRead":["~/.ssh/id_rsa","copy"]}})");
}

TEST_F(DeriveTest, AnEscapedGlobCharacterIsPartOfTheName) {
  std::string odd = t_.file("work/notes[1].txt");
  t_.file("work/notes1.txt");
  auto r = deriveOk(R"({"filesystem":{"denyRead":["notes\\[1].txt"],"allowWrite":[],"denyWrite":["a\\*b"]}})");
  EXPECT_EQ(r.filesystem().denyRead, std::vector<std::string>{odd});
  EXPECT_TRUE(r.filesystem().denyReadPatterns.empty());
  EXPECT_EQ(r.filesystem().denyWrite, std::vector<std::string>{work_ + "/a*b"});
}

TEST_F(DeriveTest, NamingADeniedFileTwiceDoesNotCountAsDenyingItsOtherLink) {
  std::string key = t_.file("home/.ssh/id_rsa", "PRIVATE");
  std::filesystem::create_hard_link(key, work_ + "/copy");
  for (const char* list : {R"(["~/.ssh/id_rsa","~/.ssh/id_rsa"])", R"(["~/.ssh/id_rsa","~/.ssh/./id_rsa"])"}) {
    auto r = derive(SandboxPolicy::fromJson(std::string(R"({"filesystem":{"denyRead":)") + list + "}}"), ctx());
    EXPECT_TRUE(std::holds_alternative<PolicyError>(r)) << list;
  }
}

TEST_F(DeriveTest, SymlinksAfterAMissingComponentAndDotDotAreStillFollowed) {
  t_.symlink("/etc", "work/link");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["nonexistent/../link"],"allowWriteSystemPaths":true}})");
  // The kernel would refuse the path (ENOENT) today and follow the link once
  // the directory exists: the rule is about /etc either way.
  EXPECT_EQ(r.filesystem().allowWrite, std::vector<std::string>{"/etc"});
}

// A writable "/", system tree or home directory is refused at derivation,
// naming the entry and both fixes, unless the policy opts in by name.
struct SystemPathCase {
  const char* name;
  std::string entry;  // as written in allowWrite; "." with `cwd`
  std::string cwd;    // empty: the test's work directory
  std::string what;   // expected in the message
};
void PrintTo(const SystemPathCase& c, std::ostream* os) { *os << c.name; }

class SystemPathTest : public DeriveTest, public ::testing::WithParamInterface<SystemPathCase> {};

TEST_P(SystemPathTest, IsRefusedNamingTheEntryAndTheOptIn) {
  const auto& c = GetParam();
  DeriveContext context = ctx();
  if (!c.cwd.empty()) context.cwd = c.cwd;
  nlohmann::json policy = {{"filesystem", {{"allowWrite", {"/srv/data", c.entry}}}}};
  auto r = derive(SandboxPolicy::fromJson(policy.dump()), context);
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r)) << c.entry;
  const auto& e = std::get<PolicyError>(r);
  EXPECT_EQ(e.path, "filesystem.allowWrite[1]");
  EXPECT_NE(e.message.find(c.what), std::string::npos) << e.text();
  EXPECT_NE(e.message.find("\"filesystem.allowWriteSystemPaths\": true"), std::string::npos) << e.text();
  EXPECT_NE(e.message.find("Name a narrower directory"), std::string::npos) << e.text();

  // With "/" opted in, derive() would scan the whole filesystem for mandatory
  // denies (seconds); the opt-in is the same test for every entry.
  if (c.cwd == "/") return;
  policy["filesystem"]["allowWriteSystemPaths"] = true;
  auto opted = derive(SandboxPolicy::fromJson(policy.dump()), context);
  ASSERT_TRUE(std::holds_alternative<DerivedRules>(opted)) << std::get<PolicyError>(opted).text();
  EXPECT_TRUE(std::get<DerivedRules>(opted).filesystem().allowWriteSystemPaths);
  EXPECT_NE(std::get<DerivedRules>(opted).toJson().find("\"allowWriteSystemPaths\":true"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    EverySystemTree, SystemPathTest,
    ::testing::Values(SystemPathCase{"TheRootFromTheCwd", ".", "/", "\".\" resolves to \"/\", the whole filesystem"},
                      SystemPathCase{"EtcFromTheCwd", ".", "/etc", "\".\" resolves to \"/etc\", the system directory \"/etc\""},
                      SystemPathCase{"InsideEtc", "/etc/cron.d", "", "inside the system directory \"/etc\""},
                      SystemPathCase{"Usr", "/usr/local", "", "\"/usr\""},
                      SystemPathCase{"BinThroughItsLink", "/bin", "", "system directory"},
                      SystemPathCase{"Lib64", "/lib64", "", "system directory"},
                      SystemPathCase{"Boot", "/boot", "", "\"/boot\""},
                      SystemPathCase{"Dev", "/dev/shm", "", "\"/dev\""},
                      SystemPathCase{"Proc", "/proc/sys", "", "\"/proc\""},
                      SystemPathCase{"Sys", "/sys/fs/cgroup", "", "\"/sys\""},
                      SystemPathCase{"Var", "/var/lib/dpkg", "", "\"/var\""},
                      SystemPathCase{"Run", "/run/user", "", "\"/run\""},
                      SystemPathCase{"TheHomeItself", "~", "", "the home directory itself"},
                      SystemPathCase{"AboveTheHome", "..", "", "holding the home directory"}));

TEST_F(DeriveTest, VarTmpTmpAndProjectDirectoriesStayWritableWithoutTheOptIn) {
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["/var/tmp/x","/tmp","~/proj","/srv/data","."]}})");
  EXPECT_FALSE(r.filesystem().allowWriteSystemPaths);
  EXPECT_TRUE(r.writable("/var/tmp/x/y"));
  EXPECT_TRUE(r.writable(home_ + "/proj/a"));
  // /var/tmp itself (this test's home lies under it, so look from another home).
  DeriveContext elsewhere = ctx();
  elsewhere.home = "/srv/nobody";
  EXPECT_TRUE(deriveOk(R"({"filesystem":{"allowWrite":["/var/tmp"]}})", elsewhere).writable("/var/tmp/y"));
}

// A system tree mounted a second time (the host's "/" at "/host" in a
// container) is judged as the directory it is, not by its name. The mounts
// are made in a child's own mount namespace (tests/support/private_mounts.h).
TEST_F(DeriveTest, ASystemTreeUnderAnotherNameIsRefusedWhileAProjectUnderItStaysWritable) {
  const std::string host = t_.dir("host"), etc = t_.dir("etc-again");
  const std::vector<std::string> entries = {host, host + "/etc/cron.d", etc, host + home_, host + work_};
  const std::string report = testing::inPrivateMounts([&]() -> std::string {
    if (::mount("/", host.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::mount("/etc", etc.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return "SETUP: bind";
    std::string lines;
    for (const auto& e : entries) {
      nlohmann::json policy = {{"filesystem", {{"allowWrite", {e}}, {"denyRead", nlohmann::json::array()}}}};
      auto r = derive(SandboxPolicy::fromJson(policy.dump()), ctx());
      lines += e + "\t" + (std::holds_alternative<PolicyError>(r) ? std::get<PolicyError>(r).text() : "ok") + "\n";
    }
    return lines;
  });
  if (report == "SETUP: unshare") GTEST_SKIP() << "unshare(CLONE_NEWUSER | CLONE_NEWNS) is refused to this user: no mounts of its own to make";
  ASSERT_FALSE(report.starts_with("SETUP")) << report;
  std::map<std::string, std::string> said;
  for (std::size_t at = 0, end; (end = report.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = report.substr(at, end - at);
    said[line.substr(0, line.find('\t'))] = line.substr(line.find('\t') + 1);
  }
  ASSERT_EQ(said.size(), entries.size()) << report;
  auto refused = [&](const std::string& entry, const std::string& what) {
    EXPECT_NE(said[entry].find("filesystem.allowWrite[0]"), std::string::npos) << entry << ": " << said[entry];
    EXPECT_NE(said[entry].find(what), std::string::npos) << said[entry];
    EXPECT_NE(said[entry].find("\"filesystem.allowWriteSystemPaths\": true"), std::string::npos) << said[entry];
  };
  refused(host, "is \"/\" under another name (the same directory, mounted twice), the whole filesystem");
  refused(host + "/etc/cron.d", "is \"/etc/cron.d\" under another name (the same directory, mounted twice), inside "
                                "the system directory \"/etc\"");
  refused(etc, "is \"/etc\" under another name (the same directory, mounted twice), the system directory \"/etc\"");
  refused(host + home_, "the home directory itself");
  // The neighbour: a project directory reached through the second "/" is as writable as through the first.
  EXPECT_EQ(said[host + work_], "ok");
}

TEST_F(DeriveTest, TheOptInChangesTheFingerprint) {
  auto plain = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  auto opted = deriveOk(R"({"filesystem":{"allowWrite":["."],"allowWriteSystemPaths":true}})");
  EXPECT_NE(plain.fingerprint(), opted.fingerprint());
}

TEST_F(DeriveTest, DefaultWritePathsAreUnionedIn) {
  DeriveContext c = ctx();
  c.tmpdir = t_.dir("private-tmp");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})", c);
  for (const char* dev : {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
    EXPECT_TRUE(has(r.filesystem().defaultWrite, dev)) << dev;
  EXPECT_TRUE(has(r.filesystem().defaultWrite, t_ / "private-tmp"));
  EXPECT_TRUE(r.writable(t_ / "private-tmp/x"));
  EXPECT_TRUE(r.writable(work_ + "/src/main.c"));
  EXPECT_FALSE(r.writable(home_ + "/x"));
}

TEST_F(DeriveTest, MandatoryDeniesAreFoundAtEveryDepthAndListedApart) {
  std::vector<std::string> expected = {
      t_.file("work/.bashrc"),
      t_.file("work/.gitconfig"),
      t_.file("work/a/b/c/.zshrc"),           // depth 3
      t_.file("work/a/b/c/d/e/.profile"),     // depth 5
      t_.dir("work/.git/hooks"),
      t_.file("work/.git/config"),
      t_.dir("work/a/b/c/nested/.git/hooks"),  // a repository at depth 4
      t_.file("work/a/b/c/nested/.git/config"),
      t_.dir("work/.vscode"),
      t_.dir("work/x/y/z/.idea"),
      t_.dir("work/.claude/commands"),
      t_.file("work/.mcp.json"),
  };
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/a/b/c/nested/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.vscode/tasks.json");  // inside a denied folder: not listed twice
  t_.file("work/src/config");          // "config" outside a git dir is ordinary
  t_.file("work/src/hooks/x");
  t_.file("work/.claude/notes.md");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."],"denyWrite":[".env"]}})");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(r.filesystem().mandatoryDenyWrite, expected);
  EXPECT_EQ(r.filesystem().denyWrite, std::vector<std::string>{work_ + "/.env"});
  EXPECT_FALSE(r.writable(work_ + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(r.writable(work_ + "/a/b/c/.zshrc"));
  EXPECT_TRUE(r.writable(work_ + "/.git/objects/ab"));
  EXPECT_TRUE(r.writable(work_ + "/src/config"));
}

TEST_F(DeriveTest, MandatoryDeniesCoverSubmoduleAndBareGitDirs) {
  t_.file("work/.git/HEAD", "x");
  std::string subHooks = t_.dir("work/.git/modules/lib/hooks");
  t_.file("work/.git/modules/lib/HEAD", "x");
  std::string bareHooks = t_.dir("work/mirror.git/hooks");
  t_.file("work/mirror.git/HEAD", "x");
  t_.dir("work/mirror.git/objects");
  t_.dir("work/mirror.git/refs");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_TRUE(has(r.filesystem().mandatoryDenyWrite, subHooks));
  EXPECT_TRUE(has(r.filesystem().mandatoryDenyWrite, bareHooks));
}

TEST_F(DeriveTest, MandatoryDenyScanDoesNotFollowSymlinksOutOfTheTree) {
  t_.file("outside/.bashrc");
  t_.symlink(t_ / "outside", "work/out");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_TRUE(r.filesystem().mandatoryDenyWrite.empty());
}

// The scan opens each directory through its parent's descriptor, so a file
// whose full path is longer than PATH_MAX is still found.
TEST_F(DeriveTest, MandatoryDenyBeyondPathMaxIsFound) {
  const std::string segment(200, 'd');
  std::string rel = "work";
  std::vector<int> levels = {::open((t_ / "work").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  ASSERT_GE(levels.back(), 0);
  for (int i = 0; i < 25; ++i) {  // > 5000 characters; built by descriptor, as no full path works
    ASSERT_EQ(::mkdirat(levels.back(), segment.c_str(), 0755), 0);
    levels.push_back(::openat(levels.back(), segment.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_GE(levels.back(), 0);
    rel += "/" + segment;
  }
  int f = ::openat(levels.back(), ".bashrc", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(f, 0);
  ::close(f);
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_TRUE(has(r.filesystem().mandatoryDenyWrite, t_ / (rel + "/.bashrc")));
  // TempDir's recursive removal works by full path: take the tree down by descriptor.
  ::unlinkat(levels.back(), ".bashrc", 0);
  for (std::size_t i = levels.size() - 1; i > 0; --i) {
    ::close(levels[i]);
    ::unlinkat(levels[i - 1], segment.c_str(), AT_REMOVEDIR);
  }
  ::close(levels[0]);
}

// A tree deeper than the open-file limit cannot be scanned; derive() says so
// instead of treating the rest as empty.
TEST_F(DeriveTest, TreeDeeperThanTheOpenFileLimitIsAnErrorNotASilentSkip) {
  std::string rel = "work";
  for (int i = 0; i < 80; ++i) rel += "/d";
  t_.file(rel + "/.bashrc");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = {64, saved.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto r = derive(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["."]}})"), ctx());
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r));
  EXPECT_EQ(std::get<PolicyError>(r).path, "filesystem.allowWrite");
  EXPECT_NE(std::get<PolicyError>(r).message.find("nested too deeply"), std::string::npos)
      << std::get<PolicyError>(r).message;
  // The allowed neighbour: the same tree under the normal limit is scanned to the bottom.
  auto ok = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_TRUE(has(ok.filesystem().mandatoryDenyWrite, t_ / (rel + "/.bashrc")));
}

TEST_F(DeriveTest, WritableRootInsideAMandatoryLocationIsItselfDenied) {
  std::string hooks = t_.dir("work/.git/hooks");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":[".git/hooks"]}})");
  EXPECT_EQ(r.filesystem().mandatoryDenyWrite, std::vector<std::string>{hooks});
  EXPECT_FALSE(r.writable(hooks + "/post-checkout"));
}

TEST_F(DeriveTest, ReadDecisionsHonourCarveOutsAndMostSpecificRule) {
  auto r = deriveOk(R"({"filesystem":{"denyRead":["~/.ssh","~/.ssh/known_hosts/inner"],
                                      "allowRead":["~/.ssh/known_hosts"]}})");
  EXPECT_FALSE(r.readable(home_ + "/.ssh"));
  EXPECT_FALSE(r.readable(home_ + "/.ssh/id_ed25519"));
  EXPECT_TRUE(r.readable(home_ + "/.ssh/known_hosts"));
  EXPECT_FALSE(r.readable(home_ + "/.ssh/known_hosts/inner/x"));
  EXPECT_TRUE(r.readable(home_ + "/.sshrc"));
  EXPECT_TRUE(r.readable("/usr/bin/env"));
}

TEST_F(DeriveTest, NetworkEntriesAreNormalised) {
  auto r = deriveOk(R"({"network":{"allowedDomains":["GitHub.com.","0x7f.1:8080","*.NPMJS.org"],
                                   "deniedDomains":["[::ffff:10.0.0.1]"]}})");
  std::vector<std::string> allowed;
  for (const auto& d : r.network().allowedDomains) allowed.push_back(d.text());
  EXPECT_EQ(allowed, (std::vector<std::string>{"*.npmjs.org", "127.0.0.1:8080", "github.com"}));
  EXPECT_EQ(r.network().deniedDomains.at(0).text(), "10.0.0.1");
}

TEST_F(DeriveTest, CanonicalFormIsStableUnderReorderingAndDuplicates) {
  auto a = deriveOk(R"({"filesystem":{"denyRead":["/etc/shadow","~/.ssh"],"allowWrite":[".","/tmp"]},
                        "network":{"allowedDomains":["b.example","a.example"]},"env":{"allow":["TERM","PATH"]}})");
  auto b = deriveOk(R"({"env":{"allow":["PATH","TERM","PATH"]},"network":{"allowedDomains":["a.example","B.example."]},
                        "filesystem":{"allowWrite":["/tmp","./"],"denyRead":["~/.ssh","/etc/shadow","/etc/../etc/shadow"]}})");
  EXPECT_EQ(a.toJson(), b.toJson());
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.fingerprint().size(), 64u);
  auto c = deriveOk(R"({"filesystem":{"denyRead":["/etc/shadow"],"allowWrite":[".","/tmp"]}})");
  EXPECT_NE(a.fingerprint(), c.fingerprint());
}

TEST_F(DeriveTest, CanonicalJsonHasEveryAxisAndSortedKeys) {
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  auto j = nlohmann::json::parse(r.toJson());
  for (const char* key : {"filesystem", "network", "env", "limits"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.dump(), r.toJson()) << "re-serialising must not change the bytes";
}

}  // namespace
}  // namespace stockade
