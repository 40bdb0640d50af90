#include <gtest/gtest.h>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "policy/git_hooks.h"
#include "policy/paths.h"
#include "policy/protected_names.h"
#include "policy/text.h"
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
                      SystemPathCase{"Opt", "/opt/vendor", "", "inside the system directory \"/opt\""},
                      SystemPathCase{"TheHomeItself", "~", "", "the home directory itself"},
                      SystemPathCase{"AboveTheHome", "..", "", "holding the home directory"}));

// Every account's home directory counts, not only $HOME: as root, "/home"
// holds every user's home (their rc files, ~/.local/bin on their PATH).
TEST_F(DeriveTest, AnotherAccountsHomeAndADirectoryHoldingItAreRefusedWhileAProjectInsideStaysWritable) {
  const std::string homes = t_.dir("homes"), alice = t_.dir("homes/alice"), project = t_.dir("homes/alice/project");
  const std::string accounts = t_ / "passwd";
  {
    std::ofstream db(accounts);
    db << "root:x:0:0:root:" << home_ << ":/bin/sh\n"
       << "alice:x:1000:1000::" << alice << ":/bin/sh\n"
       << "daemon:x:1:1::/:/usr/sbin/nologin\n"                      // "/": not a home to hold
       << "ghost:x:2:2::" << t_ / "no-such-home" << ":/bin/sh\n";  // no such directory: nothing to judge
  }
  DeriveContext c = ctx();
  c.accounts = accounts;
  auto refused = [&](const std::string& entry, const std::string& what) {
    nlohmann::json policy = {{"filesystem", {{"allowWrite", {entry}}, {"denyRead", nlohmann::json::array()}}}};
    auto r = derive(SandboxPolicy::fromJson(policy.dump()), c);
    ASSERT_TRUE(std::holds_alternative<PolicyError>(r)) << entry;
    EXPECT_EQ(std::get<PolicyError>(r).path, "filesystem.allowWrite[0]");
    EXPECT_NE(std::get<PolicyError>(r).message.find(what), std::string::npos) << std::get<PolicyError>(r).text();
    EXPECT_NE(std::get<PolicyError>(r).message.find("\"filesystem.allowWriteSystemPaths\": true"), std::string::npos);
  };
  refused(alice, "is the home directory of the account \"alice\"");
  refused(homes, "a directory holding the home directory \"" + alice + "\" of the account \"alice\"");
  EXPECT_TRUE(deriveOk(R"({"filesystem":{"allowWrite":[")" + project + R"("]}})", c).writable(project + "/x"));
  // Without the database only $HOME counts.
  c.accounts.clear();
  EXPECT_TRUE(deriveOk(R"({"filesystem":{"allowWrite":[")" + alice + R"("]}})", c).writable(alice + "/x"));
}

// /proc/self is whichever process reads it: resolved at derivation it is
// stockade's own /proc/<pid>, nothing in the sandbox (where each process has
// its own). A read rule reaching a process's directory through a link is
// refused naming the link; one naming a /proc path as it is stays.
TEST_F(DeriveTest, AReadRuleReachingAProcessDirectoryThroughALinkIsRefusedNamingTheLink) {
  const std::string link = t_ / "mountinfo-link";
  std::filesystem::create_symlink("/proc/self/mountinfo", link);
  struct Entry {
    const char* field;
    std::string path, via;
  };
  for (const auto& e : {Entry{"denyRead", "/proc/self/environ", "/proc/self"},
                        Entry{"denyRead", "/proc/thread-self/status", "/proc/thread-self"},
                        Entry{"denyRead", "/proc/mounts", "/proc/self"},
                        Entry{"denyRead", link, "/proc/self"},
                        Entry{"allowRead", "/proc/self/root", "/proc/self"},
                        Entry{"denyWrite", "/proc/self/fd/1", "/proc/self"}}) {
    nlohmann::json policy = {{"filesystem", {{"denyRead", {"/proc"}}, {"allowRead", nlohmann::json::array()}}}};
    policy["filesystem"][e.field] = {e.path};
    if (std::string(e.field) == "denyRead") policy["filesystem"]["denyRead"] = {e.path};
    auto r = derive(SandboxPolicy::fromJson(policy.dump()), ctx());
    ASSERT_TRUE(std::holds_alternative<PolicyError>(r)) << e.field << " " << e.path;
    EXPECT_EQ(std::get<PolicyError>(r).path, std::string("filesystem.") + e.field + "[0]");
    EXPECT_NE(std::get<PolicyError>(r).message.find(policy::quote(e.path) + " resolves through " + policy::quote(e.via)),
              std::string::npos)
        << std::get<PolicyError>(r).text();
  }
  // The neighbours: /proc paths named as they are.
  auto r = deriveOk(R"({"filesystem":{"denyRead":["/proc/1/environ","/proc/kallsyms"],"allowRead":[]}})");
  EXPECT_TRUE(has(r.filesystem().denyRead, "/proc/1/environ"));
  EXPECT_TRUE(has(r.filesystem().denyRead, "/proc/kallsyms"));
}

// A glob's match that is a link into /proc/self: the link is masked, and the
// deriving process's file it names is not a rule.
TEST_F(DeriveTest, AGlobMatchThatIsALinkIntoProcSelfGivesTheLinkOnly) {
  const std::string links = t_.dir("links");
  std::filesystem::create_symlink("/proc/self/mounts", links + "/mtab");
  auto r = deriveOk(R"({"filesystem":{"denyRead":[")" + links + R"(/mt[a]b"],"allowRead":[]}})");
  EXPECT_TRUE(has(r.filesystem().denyRead, links + "/mtab"));
  for (const auto& p : r.filesystem().denyRead) EXPECT_FALSE(p.starts_with("/proc/")) << p;
}

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

// What is protected in a writable tree is decided by name at each write:
// the rules carry the patterns, not what happens to exist.
TEST_F(DeriveTest, ProtectedNamesAreCarriedAsPatternsNotLookedUpOnDisk) {
  t_.file("work/.bashrc");
  t_.file("work/a/b/c/.zshrc");
  t_.dir("work/.git/hooks");
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/src/config");  // "config" outside a git dir is ordinary
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."],"denyWrite":[".env"]}})");
  EXPECT_TRUE(r.filesystem().mandatoryDenyWrite.empty());
  auto table = policy::tableProtectedNames();
  std::sort(table.begin(), table.end());
  EXPECT_TRUE(r.filesystem().protectedNames == table) << "the rules carry the table, sorted";
  EXPECT_EQ(r.filesystem().denyWrite, std::vector<std::string>{work_ + "/.env"});
  EXPECT_FALSE(r.writable(work_ + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(r.writable(work_ + "/a/b/c/.zshrc"));
  EXPECT_FALSE(r.writable(work_ + "/not/yet/made/.vscode/tasks.json"));  // whether or not it exists
  EXPECT_TRUE(r.writable(work_ + "/.git/objects/ab"));
  EXPECT_TRUE(r.writable(work_ + "/src/config"));
}

TEST_F(DeriveTest, TheFingerprintDoesNotDependOnWhatTheTreeHolds) {
  const std::string policyText = R"({"filesystem":{"allowWrite":["."],"denyWrite":[]}})";
  const std::string before = deriveOk(policyText).fingerprint();
  for (int i = 0; i < 200; ++i) t_.dir("work/d" + std::to_string(i % 20) + "/e" + std::to_string(i));
  t_.file("work/.bashrc");
  t_.dir("work/sub/.git/hooks");
  t_.file("work/.vscode/tasks.json");
  EXPECT_EQ(deriveOk(policyText).fingerprint(), before);
}

// A writable tree that a write deny covers as a whole is dead: the child
// can write nothing there (the denies win), yet the rules once listed it in
// allowWrite. Every deny list is checked: the user's denyWrite (as named and
// through a glob's match), what stockade protects for git, and the protected
// names. The neighbour: a deny *inside* a writable tree leaves the tree writable.
struct DeadWriteCase {
  const char* name;
  const char* policy;
  const char* said;  // in the refusal of filesystem.allowWrite[1]
};
class DeadWriteTest : public DeriveTest, public ::testing::WithParamInterface<DeadWriteCase> {};

TEST_P(DeadWriteTest, AWritableTreeAWriteDenyCoversIsRefusedNamingTheDeny) {
  t_.dir("work/gen/sub");
  t_.dir("work/.git/hooks");
  t_.dir("work/.vscode/x");
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.git/config", "[core]\n\thooksPath = tools/hooks\n");
  t_.dir("work/tools/hooks/d");
  auto r = derive(SandboxPolicy::fromJson(GetParam().policy), ctx());
  ASSERT_TRUE(std::holds_alternative<PolicyError>(r)) << GetParam().policy << " derived";
  const PolicyError& e = std::get<PolicyError>(r);
  EXPECT_EQ(e.path, "filesystem.allowWrite[1]") << e.text();
  EXPECT_NE(e.message.find(GetParam().said), std::string::npos) << e.text();
  EXPECT_NE(e.message.find("the child could write nothing there"), std::string::npos) << e.text();
}

INSTANTIATE_TEST_SUITE_P(
    Denies, DeadWriteTest,
    ::testing::Values(
        DeadWriteCase{"InsideADenyWrite", R"({"filesystem":{"allowWrite":[".","gen/sub"],"denyWrite":["gen"]}})",
                      "lies inside the write-denied"},
        DeadWriteCase{"TheDenyWriteItself", R"({"filesystem":{"allowWrite":[".","gen"],"denyWrite":["gen"]}})",
                      "is the write-denied"},
        DeadWriteCase{"InsideADenyWriteGlobsMatch",
                      R"({"filesystem":{"allowWrite":[".","gen/sub"],"denyWrite":["ge*"]}})",
                      "(filesystem.denyWrite[0])"},
        DeadWriteCase{"AProtectedName", R"({"filesystem":{"allowWrite":[".",".git/hooks"],"denyWrite":[]}})",
                      "protected name \".git/hooks\""},
        DeadWriteCase{"InsideAProtectedName", R"({"filesystem":{"allowWrite":[".",".vscode/x"],"denyWrite":[]}})",
                      "protected name \".vscode\""},
        DeadWriteCase{"InsideTheHooksPathGitRuns",
                      R"({"filesystem":{"allowWrite":[".","tools/hooks/d"],"denyWrite":[]}})",
                      "which stockade never lets a child write"}),
    [](const auto& param) { return std::string(param.param.name); });

TEST_F(DeriveTest, ADenyInsideAWritableTreeLeavesTheTreeWritable) {
  t_.dir("work/gen/sub");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":[".","gen"],"denyWrite":["gen/sub"]}})");
  EXPECT_EQ(r.filesystem().allowWrite, (std::vector<std::string>{work_, work_ + "/gen"}));
  EXPECT_TRUE(r.writable(work_ + "/gen/file"));
  EXPECT_FALSE(r.writable(work_ + "/gen/sub/file"));
}

// core.hooksPath sends git to another hooks directory: the repository that
// holds a writable tree says so in its config; the user's config may say it
// for every repository.
TEST_F(DeriveTest, TheHooksPathOfTheRepositoryHoldingATreeIsProtected) {
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.git/config", "[core]\n\tbare = false\n[include]\n\tpath = more.inc\n");
  t_.file("work/.git/more.inc", "[core]\n  hooksPath = \".husky/_\"  # husky\n");
  t_.dir("work/sub");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["sub"]}})");
  EXPECT_EQ(r.filesystem().mandatoryDenyWrite, std::vector<std::string>{work_ + "/.husky/_"});
  auto whole = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_FALSE(whole.writable(work_ + "/.husky/_/pre-commit"));
  EXPECT_TRUE(whole.writable(work_ + "/.husky-not/x"));
}

// A file git includes into its configuration can name a hooks path or
// core.fsmonitor like the config itself: one in a writable tree is
// protected, as named and as what it resolves to.
TEST_F(DeriveTest, AConfigFileGitIncludesFromAWritableTreeIsProtected) {
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.git/config",
          "[include]\n\tpath = ../team.gitconfig\n\tpath = extra.inc\n[includeIf \"onbranch:x\"]\n\tpath = ../tools/link.cfg\n");
  t_.file("work/tools/real.cfg", "[core]\n");
  ASSERT_EQ(::symlink("real.cfg", (work_ + "/tools/link.cfg").c_str()), 0);
  t_.file("home/.gitconfig", "[include]\n\tpath = ~/.gitconfig.local\n");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  for (const char* path : {"/team.gitconfig", "/.git/extra.inc", "/tools/link.cfg", "/tools/real.cfg"})
    EXPECT_FALSE(r.writable(work_ + path)) << path;
  // The neighbours: the tree's other files; an included file outside every
  // writable tree adds no rule.
  EXPECT_TRUE(r.writable(work_ + "/team.gitconfig.bak"));
  EXPECT_TRUE(r.writable(work_ + "/tools/other.cfg"));
  EXPECT_FALSE(has(r.filesystem().mandatoryDenyWrite, home_ + "/.gitconfig.local"));
  auto sub = deriveOk(R"({"filesystem":{"allowWrite":["tools"]}})");
  EXPECT_TRUE(has(sub.filesystem().mandatoryDenyWrite, work_ + "/tools/real.cfg"));
  EXPECT_FALSE(has(sub.filesystem().mandatoryDenyWrite, work_ + "/team.gitconfig"));
}

// A hook (or the hooks directory, or the config) of the repository holding
// the tree that is a symlink made on the host leads to what git runs: its
// target is protected, dangling or not, and so is each symlink on the way.
TEST_F(DeriveTest, WhatTheHoldingRepositorysLinkedHooksLeadToIsProtected) {
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.git/config", "[core]\n");
  t_.dir("work/.git/hooks");
  t_.file("work/scripts/pre-commit", "#!/bin/sh\n");
  ASSERT_EQ(::symlink("../../scripts/pre-commit", (work_ + "/.git/hooks/pre-commit").c_str()), 0);
  ASSERT_EQ(::symlink("../../scripts/not-yet", (work_ + "/.git/hooks/pre-push").c_str()), 0);
  ASSERT_EQ(::symlink("real-hook", (work_ + "/scripts/chained").c_str()), 0);
  ASSERT_EQ(::symlink("../../scripts/chained", (work_ + "/.git/hooks/post-merge").c_str()), 0);
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  for (const char* path : {"/scripts/pre-commit", "/scripts/not-yet", "/scripts/chained", "/scripts/real-hook"})
    EXPECT_FALSE(r.writable(work_ + path)) << path;
  EXPECT_TRUE(r.writable(work_ + "/scripts/other"));
  EXPECT_FALSE(has(r.filesystem().mandatoryDenyWrite, work_ + "/.git/hooks/pre-commit"))
      << "a name the table protects is not added again";
  // The hooks directory itself a symlink.
  t_.file("other/.git/HEAD", "ref: refs/heads/main\n");
  t_.dir("other/githooks");
  ASSERT_EQ(::symlink("../githooks", (t_ / "other/.git/hooks").c_str()), 0);
  auto o = deriveOk(R"({"filesystem":{"allowWrite":["../other"]}})");
  EXPECT_FALSE(o.writable(t_ / "other/githooks/pre-commit"));
  EXPECT_TRUE(o.writable(t_ / "other/src/main.c"));
}

// A program git runs by itself (core.fsmonitor at every status, a textconv
// at every diff) named by path in a writable tree runs like a hook.
TEST_F(DeriveTest, AProgramTheRepositorysConfigNamesByPathIsProtected) {
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.file("work/.git/config",
          "[core]\n\tfsmonitor = ./tools/fsmonitor.sh\n\tpager = less -R\n\teditor = /usr/bin/vi\n"
          "[diff \"nb\"]\n\ttextconv = tools/nb.py --strip\n"
          "[alias]\n\tup = !./scripts/up.sh --all\n\tst = status\n[credential]\n\thelper = store\n");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  for (const char* path : {"/tools/fsmonitor.sh", "/tools/nb.py", "/scripts/up.sh"})
    EXPECT_FALSE(r.writable(work_ + path)) << path;
  EXPECT_TRUE(r.writable(work_ + "/tools/other.sh"));
  EXPECT_TRUE(r.writable(work_ + "/less"));
  EXPECT_TRUE(r.writable(work_ + "/status"));
  EXPECT_FALSE(has(r.filesystem().mandatoryDenyWrite, "/usr/bin/vi")) << "a program outside every tree adds no rule";
}

TEST_F(DeriveTest, ARelativeHooksPathOfTheUsersConfigIsProtectedAtAnyDepth) {
  t_.file("home/.gitconfig", "[Core]\nHooksPath = ./githooks\n[includeIf \"gitdir:~/x/\"]\n  path = ~/.extra\n");
  t_.file("home/.extra", "[core] hooksPath = ~/shared-hooks\n");
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  EXPECT_TRUE(std::find(r.filesystem().protectedNames.begin(), r.filesystem().protectedNames.end(),
                        ProtectedName{"githooks", false}) != r.filesystem().protectedNames.end());
  EXPECT_TRUE(has(r.filesystem().mandatoryDenyWrite, home_ + "/shared-hooks"));
  EXPECT_FALSE(r.writable(work_ + "/deep/repo/githooks/pre-commit"));
}

TEST(GitConfigTest, HooksPathsAreReadAsGitReadsTheSyntax) {
  struct Case {
    const char* text;
    std::vector<std::string> values;
  };
  const Case cases[] = {
      {"[core]\nhooksPath = a\n", {"a"}},
      {"[core]\n\thookspath=\"spaced name\" # comment\n", {"spaced name"}},
      {"[CORE] HOOKSPATH = b ; comment\n", {"b"}},
      {"[core]\nhooksPath = one\\\n two\n", {"one two"}},
      {"[core]\nhooksPath = \"a\\\"b\"\n", {"a\"b"}},
      {"[core]\nhooksPath = x\n[core]\nhooksPath = y\n", {"x", "y"}},
      {"[other]\nhooksPath = no\n[core \"sub\"]\nhooksPath = sub\n", {"sub"}},
      {"[core\nhooksPath = malformed\n", {}},
      {"hooksPath = outside\n", {}},
      {"[core]\nhooksPath\n", {""}},
      {"[core]\nhooksPath = \"unterminated\n", {"unterminated"}},
  };
  for (const auto& c : cases) EXPECT_EQ(policy::parseHooksPaths(c.text), c.values) << c.text;
  std::vector<std::string> includes;
  policy::parseHooksPaths("[include]\npath = a.inc\n[includeIf \"onbranch:x\"]\npath = b.inc\n", &includes);
  EXPECT_EQ(includes, (std::vector<std::string>{"a.inc", "b.inc"}));
  std::vector<std::string> programs;
  policy::parseHooksPaths(
      "[core]\nfsmonitor = true\nsshCommand = \"./bin/ssh -v\"\n[filter \"x\"]\nclean = /opt/c %f\n"
      "[pager]\nlog = ./p\n[alias]\na = log\nb = \"!sh/run.sh\"\n[other]\ncmd = ./no\n",
      nullptr, &programs);
  EXPECT_EQ(programs, (std::vector<std::string>{"./bin/ssh", "/opt/c", "./p", "sh/run.sh"}));
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
  // The SHA-256 of the canonical JSON, as OpenSSL computes it (the library uses libmd's).
  const std::string text = a.toJson();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  ::SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) hex += "0123456789abcdef"[byte >> 4], hex += "0123456789abcdef"[byte & 0xf];
  EXPECT_EQ(a.fingerprint(), hex);
}

TEST_F(DeriveTest, CanonicalJsonHasEveryAxisAndSortedKeys) {
  auto r = deriveOk(R"({"filesystem":{"allowWrite":["."]}})");
  auto j = nlohmann::json::parse(r.toJson());
  for (const char* key : {"filesystem", "network", "env", "limits"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.dump(), r.toJson()) << "re-serialising must not change the bytes";
}

}  // namespace
}  // namespace stockade

namespace stockade::policy {
namespace {

// deepestContaining() looks up each ancestor in the sorted list instead of
// testing every entry: it must give exactly the longest isWithin() match,
// for odd entries too ("/", "", relative ones, trailing and doubled slashes,
// prefixes that are not components).
TEST(DeepestContainingTest, GivesTheLongestEntryIsWithinAccepts) {
  std::vector<std::string> entries = {"/",    "",       "/a",     "/a/b",  "/ab",  "/a/b/c", "/a/",
                                      "/a//", "/x/y/z", "/x/y/z/", "/x",   "a",    "a/b",    "/a/b/cd"};
  std::vector<std::string> paths = {"/",      "/a",   "/a/b", "/a/b/c",    "/a/b/c/d", "/ab/c", "/abc",    "/a//b",
                                    "/x/y/z/w", "/x/y", "/q",   "/a/b/cd/e", "/a/",      "//a",   "/x/y/z/"};
  std::sort(entries.begin(), entries.end());
  for (std::size_t mask = 0; mask < (1u << 8); ++mask) {  // subsets of the first entries, and all of them
    std::vector<std::string> list;
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (i >= 8 || (mask >> i & 1)) list.push_back(entries[i]);
    for (const auto& p : paths) {
      const std::string* expected = nullptr;
      for (const auto& e : list)
        if (isWithin(p, e) && (!expected || e.size() > expected->size())) expected = &e;
      const std::string* got = deepestContaining(list, p);
      ASSERT_EQ(got != nullptr, expected != nullptr) << "path \"" << p << "\" subset " << mask;
      if (got) {
        EXPECT_EQ(*got, *expected) << "path \"" << p << "\" subset " << mask;
      }
    }
  }
}

}  // namespace
}  // namespace stockade::policy
