// checkCoverage() without spawning: the real planner's plan for real rules
// (derived over a real tree) covers each entry or names it, and a plan
// damaged on purpose is caught naming the entry it no longer honours.
#include "platform/linux/coverage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "platform/linux/sandbox_plan.h"
#include "policy/rules_builder.h"
#include "tests/support/temp_dir.h"

namespace stockade::platform {
namespace {

using Source = MountView::Source;
using Kind = MountPlan::Op::Kind;

enum class Outcome { kCovered, kRefused, kDegraded };

// One row: a policy (placeholders: HOME, WS the workspace and cwd, FILE a
// file outside it, ROOTLINK a symlink to "/", PRIVTMP a host directory under
// /tmp), what the check must say, and what the sandbox must show at PROBE.
struct Case {
  const char* name;
  std::vector<std::string> denyRead, allowRead, allowWrite, denyWrite;
  bool systemPaths;  // filesystem.allowWriteSystemPaths
  Outcome outcome;
  std::string entry;  // kRefused/kDegraded: a gap's entry contains this
  std::string probe;  // a path to look at in the plan's view
  Source source;
  bool writable;  // a write there succeeds: by the child's own rights, or performed by the write broker
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CoverageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = t_.dir("home");
    t_.file("home/.ssh/id_ed25519", "KEY");
    ws_ = t_.dir("ws");
    t_.file("ws/secret", "S");
    t_.file("ws/sub/code.c", "C");
    t_.file("ws/.bashrc", "RC");
    file_ = t_.file("data/report.txt", "R");
    rootLink_ = t_.symlink("/", "rootlink");
    privTmp_ = "/tmp/stockade-coverage-" + std::to_string(::getpid());
    std::filesystem::create_directories(privTmp_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(privTmp_, ec);
  }

  // The placeholders replaced in one pass: a value (a temporary directory's
  // random name) may itself hold a key ("...WS..."), which is left as it is.
  std::string fill(const std::string& s) const {
    const std::pair<std::string, std::string> keys[] = {
        {"ROOTLINK", rootLink_}, {"PRIVTMP", privTmp_}, {"HOME", home_}, {"FILE", file_}, {"WS", ws_}};
    std::string out;
    for (std::size_t at = 0; at < s.size();) {
      const auto* key = std::find_if(std::begin(keys), std::end(keys),
                                     [&](const auto& k) { return s.compare(at, k.first.size(), k.first) == 0; });
      if (key == std::end(keys)) {
        out += s[at++];
        continue;
      }
      out += key->second;
      at += key->first.size();
    }
    return out;
  }
  nlohmann::json list(const std::vector<std::string>& in) const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : in) out.push_back(fill(s));
    return out;
  }
  DerivedRules rules(const nlohmann::json& policy) const {
    auto r = derive(SandboxPolicy::fromJson(policy.dump()), {.home = home_, .cwd = ws_, .tmpdir = "/tmp"});
    if (auto* e = std::get_if<PolicyError>(&r)) throw std::runtime_error(e->text());
    return std::get<DerivedRules>(std::move(r));
  }
  DerivedRules rules(const Case& c) const {
    return rules({{"filesystem",
                   {{"denyRead", list(c.denyRead)},
                    {"allowRead", list(c.allowRead)},
                    {"allowWrite", list(c.allowWrite)},
                    {"denyWrite", list(c.denyWrite)},
                    {"allowWriteSystemPaths", c.systemPaths}}},
                  {"network", {{"allowedDomains", nlohmann::json::array()}, {"allowUnixSockets", nlohmann::json::array()}}}});
  }
  // Every filesystem field spelt out: what the workspace tests vary.
  DerivedRules workspaceRules(nlohmann::json denyRead, nlohmann::json allowWrite, bool systemPaths = false) const {
    return rules({{"filesystem",
                   {{"denyRead", std::move(denyRead)},
                    {"allowRead", nlohmann::json::array()},
                    {"allowWrite", std::move(allowWrite)},
                    {"denyWrite", nlohmann::json::array()},
                    {"allowWriteSystemPaths", systemPaths}}}});
  }
  // A fresh check of `plan` (possibly changed by the test) against `r`.
  static EnforcementPlan enforcement(const SandboxPlan& plan, std::optional<std::uint16_t> proxy = {}) {
    const EnforcementReport& r = plan.report;
    return {plan.mounts, plan.landlock,  plan.seccomp,      proxy,          plan.limits,
            r.pidsLimit, r.memoryLimit,  r.cpuLimit,        plan.cgroupLimits, r.degradations,
            plan.writeRules ? &*plan.writeRules : nullptr};
  }
  // Whether a write at `path` succeeds in the plan's sandbox: the child's own
  // right, or the write broker's decision in a brokered tree.
  static bool writes(const SandboxPlan& plan, const std::string& path) {
    const MountView v = viewAt(plan.mounts, path);
    if (v.writable) return true;
    if (!v.brokered || !plan.writeRules) return false;
    return plan.writeRules->decide({{policy::Effect::kModify, path, policy::ObjectKind::kOther}}).action ==
           policy::WriteVerdict::Action::kPerform;
  }
  static Coverage check(const DerivedRules& r, const SandboxPlan& plan, std::optional<std::uint16_t> proxy = {}) {
    return checkCoverage(r, enforcement(plan, proxy));
  }
  static bool names(const std::vector<CoverageGap>& gaps, const std::string& entry) {
    return std::any_of(gaps.begin(), gaps.end(), [&](const CoverageGap& g) { return g.entry.find(entry) != std::string::npos; });
  }
  static std::string texts(const std::vector<CoverageGap>& gaps) {
    std::string out;
    for (const auto& g : gaps) out += g.text() + "\n";
    return out;
  }
  static void dropOp(MountPlan& plan, Kind kind, const std::string& path) {
    auto it = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const auto& op) { return op.kind == kind && op.path == path; });
    ASSERT_NE(it, plan.ops.end()) << mountOpName(kind) << " " << path;
    plan.ops.erase(it);
  }

  testing::TempDir t_;
  std::string home_, ws_, file_, rootLink_, privTmp_;
};

class CoverageTableTest : public CoverageTest, public ::testing::WithParamInterface<Case> {};

TEST_P(CoverageTableTest, EachEntryIsCoveredOrNamed) {
  const Case& c = GetParam();
  const DerivedRules r = rules(c);
  const SandboxPlan plan = planSandbox(r, std::nullopt);
  const Coverage again = check(r, plan);  // the check is pure: same plan, same answer
  EXPECT_EQ(texts(again.uncovered), texts(plan.uncovered));
  switch (c.outcome) {
    case Outcome::kCovered:
      EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
      break;
    case Outcome::kRefused:
      EXPECT_TRUE(names(plan.uncovered, fill(c.entry))) << c.entry << " not in:\n" << texts(plan.uncovered);
      break;
    case Outcome::kDegraded:
      EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
      EXPECT_TRUE(names(again.degraded, fill(c.entry))) << c.entry << " not in:\n" << texts(again.degraded);
      break;
  }
  if (c.outcome == Outcome::kRefused) return;
  const MountView v = viewAt(plan.mounts, fill(c.probe));
  EXPECT_EQ(static_cast<int>(v.source), static_cast<int>(c.source)) << fill(c.probe);
  EXPECT_EQ(writes(plan, fill(c.probe)), c.writable) << fill(c.probe);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKindOfPath, CoverageTableTest,
    ::testing::Values(
        // As denyRead.
        Case{"DenyReadRoot", {"/"}, {"WS"}, {"WS"}, {}, false, Outcome::kCovered, "", "/etc/passwd", Source::kEmpty, false},
        Case{"DenyReadRootKeepsTheCarveOutWritable", {"/"}, {"WS"}, {"WS"}, {}, false, Outcome::kCovered, "", "WS/sub",
             Source::kHost, true},
        Case{"DenyReadRootLeavesTheSandboxsOwnProc", {"/"}, {"WS"}, {"WS"}, {}, false, Outcome::kCovered, "",
             "/proc/self", Source::kProc, true},
        Case{"DenyReadProc", {"/proc"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "/proc/1/environ", Source::kEmpty, false},
        Case{"DenyReadDevHidesTheDefaultWritePaths", {"/dev"}, {}, {"WS"}, {}, false, Outcome::kRefused,
             "filesystem.defaultWrite \"/dev/null\"", "", Source::kEmpty, false},
        Case{"DenyReadSys", {"/sys"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "/sys/kernel", Source::kEmpty, false},
        Case{"DenyReadTmpIsThePrivateTmp", {"/tmp"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "/tmp/x",
             Source::kPrivateTmp, true},
        Case{"DenyReadTheCwd", {"."}, {}, {}, {}, false, Outcome::kCovered, "", "WS/secret", Source::kEmpty, false},
        Case{"DenyReadHome", {"~"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "HOME/.ssh/id_ed25519", Source::kEmpty, false},
        Case{"DenyReadASymlinkToTheRoot", {"ROOTLINK"}, {"WS"}, {"WS"}, {}, false, Outcome::kCovered, "", "/usr",
             Source::kEmpty, false},
        Case{"DenyReadAFile", {"FILE"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "FILE", Source::kEmpty, false},
        Case{"DenyReadAGlobMatchingATopLevelDirectory", {"/sy?"}, {}, {"WS"}, {}, false, Outcome::kCovered, "",
             "/sys/fs", Source::kEmpty, false},
        Case{"DenyReadAGlobMatchingTmp", {"/t?p"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "/tmp",
             Source::kPrivateTmp, true},
        Case{"DenyReadUnderABindSource", {"WS/secret"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "WS/secret",
             Source::kEmpty, false},
        Case{"DenyReadUnderThePrivateTmp", {"PRIVTMP"}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "PRIVTMP",
             Source::kPrivateTmp, true},
        // As allowWrite.
        Case{"AllowWriteRoot", {}, {}, {"/"}, {}, true, Outcome::kCovered, "", "/etc", Source::kHost, true},
        Case{"AllowWriteProcIsNotBindable", {}, {}, {"/proc"}, {}, true, Outcome::kRefused,
             "filesystem.allowWrite \"/proc\"", "", Source::kProc, false},
        Case{"AllowWriteDevIsNotBindable", {}, {}, {"/dev"}, {}, true, Outcome::kRefused, "filesystem.allowWrite \"/dev\"",
             "", Source::kDev, false},
        Case{"AllowWriteSys", {}, {}, {"/sys"}, {}, true, Outcome::kCovered, "", "/sys/fs", Source::kHost, true},
        Case{"AllowWriteTmpIsTheHostsTmp", {}, {}, {"/tmp"}, {}, false, Outcome::kCovered, "", "/tmp/x", Source::kHost,
             true},
        Case{"AllowWriteASymlinkToTheRoot", {}, {}, {"ROOTLINK"}, {}, true, Outcome::kCovered, "", "/usr", Source::kHost,
             true},
        Case{"AllowWriteTheCwd", {}, {}, {"."}, {}, false, Outcome::kCovered, "", "WS/sub", Source::kHost, true},
        Case{"AllowWriteHome", {}, {}, {"~"}, {}, true, Outcome::kCovered, "", "HOME/notes", Source::kHost, true},
        Case{"AllowWriteAFile", {}, {}, {"FILE"}, {}, false, Outcome::kCovered, "", "FILE", Source::kHost, true},
        Case{"AllowWriteUnderABindSource", {}, {}, {"WS", "WS/sub"}, {}, false, Outcome::kCovered, "", "WS/sub/code.c",
             Source::kHost, true},
        Case{"AllowWriteUnderThePrivateTmp", {}, {}, {"PRIVTMP"}, {}, false, Outcome::kCovered, "", "PRIVTMP/new",
             Source::kHost, true},
        Case{"AllowWriteInsideAReadDenyCarvedBack", {"/"}, {"/usr", "WS"}, {"WS/sub"}, {}, false, Outcome::kCovered, "",
             "WS/sub", Source::kHost, true},
        // A writable tree the host does not have: held by another writable
        // tree, or by the nearest directory the host has, brokered for it
        // (the broker decides each mkdir on the way); with none the sandbox
        // shows of the host's, nothing could make it.
        Case{"AllowWriteAMissingTreeIsHeldByTheNearestHostDirectory", {}, {}, {"WS", "HOME/missing/deeper"}, {}, false,
             Outcome::kCovered, "", "HOME/missing/deeper/f", Source::kHost, true},
        Case{"AllowWriteAMissingTreesHolderStaysReadOnlyBesideIt", {}, {}, {"WS", "HOME/missing/deeper"}, {}, false,
             Outcome::kCovered, "", "HOME/notes", Source::kHost, false},
        Case{"AllowWriteAMissingTreeNothingHolds", {}, {}, {"WS", "/stockade-coverage-missing/x"}, {}, false,
             Outcome::kRefused, "filesystem.allowWrite \"/stockade-coverage-missing/x\"", "", Source::kHost, false},
        Case{"AllowWriteAMissingTreeInAMaskIsNotHeld", {"HOME"}, {"HOME/missing"}, {"WS", "HOME/missing/x"}, {}, false,
             Outcome::kRefused, "filesystem.allowWrite \"HOME/missing/x\"", "", Source::kEmpty, false},
        Case{"AllowWriteAMissingTreeInsideAWritableOne", {}, {}, {"WS", "WS/new/deeper"}, {}, false, Outcome::kCovered,
             "", "WS/new/deeper/f", Source::kHost, true},
        Case{"AllowWriteAMissingTreeUnderThePrivateTmp", {}, {}, {"WS", "PRIVTMP/missing"}, {}, false,
             Outcome::kCovered, "", "PRIVTMP/missing/f", Source::kPrivateTmp, true},
        // As denyWrite.
        Case{"DenyWriteAFileInTheWorkspace", {}, {}, {"WS"}, {"WS/secret"}, false, Outcome::kCovered, "", "WS/secret",
             Source::kHost, false},
        Case{"DenyWriteADirectoryInTheWorkspace", {}, {}, {"WS"}, {"WS/sub"}, false, Outcome::kCovered, "",
             "WS/sub/code.c", Source::kHost, false},
        Case{"DenyWriteAMissingPathIsTheBrokers", {}, {}, {"WS"}, {"WS/missing"}, false, Outcome::kCovered, "",
             "WS/missing/new", Source::kHost, false},
        Case{"AProtectedNameIsTheBrokers", {}, {}, {"WS"}, {}, false, Outcome::kCovered, "", "WS/sub/.git/hooks/x",
             Source::kHost, false},
        // Each denied inside a writable tree around it (one that is the
        // write-denied tree itself is refused when the rules are derived).
        Case{"DenyWriteTheCwd", {}, {}, {"WS/.."}, {"."}, true, Outcome::kCovered, "", "WS/sub", Source::kHost, false},
        // The private /tmp, and the host's stays unseen.
        Case{"DenyWriteTmp", {}, {}, {"WS"}, {"/tmp"}, false, Outcome::kCovered, "", "/tmp/x", Source::kPrivateTmp,
             true},
        Case{"DenyWriteHome", {}, {}, {"HOME/.."}, {"~"}, true, Outcome::kCovered, "", "HOME/notes", Source::kHost,
             false},
        Case{"DenyWriteUnderThePrivateTmp", {}, {}, {"WS"}, {"PRIVTMP"}, false, Outcome::kCovered, "", "PRIVTMP",
             Source::kPrivateTmp, true}));

// --- plans damaged on purpose -------------------------------------------------

TEST_F(CoverageTest, AMissingMaskIsNamed) {
  const DerivedRules r = rules({{"filesystem", {{"denyRead", {home_ + "/.ssh"}}, {"allowWrite", {ws_}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  dropOp(plan.mounts, Kind::kMask, home_ + "/.ssh");
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyRead \"" + home_ + "/.ssh\"")) << texts(c.uncovered);
}

TEST_F(CoverageTest, AHostRootUnderADeniedRootIsNamed) {
  const DerivedRules r = rules({{"filesystem", {{"denyRead", {"/"}}, {"allowRead", {ws_}}, {"allowWrite", {ws_}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_EQ(plan.mounts.root, MountPlan::Root::kEmpty);
  plan.mounts.root = MountPlan::Root::kHostReadOnly;  // what stockade did before: "/" silently dropped
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyRead \"/\"")) << texts(c.uncovered);
}

// The host's mount table shows a denied directory a second time: a bind of
// it (or of a directory in it) elsewhere, or a second mount of a directory
// holding it. Each other name is found, and the check requires it hidden.
TEST_F(CoverageTest, ADeniedDirectoryTheHostMountsASecondTimeIsNamedAtItsOtherName) {
  const DerivedRules r = rules({{"filesystem", {{"denyRead", {home_ + "/.ssh"}}, {"allowWrite", {ws_}}}}});
  const std::string text = "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                           "21 20 8:1 " + home_ + "/.ssh /mnt/keys rw - ext4 /dev/sda1 rw\n"   // the denied tree again
                           "22 20 8:1 " + home_ + "/.ssh/sub /mnt/sub rw - ext4 /dev/sda1 rw\n"  // a part of it
                           "23 20 8:1 / /host rw - ext4 /dev/sda1 rw\n"                           // "/" again
                           "24 20 8:2 " + home_ + "/.ssh /mnt/other-disk rw - ext4 /dev/sda2 rw\n"  // another filesystem
                           "25 20 8:1 /srv /srv rw - ext4 /dev/sda1 rw\n";                         // an unrelated bind
  const auto found = deniedElsewhere(r, parseMountInfo(text));
  std::vector<std::string> otherNames;
  for (const auto& o : found) {
    EXPECT_EQ(o.denied, home_ + "/.ssh");
    otherNames.push_back(o.path);
  }
  EXPECT_EQ(otherNames, (std::vector<std::string>{"/mnt/keys", "/mnt/sub", "/host" + home_ + "/.ssh"}));

  SandboxPlan plan = planSandbox(r, std::nullopt);
  plan.mounts.deniedElsewhere = found;
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyRead \"" + home_ + "/.ssh\"")) << texts(c.uncovered);
  EXPECT_NE(texts(c.uncovered).find("the host shows it (or a directory in it) at \"/mnt/keys\" too"), std::string::npos)
      << texts(c.uncovered);
  // The neighbour: every other name denied too, the plan is covered.
  const DerivedRules all = rules({{"filesystem",
                                   {{"denyRead", {home_ + "/.ssh", "/mnt/keys", "/mnt/sub", "/host" + home_ + "/.ssh"}},
                                    {"allowWrite", {ws_}}}}});
  SandboxPlan covered = planSandbox(all, std::nullopt);
  covered.mounts.deniedElsewhere = deniedElsewhere(all, parseMountInfo(text));
  EXPECT_TRUE(check(all, covered).uncovered.empty()) << texts(check(all, covered).uncovered);
}

TEST_F(CoverageTest, AMaskInsideACarveOutIsRequired) {
  const DerivedRules r = rules({{"filesystem",
                                 {{"denyRead", {home_, home_ + "/.ssh/id_ed25519"}},
                                  {"allowRead", {home_ + "/.ssh"}},
                                  {"allowWrite", {ws_}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_EQ(viewAt(plan.mounts, home_ + "/.ssh/known").source, Source::kHost);
  dropOp(plan.mounts, Kind::kMask, home_ + "/.ssh/id_ed25519");
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyRead \"" + home_ + "/.ssh/id_ed25519\"")) << texts(c.uncovered);
}

TEST_F(CoverageTest, AnAllowReadEqualToADenyReadStaysDenied) {
  // A tie denies (rules.h): the carve-out must not be bound over the mask.
  const DerivedRules r = rules({{"filesystem", {{"denyRead", {home_}}, {"allowRead", {home_}}, {"allowWrite", {ws_}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_EQ(viewAt(plan.mounts, home_ + "/.ssh").source, Source::kEmpty);
}

TEST_F(CoverageTest, AMissingBrokeredTreeOrBrokerIsNamed) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}, {"denyWrite", {ws_ + "/secret"}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  ASSERT_TRUE(plan.writeRules) << "this kernel cannot run the write broker";
  EXPECT_EQ(plan.mounts.brokeredTrees(), std::vector<std::string>{ws_});
  // Nothing is bound read-only inside the tree: the broker decides by path.
  EXPECT_TRUE(std::none_of(plan.mounts.ops.begin(), plan.mounts.ops.end(),
                           [&](const MountPlan::Op& op) { return op.kind == Kind::kReadOnly && op.path.starts_with(ws_); }));
  SandboxPlan noTree = plan;
  dropOp(noTree.mounts, Kind::kBrokered, ws_);
  EXPECT_TRUE(names(check(r, noTree).uncovered, "filesystem.allowWrite \"" + ws_ + "\""));
  SandboxPlan noBroker = plan;
  noBroker.writeRules.reset();  // what a kernel without SECCOMP_ADDFD_FLAG_SEND gets
  auto c = check(r, noBroker);
  EXPECT_TRUE(names(c.uncovered, "filesystem.allowWrite \"" + ws_ + "\"")) << texts(c.uncovered);
  EXPECT_NE(texts(c.uncovered).find("no write broker can run"), std::string::npos) << texts(c.uncovered);
  SandboxPlan otherTree = plan;
  otherTree.writeRules.emplace(r, std::vector<std::string>{t_.dir("elsewhere")}, plan.mounts.ownTrees());
  EXPECT_TRUE(names(check(r, otherTree).uncovered, "filesystem.allowWrite \"" + ws_ + "\""));
}

TEST_F(CoverageTest, ABrokerThatWouldPerformADeniedWriteIsNamed) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}, {"denyWrite", {ws_ + "/secret"}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  ASSERT_TRUE(plan.writeRules) << "this kernel cannot run the write broker";
  // A broker compiled from weaker rules: no denyWrite, no protected names.
  RulesBuilder weaker;
  weaker.fs = r.filesystem();
  weaker.fs.denyWrite.clear();
  weaker.fs.protectedNames.clear();
  SandboxPlan damaged = plan;
  damaged.writeRules.emplace(std::move(weaker).build(), plan.mounts.brokeredTrees(), plan.mounts.ownTrees());
  auto c = check(r, damaged);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyWrite \"" + ws_ + "/secret\"")) << texts(c.uncovered);
  EXPECT_TRUE(names(c.uncovered, "filesystem.protectedNames \".git/hooks\"")) << texts(c.uncovered);
  EXPECT_TRUE(names(c.uncovered, "filesystem.protectedNames \".bashrc\"")) << texts(c.uncovered);
}

TEST_F(CoverageTest, AWritablePathTheHostMountsReadOnlyIsNamed) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}, {"denyWrite", nlohmann::json::array()}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_TRUE(plan.mounts.readOnlyHost.empty()) << "this test's own directory is read-only on the host";
  plan.mounts.readOnlyHost.push_back(ws_);  // what readOnlyHostMounts() records for a read-only host mount
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.allowWrite \"" + ws_ + "\"")) << texts(c.uncovered);
  EXPECT_NE(texts(c.uncovered).find("\" read-only, so the child could not write it either"), std::string::npos) << texts(c.uncovered);
  // A read-only mount beneath the entry: the rest of it is writable, so a degradation names the mount.
  SandboxPlan inside = planSandbox(r, std::nullopt);
  inside.mounts.readOnlyHost.push_back(ws_ + "/sub");
  c = check(r, inside);
  EXPECT_TRUE(c.uncovered.empty()) << texts(c.uncovered);
  EXPECT_NE(texts(c.degraded).find("filesystem.allowWrite \"" + ws_ + "\": the host mounts \"" + ws_ +
                                   "/sub\" read-only inside it"),
            std::string::npos)
      << texts(c.degraded);
}

// vfat, NTFS and SMB give each entry a second name (8.3: BASHRC~1 opens
// .bashrc): a brokered tree there cannot hold its protected names by name.
TEST_F(CoverageTest, ABrokeredTreeOnAFilesystemWithShortNamesIsRefusedNamingTheMount) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}, {"denyWrite", nlohmann::json::array()}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_TRUE(plan.mounts.aliasingHost.empty()) << "this test's own directory is on vfat, NTFS or SMB";
  plan.mounts.aliasingHost.push_back({ws_ + "/usb", "vfat"});  // what readHostMounts() records for one beneath the tree
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.allowWrite \"" + ws_ + "\"")) << texts(c.uncovered);
  EXPECT_NE(texts(c.uncovered).find("as vfat, whose entries also answer to a short name"), std::string::npos)
      << texts(c.uncovered);
  // The mount table's side: the mount holding a tree and those beneath it, of those types only.
  auto entry = [](std::string point, std::string type) {
    platform::MountEntry m;
    m.mountPoint = std::move(point);
    m.fsType = std::move(type);
    return m;
  };
  const std::vector<platform::MountEntry> table = {entry("/", "ext4"), entry("/srv", "cifs"), entry("/srv/w/usb", "vfat"),
                                                   entry("/mnt", "vfat"), entry("/home", "ext4")};
  auto found = platform::aliasingMounts({"/srv/w", "/home/u/w"}, table);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, "/srv");
  EXPECT_EQ(found[0].fsType, "cifs");
  EXPECT_EQ(found[1].path, "/srv/w/usb");
  EXPECT_TRUE(platform::aliasingMounts({"/home/u/w"}, table).empty());
}

TEST_F(CoverageTest, LandlockGrantsExactlyTheSandboxsOwnWritablePathsAndNoBrokeredTree) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  if (plan.landlock.abi == 0) GTEST_SKIP() << "Landlock unavailable: nothing to check";
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_EQ(std::count(plan.landlock.writable.begin(), plan.landlock.writable.end(), ws_), 0);
  SandboxPlan narrow = plan;
  std::erase(narrow.landlock.writable, "/dev/null");
  EXPECT_TRUE(names(check(r, narrow).uncovered, "filesystem.defaultWrite \"/dev/null\"")) << texts(check(r, narrow).uncovered);
  SandboxPlan brokered = plan;  // the child's own right in a brokered tree: the kernel would not be the backstop
  brokered.landlock.writable.push_back(ws_);
  EXPECT_TRUE(names(check(r, brokered).uncovered, "landlock \"" + ws_ + "\"")) << texts(check(r, brokered).uncovered);
  SandboxPlan wide = plan;
  wide.landlock.writable.push_back("/etc");
  EXPECT_TRUE(names(check(r, wide).uncovered, "landlock \"/etc\""));
}

TEST_F(CoverageTest, NetworkRulesMustBeInstalled) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}},
                                {"network", {{"allowedDomains", {"example.com"}}, {"allowUnixSockets", nlohmann::json::array()}}}});
  SandboxPlan plan = planSandbox(r, 3128);
  EXPECT_TRUE(check(r, plan, 3128).uncovered.empty()) << texts(check(r, plan, 3128).uncovered);
  EXPECT_TRUE(names(check(r, plan, std::nullopt).uncovered, "network.allowedDomains"));
  SandboxPlan unix = plan;
  unix.seccomp.allowUnixSockets = true;
  EXPECT_TRUE(names(check(r, unix, 3128).uncovered, "network.allowUnixSockets"));
  if (plan.landlock.abi >= 4) {
    SandboxPlan otherPort = plan;
    otherPort.landlock.connectPort = 80;
    EXPECT_TRUE(names(check(r, otherPort, 3128).uncovered, "network.allowedDomains"));
    SandboxPlan binding = plan;
    binding.landlock.allowTcpBind = true;
    EXPECT_TRUE(names(check(r, binding, 3128).uncovered, "network.allowLocalBinding"));
  }
}

TEST_F(CoverageTest, UnixSocketsAllowedAsAWholeAreADegradation) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}},
                                {"network", {{"allowUnixSockets", {ws_ + "/s.sock"}}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_TRUE(names(check(r, plan).degraded, "network.allowUnixSockets"));
}

// Every limit at once; each case below changes what enforces them.
TEST_F(CoverageTest, LimitsMustBeInstalled) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}},
                                {"limits",
                                 {{"memoryBytes", 1 << 30}, {"pids", 10}, {"cpuSeconds", 5}, {"fileSizeBytes", 1 << 20}}}});
  const SandboxPlan plan = planSandbox(r, std::nullopt);
  EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_TRUE(check(r, plan).uncovered.empty()) << texts(check(r, plan).uncovered);

  // A sandbox cgroup: made with each limit's value.
  EnforcementPlan cgroup = enforcement(plan);
  cgroup.pids = cgroup.memory = cgroup.cpu = LimitMechanism::kCgroup2;
  cgroup.cgroup = {.pids = 10, .memoryBytes = 1 << 30, .cpuSeconds = 5};
  cgroup.limits.addressSpace = cgroup.limits.cpuSeconds = 0;
  cgroup.reported = {};
  EXPECT_TRUE(checkCoverage(r, cgroup).uncovered.empty()) << texts(checkCoverage(r, cgroup).uncovered);
  EnforcementPlan wrongValues = cgroup;
  wrongValues.cgroup = {.pids = 0, .memoryBytes = 1u << 31, .cpuSeconds = 50};
  auto c = checkCoverage(r, wrongValues);
  for (const char* limit : {"limits.pids", "limits.memoryBytes", "limits.cpuSeconds"})
    EXPECT_TRUE(names(c.uncovered, limit)) << limit << "\n" << texts(c.uncovered);

  // No usable cgroup: the rlimit fallbacks, and pids not enforced, each a reported degradation.
  const std::vector<std::string> said = {"limits.pids: not enforced: no pids controller",
                                         "limits.memoryBytes: enforced per process only, as RLIMIT_AS",
                                         "limits.cpuSeconds: enforced per process only, as RLIMIT_CPU"};
  EnforcementPlan fallback = enforcement(plan);
  fallback.pids = LimitMechanism::kNone;
  fallback.memory = fallback.cpu = LimitMechanism::kRlimit;
  fallback.cgroup = {};
  fallback.limits.addressSpace = 1 << 30;
  fallback.limits.cpuSeconds = 5;
  fallback.reported = said;
  EXPECT_TRUE(checkCoverage(r, fallback).uncovered.empty()) << texts(checkCoverage(r, fallback).uncovered);
  EnforcementPlan unsaid = fallback;
  unsaid.reported = {};
  c = checkCoverage(r, unsaid);
  for (const char* limit : {"limits.pids", "limits.memoryBytes", "limits.cpuSeconds"})
    EXPECT_TRUE(names(c.uncovered, limit)) << limit << "\n" << texts(c.uncovered);
  // A degradation of another field does not stand for this one.
  const std::vector<std::string> other = {"limits.pidsx: not enforced", "limits.memoryBytes"};
  unsaid.reported = other;
  EXPECT_TRUE(names(checkCoverage(r, unsaid).uncovered, "limits.pids"));
  EXPECT_TRUE(names(checkCoverage(r, unsaid).uncovered, "limits.memoryBytes"));

  EnforcementPlan noRlimits = fallback;
  noRlimits.limits.addressSpace = noRlimits.limits.cpuSeconds = noRlimits.limits.fileSizeBytes = 0;
  noRlimits.seccomp.limitFileSize = false;
  c = checkCoverage(r, noRlimits);
  for (const char* limit : {"limits.memoryBytes", "limits.cpuSeconds", "limits.fileSizeBytes"})
    EXPECT_TRUE(names(c.uncovered, limit)) << limit << "\n" << texts(c.uncovered);
  EnforcementPlan noTrap = fallback;
  noTrap.seccomp.limitFileSize = false;  // RLIMIT_FSIZE alone: fallocate(FALLOC_FL_KEEP_SIZE) passes it
  EXPECT_TRUE(names(checkCoverage(r, noTrap).uncovered, "limits.fileSizeBytes"));
  EnforcementPlan pidsByRlimit = fallback;  // no rlimit bounds a sandbox's processes
  pidsByRlimit.pids = LimitMechanism::kRlimit;
  EXPECT_TRUE(names(checkCoverage(r, pidsByRlimit).uncovered, "limits.pids"));
}

TEST_F(CoverageTest, APidsLimitWithoutACgroupIsLeftToThePlannersDegradation) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}}, {"limits", {{"pids", 10}}}});
  SandboxPlan plan = planSandbox(r, std::nullopt);
  EXPECT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  if (plan.report.pidsLimit == LimitMechanism::kNone) {
    EXPECT_TRUE(std::any_of(plan.report.degradations.begin(), plan.report.degradations.end(),
                            [](const std::string& d) { return d.starts_with("limits.pids: not enforced"); }));
  }
}

TEST_F(CoverageTest, EveryTmpfsIsSizedWithinTheMemoryLimit) {
  const DerivedRules limited = rules({{"filesystem", {{"allowWrite", {ws_}}}}, {"limits", {{"memoryBytes", 64 << 20}}}});
  const SandboxPlan plan = planSandbox(limited, std::nullopt);
  EXPECT_TRUE(check(limited, plan).uncovered.empty()) << texts(check(limited, plan).uncovered);
  SandboxPlan unsized = plan;
  unsized.mounts.tmpOptions = "mode=1777";
  EXPECT_TRUE(names(check(limited, unsized).uncovered, "limits.memoryBytes")) << texts(check(limited, unsized).uncovered);
  SandboxPlan larger = plan;
  larger.mounts.tmpOptions = "mode=1777,size=" + std::to_string(128 << 20);
  EXPECT_TRUE(names(check(limited, larger).uncovered, "limits.memoryBytes"));
  SandboxPlan unreadable = plan;
  unreadable.mounts.tmpOptions = "mode=1777,size=64m";  // a suffix the check cannot compare: not proven within
  EXPECT_TRUE(names(check(limited, unreadable).uncovered, "limits.memoryBytes"));

  const DerivedRules unlimited = rules({{"filesystem", {{"allowWrite", {ws_}}}}, {"limits", {{"memoryBytes", 0}}}});
  SandboxPlan host = planSandbox(unlimited, std::nullopt);
  EXPECT_TRUE(host.uncovered.empty()) << texts(host.uncovered);
  host.mounts.tmpOptions = "mode=1777";
  EXPECT_TRUE(names(check(unlimited, host).uncovered, "tmpfs \"/tmp\"")) << texts(check(unlimited, host).uncovered);
}

TEST_F(CoverageTest, TheSandboxsSharesOfPerUserCountersMustBeInstalled) {
  const DerivedRules r = rules({{"filesystem", {{"allowWrite", {ws_}}}}});
  const SandboxPlan plan = planSandbox(r, std::nullopt);
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  SandboxPlan processes = plan;
  processes.limits.processes = plan.mounts.userCounters.processes + 1;
  EXPECT_TRUE(names(check(r, processes).uncovered, "RLIMIT_NPROC")) << texts(check(r, processes).uncovered);
  SandboxPlan signals = plan;
  signals.limits.pendingSignals = plan.mounts.userCounters.pendingSignals + 1;
  EXPECT_TRUE(names(check(r, signals).uncovered, "RLIMIT_SIGPENDING"));
  SandboxPlan ptys = plan;
  ptys.mounts.ptsOptions = "newinstance,ptmxmode=0666,mode=0620";  // every host pty reachable
  EXPECT_TRUE(names(check(r, ptys).uncovered, "kernel.pty.max")) << texts(check(r, ptys).uncovered);
}

// --- the workspace at /workspace ----------------------------------------------

TEST(WorkspaceMountTest, SandboxPathsBeneathWorkspaceNameTheWorkspacesHostPaths) {
  const WorkspaceMount w{"/srv/ws"};
  EXPECT_EQ(w.hostPath("/workspace"), "/srv/ws");
  EXPECT_EQ(w.hostPath("/workspace/a/b"), "/srv/ws/a/b");
  EXPECT_EQ(w.hostPath("/workspaces/a"), "/workspaces/a");  // a sibling name, not beneath
  EXPECT_EQ(w.hostPath("/etc/passwd"), "/etc/passwd");
  EXPECT_EQ(w.sandboxPath("/srv/ws"), "/workspace");
  EXPECT_EQ(w.sandboxPath("/srv/ws/a"), "/workspace/a");
  EXPECT_EQ(w.sandboxPath("/srv/wsx"), "/srv/wsx");
  // A workspace that is /workspace on the host needs no mount of its own.
  const WorkspaceMount same{"/workspace"};
  EXPECT_FALSE(same.aliased());
  EXPECT_EQ(same.hostPath("/workspace/a"), "/workspace/a");
  EXPECT_FALSE(WorkspaceMount{}.aliased());
}

TEST_F(CoverageTest, TheWorkspaceIsShownLastWithItsOwnViewInARebuiltRoot) {
  const DerivedRules r = workspaceRules({ws_ + "/secret"}, {ws_});
  SandboxPlan plan = planSandbox(r, std::nullopt, WorkspaceMount{ws_});
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  EXPECT_EQ(plan.mounts.root, MountPlan::Root::kRebuilt);
  ASSERT_FALSE(plan.mounts.ops.empty());
  EXPECT_EQ(plan.mounts.ops.back().kind, Kind::kWorkspace);
  EXPECT_EQ(plan.mounts.ops.back().path, "/workspace");
  EXPECT_EQ(plan.mounts.ops.back().target, ws_);
  // The host's top-level trees, read-only; the workspace's rules at its path.
  EXPECT_EQ(viewAt(plan.mounts, "/usr/bin").source, Source::kHost);
  EXPECT_FALSE(viewAt(plan.mounts, "/usr/bin").writable);
  EXPECT_EQ(viewAt(plan.mounts, ws_ + "/secret").source, Source::kEmpty);
  EXPECT_TRUE(viewAt(plan.mounts, ws_ + "/sub").brokered);
  // What the host has at /workspace is not shown: the workspace is.
  const MountView hidden = viewAt(plan.mounts, "/workspace/anything");
  EXPECT_EQ(hidden.source, Source::kEmpty);
  ASSERT_NE(hidden.op, nullptr);
  EXPECT_EQ(hidden.op->kind, Kind::kWorkspace);
  // Without a workspace the plan is today's: the host root, no /workspace.
  SandboxPlan plain = planSandbox(r, std::nullopt);
  EXPECT_EQ(plain.mounts.root, MountPlan::Root::kHostReadOnly);
  EXPECT_TRUE(std::none_of(plain.mounts.ops.begin(), plain.mounts.ops.end(),
                           [](const MountPlan::Op& op) { return op.kind == Kind::kWorkspace; }));
}

TEST_F(CoverageTest, AMaskUnderTheWorkspaceIsRequiredForWhatWorkspaceShows) {
  const DerivedRules r = workspaceRules({ws_ + "/secret"}, {ws_});
  SandboxPlan plan = planSandbox(r, std::nullopt, WorkspaceMount{ws_});
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  dropOp(plan.mounts, Kind::kMask, ws_ + "/secret");
  auto c = check(r, plan);
  EXPECT_TRUE(names(c.uncovered, "filesystem.denyRead \"" + ws_ + "/secret\"")) << texts(c.uncovered);
}

TEST_F(CoverageTest, AWorkspaceMountThatIsNotTheLastOneOfTheWorkspaceIsNamed) {
  const DerivedRules r = workspaceRules(nlohmann::json::array(), {ws_});
  const SandboxPlan plan = planSandbox(r, std::nullopt, WorkspaceMount{ws_});
  ASSERT_TRUE(plan.uncovered.empty()) << texts(plan.uncovered);
  const std::string gap = "workspace \"" + ws_ + "\"";
  SandboxPlan missing = plan;
  dropOp(missing.mounts, Kind::kWorkspace, "/workspace");
  EXPECT_TRUE(names(check(r, missing).uncovered, gap)) << texts(check(r, missing).uncovered);
  SandboxPlan elsewhere = plan;
  elsewhere.mounts.ops.back().target = home_;  // the child would see another tree than the broker writes
  EXPECT_TRUE(names(check(r, elsewhere).uncovered, gap));
  SandboxPlan early = plan;  // before the ops it must copy
  std::rotate(early.mounts.ops.begin(), early.mounts.ops.end() - 1, early.mounts.ops.end());
  EXPECT_TRUE(names(check(r, early).uncovered, gap));
  SandboxPlan hostRoot = plan;
  hostRoot.mounts.root = MountPlan::Root::kHostReadOnly;
  EXPECT_TRUE(names(check(r, hostRoot).uncovered, gap));
}

TEST_F(CoverageTest, AHostPathTheWorkspaceHidesCannotBeWrittenAndTheSpawnIsRefused) {
  // The policy names the host's /workspace/out; the sandbox shows the
  // workspace there instead: fail closed, naming the entry.
  const DerivedRules r = workspaceRules(nlohmann::json::array(), {ws_, "/workspace/out"});
  SandboxPlan plan = planSandbox(r, std::nullopt, WorkspaceMount{ws_});
  EXPECT_TRUE(names(plan.uncovered, "filesystem.allowWrite \"/workspace/out\"")) << texts(plan.uncovered);
}

TEST_F(CoverageTest, TheBrokeredHostRootWithAWorkspaceIsRefused) {
  // allowWrite "/": the rebuilt root is the sandbox's own tmpfs, which the
  // broker does not write -- refused rather than run with "/" unwritable.
  const DerivedRules r = workspaceRules(nlohmann::json::array(), {"/"}, true);
  SandboxPlan plan = planSandbox(r, std::nullopt, WorkspaceMount{ws_});
  EXPECT_TRUE(names(plan.uncovered, "filesystem.allowWrite \"/\"")) << texts(plan.uncovered);
}

}  // namespace
}  // namespace stockade::platform
