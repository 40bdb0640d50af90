// The write broker's pure decision: effects on resolved names + rules -> verdict.
#include "policy/write_decision.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <tuple>

#include "tests/support/temp_dir.h"

namespace stockade::policy {
namespace {

using Action = WriteVerdict::Action;
using testing::TempDir;

class WriteDecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws = t_.dir("ws");
    other = t_.dir("other");
    t_.dir("ws/deep/secret");
    auto derived = derive(SandboxPolicy::fromJson(R"({"filesystem":{
        "allowWrite": [".", "../other", "/tmp", "./nested"],
        "denyWrite": ["./box/locked", "./.env"],
        "denyRead": ["./secret", "./deep/secret"],
        "allowRead": []}})"),
                          DeriveContext{.home = t_ / "home", .cwd = ws, .tmpdir = std::nullopt});
    ASSERT_TRUE(std::holds_alternative<DerivedRules>(derived)) << std::get<PolicyError>(derived).text();
    rules_.emplace(std::get<DerivedRules>(derived));
  }

  WriteVerdict decide(std::vector<WriteEffect> effects, std::optional<std::uint32_t> mode = std::nullopt) {
    return rules_->decide(effects, mode);
  }
  WriteVerdict create(const std::string& path, ObjectKind k = ObjectKind::kOther) {
    return decide({{Effect::kCreate, path, k}});
  }
  WriteVerdict rename(const std::string& from, const std::string& to, ObjectKind k) {
    return decide({{Effect::kMoveOut, from, k}, {Effect::kMoveIn, to, k}});
  }
  static void expectRefused(const WriteVerdict& v, int error, const std::string& ruleText) {
    EXPECT_EQ(v.action, Action::kRefuse);
    EXPECT_EQ(v.error, error);
    EXPECT_NE(v.rule.find(ruleText), std::string::npos) << v.rule;
    EXPECT_FALSE(v.reason.empty());
  }

  TempDir t_;
  std::string ws, other;
  std::optional<WriteRules> rules_;
};

TEST_F(WriteDecisionTest, TheTreesAreTheOutermostHostWritablePaths) {
  EXPECT_EQ(rules_->trees(), (std::vector<std::string>{t_ / "other", ws}));
  EXPECT_TRUE(builtPrivately("/tmp"));
  EXPECT_TRUE(builtPrivately("/dev/shm"));
  EXPECT_FALSE(builtPrivately("/tmp/build"));  // a host path bound into the private /tmp
}

TEST_F(WriteDecisionTest, ACreateInATreeIsPerformedAndOneOutsideIsTheKernels) {
  auto v = create(ws + "/src/main.c");
  EXPECT_EQ(v.action, Action::kPerform);
  EXPECT_EQ(rules_->trees()[v.tree], ws);
  EXPECT_EQ(create("/etc/passwd").action, Action::kNotBrokered);
  EXPECT_EQ(create("/tmp/scratch").action, Action::kNotBrokered);  // the private /tmp
}

// A case-insensitive directory takes `LOCKED` for `locked` and `SECRET` for
// `secret`: the policy's paths hold in every spelling of their names, as the
// protected names do (a superset on a case-sensitive one).
TEST_F(WriteDecisionTest, ThePolicysPathsHoldInEverySpellingACaseInsensitiveDirectoryTakes) {
  expectRefused(create(ws + "/box/LOCKED/x"), EACCES, "filesystem.denyWrite");
  expectRefused(decide({{Effect::kModify, ws + "/.ENV", ObjectKind::kOther}}), EACCES, "filesystem.denyWrite");
  expectRefused(decide({{Effect::kModify, ws + "/.env.", ObjectKind::kOther}}), EACCES, "filesystem.denyWrite");
  // A write-open of a read-denied file would hand the child a descriptor to read.
  expectRefused(decide({{Effect::kModify, ws + "/SECRET/key", ObjectKind::kOther}}), EROFS, "filesystem.denyRead");
  expectRefused(rename(ws + "/Deep", ws + "/moved", ObjectKind::kDirectory), EACCES, "filesystem.denyRead");
  expectRefused(decide({{Effect::kModify, ws + "/x/.BASHRC", ObjectKind::kOther}}), EACCES, ".bashrc");
  // A GIT directory's CONFIG, in a directory git takes for one by its contents.
  const std::string bare = ws + "/Repo.git";
  expectRefused(rules_->decide({{Effect::kModify, bare + "/CONFIG", ObjectKind::kOther}}, std::nullopt,
                               {{bare, GitDirContents{.head = true, .objects = true, .refs = true}}}),
                EACCES, "HEAD + objects + refs");
  EXPECT_EQ(create(ws + "/box/Lockedness").action, Action::kPerform);
  EXPECT_EQ(create(ws + "/Secretary/notes").action, Action::kPerform);
}

// Only files, directories and symlinks arrive at a name in a tree: a FIFO at
// .git/index (or anywhere a host tool opens) would hang it.
TEST_F(WriteDecisionTest, ASpecialFileNeverArrivesAtANameInATreeWhileAFileDoes) {
  for (const char* name : {"/.git/index", "/fifo", "/deep/er/socket"}) {
    expectRefused(create(ws + name, ObjectKind::kSpecial), EPERM, "special file");
    expectRefused(rename(ws + "/made", ws + name, ObjectKind::kSpecial), EPERM, "special file");
    EXPECT_EQ(create(ws + name, ObjectKind::kOther).action, Action::kPerform) << name;
  }
  // One that is there (the host made it) may go.
  EXPECT_EQ(decide({{Effect::kRemove, ws + "/fifo", ObjectKind::kSpecial}}).action, Action::kPerform);
  EXPECT_EQ(create("/tmp/fifo", ObjectKind::kSpecial).action, Action::kNotBrokered);  // the private /tmp
}

TEST_F(WriteDecisionTest, ProtectedNamesAreRefusedAtAnyDepthBesideTheirNeighbours) {
  expectRefused(create(ws + "/.bashrc"), EACCES, ".bashrc");
  expectRefused(create(ws + "/a/b/.vscode", ObjectKind::kDirectory), EACCES, ".vscode");
  expectRefused(create(ws + "/sub/.git/hooks/pre-commit"), EACCES, ".git/hooks");
  expectRefused(decide({{Effect::kModify, ws + "/.git/config", ObjectKind::kOther}}), EACCES, ".git/config");
  EXPECT_EQ(create(ws + "/sub/.git", ObjectKind::kDirectory).action, Action::kPerform);  // git init's mkdir
  expectRefused(create(ws + "/sub/.git"), EACCES, ".git (not a directory)");  // a gitfile redirect
  EXPECT_EQ(create(ws + "/sub/.git/objects/ab/cd").action, Action::kPerform);
  EXPECT_EQ(create(ws + "/bashrc").action, Action::kPerform);
}

TEST_F(WriteDecisionTest, RemovingAProtectedNameIsRefusedAnEmptyContextDirectoryIsNot) {
  expectRefused(decide({{Effect::kRemove, ws + "/.git/config", ObjectKind::kOther}}), EACCES, ".git/config");
  expectRefused(decide({{Effect::kRemove, ws + "/.git/hooks", ObjectKind::kDirectory}}), EACCES, ".git/hooks");
  EXPECT_EQ(decide({{Effect::kRemove, ws + "/sub/.git", ObjectKind::kDirectory}}).action, Action::kPerform);
  EXPECT_EQ(decide({{Effect::kRemove, ws + "/README", ObjectKind::kOther}}).action, Action::kPerform);
}

TEST_F(WriteDecisionTest, RenamesIntoOrOutOfProtectedNamesAreRefused) {
  expectRefused(rename(ws + "/README", ws + "/.bashrc", ObjectKind::kOther), EACCES, ".bashrc");
  expectRefused(rename(ws + "/.bashrc", ws + "/bashrc.old", ObjectKind::kOther), EACCES, ".bashrc");
  expectRefused(rename(ws + "/hooks", ws + "/.git/hooks", ObjectKind::kDirectory), EACCES, ".git/hooks");
  EXPECT_EQ(rename(ws + "/src", ws + "/src2", ObjectKind::kDirectory).action, Action::kPerform);
  EXPECT_EQ(rename(ws + "/a.tmp", ws + "/a", ObjectKind::kOther).action, Action::kPerform);
}

TEST_F(WriteDecisionTest, ADirectoryCannotBeMovedOntoOrAwayFromANameThatProtectsWhatIsBeneath) {
  // mkdir x; mkdir x/hooks; write x/hooks/pre-commit; mv x .git
  expectRefused(rename(ws + "/x", ws + "/.git", ObjectKind::kDirectory), EACCES, ".git/");
  // mv .git y; edit y/config; (the old view: pin .git as a mount point)
  expectRefused(rename(ws + "/.git", ws + "/y", ObjectKind::kDirectory), EACCES, ".git/");
  expectRefused(rename(ws + "/m", ws + "/.git/modules/m", ObjectKind::kDirectory), EACCES, ".git/modules/**/");
  // A file moved to .git is a gitfile; one moved within .git/objects is ordinary.
  expectRefused(rename(ws + "/f", ws + "/.git", ObjectKind::kOther), EACCES, ".git (not a directory)");
  EXPECT_EQ(rename(ws + "/.git/objects/tmp", ws + "/.git/objects/ab", ObjectKind::kDirectory).action,
            Action::kPerform);
}

TEST_F(WriteDecisionTest, AnExchangeIsDecidedInBothDirections) {
  auto v = decide({{Effect::kMoveOut, ws + "/evil", ObjectKind::kOther},
                   {Effect::kMoveIn, ws + "/.git/hooks/pre-commit", ObjectKind::kOther},
                   {Effect::kMoveOut, ws + "/.git/hooks/pre-commit", ObjectKind::kOther},
                   {Effect::kMoveIn, ws + "/evil", ObjectKind::kOther}});
  expectRefused(v, EACCES, ".git/hooks");
}

TEST_F(WriteDecisionTest, AProtectedFileGetsNoSecondName) {
  expectRefused(decide({{Effect::kLinkSource, ws + "/.git/hooks/pre-commit", ObjectKind::kOther},
                        {Effect::kCreate, ws + "/innocent", ObjectKind::kOther}}),
                EACCES, ".git/hooks");
  EXPECT_EQ(decide({{Effect::kLinkSource, ws + "/README", ObjectKind::kOther},
                    {Effect::kCreate, ws + "/README.hard", ObjectKind::kOther}})
                .action,
            Action::kPerform);
}

TEST_F(WriteDecisionTest, DenyWritePathsHoldAndTheirAncestorsCannotMove) {
  expectRefused(create(ws + "/.env"), EACCES, "filesystem.denyWrite");
  expectRefused(create(ws + "/box/locked/deep/file"), EACCES, "filesystem.denyWrite");
  // Moving a directory with a denied path beneath it would take the denial
  // off what is there; moving one onto it would put the child's files there.
  expectRefused(rename(ws + "/box", ws + "/box2", ObjectKind::kDirectory), EACCES, "filesystem.denyWrite");
  expectRefused(rename(ws + "/mine", ws + "/box", ObjectKind::kDirectory), EACCES, "filesystem.denyWrite");
  EXPECT_EQ(create(ws + "/box/unlocked").action, Action::kPerform);
  EXPECT_EQ(rename(ws + "/box/a", ws + "/box/b", ObjectKind::kDirectory).action, Action::kPerform);
}

TEST_F(WriteDecisionTest, AReadDeniedPathIsReadOnlyInTheSandboxsView) {
  auto v = create(ws + "/secret/new");
  expectRefused(v, EROFS, "filesystem.denyRead");
}

TEST_F(WriteDecisionTest, TwoTreesAreTwoMountsAndATreesRootIsAMountPoint) {
  auto cross = rename(ws + "/a", other + "/a", ObjectKind::kOther);
  EXPECT_EQ(cross.action, Action::kFail);
  EXPECT_EQ(cross.error, EXDEV);
  auto out = rename(ws + "/a", "/tmp/a", ObjectKind::kOther);
  EXPECT_EQ(out.action, Action::kFail);
  EXPECT_EQ(out.error, EXDEV);
  auto root = rename(other, other + "2", ObjectKind::kDirectory);
  EXPECT_EQ(root.action, Action::kFail);
  EXPECT_EQ(root.error, EBUSY);
  auto rm = decide({{Effect::kRemove, other, ObjectKind::kDirectory}});
  EXPECT_EQ(rm.action, Action::kFail);
  EXPECT_EQ(rm.error, EBUSY);
  EXPECT_EQ(decide({{Effect::kModify, other, ObjectKind::kDirectory}}).action, Action::kPerform);  // chmod of the root
}

// A bare repository (or any git directory under another name) is one by its
// contents; git reads its config and runs its hooks like a .git's.
TEST_F(WriteDecisionTest, AGitDirectoryByContentsHasItsConfigurationProtected) {
  const std::string bare = ws + "/mirror.git";
  const GitDirContents repo{.head = true, .objects = true, .refs = true, .commondir = false, .configuration = true};
  std::vector<WriteEffect> hook = {{Effect::kCreate, bare + "/hooks/pre-receive", ObjectKind::kOther}};
  EXPECT_EQ(rules_->gitDirCandidates(hook), std::vector<std::string>{bare});
  expectRefused(rules_->decide(hook, std::nullopt, {{bare, repo}}), EACCES, "HEAD + objects + refs");
  expectRefused(rules_->decide({{Effect::kModify, bare + "/config", ObjectKind::kOther}}, std::nullopt, {{bare, repo}}),
                EACCES, "HEAD + objects + refs");
  // Without HEAD, or objects and refs, it is an ordinary directory.
  EXPECT_EQ(rules_->decide(hook, std::nullopt, {{bare, {.head = false, .objects = true, .refs = true}}}).action,
            Action::kPerform);
  EXPECT_EQ(rules_->decide(hook).action, Action::kPerform);
  // Making one out of a directory that already holds configuration is refused...
  const GitDirContents half{.head = false, .objects = true, .refs = true, .commondir = false, .configuration = true};
  expectRefused(rules_->decide({{Effect::kCreate, bare + "/HEAD", ObjectKind::kOther}}, std::nullopt, {{bare, half}}),
                EACCES, "HEAD + objects + refs");
  const GitDirContents viaCommondir{.head = true, .configuration = true};
  expectRefused(rules_->decide({{Effect::kCreate, bare + "/commondir", ObjectKind::kOther}}, std::nullopt,
                               {{bare, viaCommondir}}),
                EACCES, "HEAD + objects + refs");
  // ... while one without configuration may become one, and a git directory
  // may replace its HEAD (git writes HEAD.lock, then renames it).
  EXPECT_EQ(rules_->decide({{Effect::kCreate, bare + "/HEAD", ObjectKind::kOther}}, std::nullopt,
                           {{bare, {.objects = true, .refs = true}}})
                .action,
            Action::kPerform);
  EXPECT_EQ(rules_->decide({{Effect::kMoveOut, bare + "/HEAD.lock", ObjectKind::kOther},
                            {Effect::kMoveIn, bare + "/HEAD", ObjectKind::kOther},
                            {Effect::kRemove, bare + "/HEAD", ObjectKind::kOther}},
                           std::nullopt, {{bare, repo}})
                .action,
            Action::kPerform);
  // Taking HEAD away would unmake it and free its configuration.
  expectRefused(rules_->decide({{Effect::kMoveOut, bare + "/HEAD", ObjectKind::kOther},
                                {Effect::kMoveIn, bare + "/HEAD.away", ObjectKind::kOther}},
                               std::nullopt, {{bare, repo}}),
                EACCES, "HEAD + objects + refs");
  // Objects and refs of a git directory stay writable.
  EXPECT_EQ(rules_->decide({{Effect::kCreate, bare + "/objects/ab/cd", ObjectKind::kOther}}, std::nullopt,
                           {{bare, repo}})
                .action,
            Action::kPerform);
  // Names git reads, deeper in a source tree, make their parent a candidate.
  EXPECT_EQ(rules_->gitDirCandidates({{Effect::kCreate, ws + "/src/config/app.json", ObjectKind::kOther}}),
            std::vector<std::string>{ws + "/src"});
  // A .git's entries are protected by name: no contents are asked for.
  EXPECT_TRUE(rules_->gitDirCandidates({{Effect::kCreate, ws + "/.git/HEAD", ObjectKind::kOther}}).empty());
}

// Git's own test of a git directory asks only that objects and refs can be
// searched, and follows a commondir to another directory's config and hooks:
// what a directory becomes one by is decided by name, whatever its kind.
TEST_F(WriteDecisionTest, AGitDirectoryMadeWithoutDirectoriesOrThroughACommondirIsOneToo) {
  const std::string dir = ws + "/evil";
  // objects as a symlink (or an executable file) beside HEAD, refs and a config.
  const GitDirContents noObjects{.head = true, .refs = true, .configuration = true};
  expectRefused(rules_->decide({{Effect::kCreate, dir + "/objects", ObjectKind::kOther}}, std::nullopt,
                               {{dir, noObjects}}),
                EACCES, "HEAD + objects + refs");
  // The config written once objects is a symlink: the directory is one already.
  const GitDirContents linked{.head = true, .objects = true, .refs = true};
  expectRefused(rules_->decide({{Effect::kCreate, dir + "/config", ObjectKind::kOther}}, std::nullopt, {{dir, linked}}),
                EACCES, "HEAD + objects + refs");
  // A commondir beside HEAD makes one, with no configuration of its own...
  expectRefused(rules_->decide({{Effect::kCreate, dir + "/commondir", ObjectKind::kOther}}, std::nullopt,
                               {{dir, {.head = true}}}),
                EACCES, "HEAD + objects + refs");
  // ... and HEAD beside a commondir (which the broker reports as configuration).
  expectRefused(rules_->decide({{Effect::kCreate, dir + "/HEAD", ObjectKind::kOther}}, std::nullopt,
                               {{dir, {.commondir = true, .configuration = true}}}),
                EACCES, "HEAD + objects + refs");
  // The neighbours: HEAD in a directory with only objects and refs of any
  // kind, and a commondir where there is no HEAD.
  EXPECT_EQ(rules_->decide({{Effect::kCreate, dir + "/HEAD", ObjectKind::kOther}}, std::nullopt,
                           {{dir, {.objects = true, .refs = true}}})
                .action,
            Action::kPerform);
  EXPECT_EQ(rules_->decide({{Effect::kCreate, dir + "/commondir", ObjectKind::kOther}}, std::nullopt, {{dir, {}}}).action,
            Action::kPerform);
}

// A symlink arriving where a protected name leads redirects it, like a
// directory moved there; any other object there is only itself.
TEST_F(WriteDecisionTest, ASymlinkIsRefusedWhereAProtectedNameLeads) {
  for (const char* name : {"/.claude", "/.config", "/.git/modules", "/.git/modules/a", "/sub/.git/worktrees"}) {
    const std::string path = ws + name;
    expectRefused(decide({{Effect::kCreate, path, ObjectKind::kSymlink}}), EACCES, "protected name");
    expectRefused(decide({{Effect::kMoveOut, ws + "/l", ObjectKind::kSymlink}, {Effect::kMoveIn, path, ObjectKind::kSymlink}}),
                  EACCES, "protected name");
    EXPECT_EQ(decide({{Effect::kCreate, path, ObjectKind::kOther}}).action, Action::kPerform) << name;
  }
  // Moving a symlink away from there leaves the name unprotected by nothing.
  EXPECT_EQ(decide({{Effect::kMoveOut, ws + "/.claude", ObjectKind::kSymlink},
                    {Effect::kMoveIn, ws + "/claude-link", ObjectKind::kSymlink}})
                .action,
            Action::kPerform);
  EXPECT_EQ(decide({{Effect::kCreate, ws + "/.claude/notes", ObjectKind::kSymlink}}).action, Action::kPerform);
  EXPECT_EQ(decide({{Effect::kCreate, ws + "/claude", ObjectKind::kSymlink}}).action, Action::kPerform);
  // Above a denyWrite path too.
  expectRefused(decide({{Effect::kCreate, ws + "/box", ObjectKind::kSymlink}}), EACCES, "filesystem.denyWrite");
  EXPECT_EQ(decide({{Effect::kCreate, ws + "/box", ObjectKind::kOther}}).action, Action::kPerform);
}

// Moving a directory above a read mask would take the masked object out from
// under its rule (and the broker would open it by its new name).
TEST_F(WriteDecisionTest, ADirectoryAboveAReadMaskStaysWhereItIs) {
  expectRefused(rename(ws + "/deep", ws + "/shallow", ObjectKind::kDirectory), EACCES, "filesystem.denyRead");
  expectRefused(decide({{Effect::kMoveOut, ws + "/deep", ObjectKind::kDirectory},
                        {Effect::kMoveIn, ws + "/x", ObjectKind::kDirectory},
                        {Effect::kMoveOut, ws + "/x", ObjectKind::kDirectory},
                        {Effect::kMoveIn, ws + "/deep", ObjectKind::kDirectory}}),
                EACCES, "filesystem.denyRead");
  expectRefused(rename(ws + "/mine", ws + "/deep", ObjectKind::kDirectory), EACCES, "filesystem.denyRead");
  // The neighbours: a file renamed beside the mask, a directory elsewhere.
  EXPECT_EQ(rename(ws + "/deep/a", ws + "/deep/b", ObjectKind::kOther).action, Action::kPerform);
  EXPECT_EQ(rename(ws + "/deep/d", ws + "/deep/e", ObjectKind::kDirectory).action, Action::kPerform);
  EXPECT_EQ(rename(ws + "/shallow", ws + "/shallow2", ObjectKind::kDirectory).action, Action::kPerform);
}

// A tree brokered only to hold an allowWrite tree the host does not have
// yet (its nearest directory the host has, mounts.h): the directories on the
// way may be made, the tree itself and everything beneath it is the child's;
// nothing else there -- a file on the way, another directory, a symlink, a
// rename or removal of what is on the way -- which stays read-only (EROFS).
TEST_F(WriteDecisionTest, ATreeThatHoldsAMissingWritableTreeLetsOnlyTheWayToItBeMade) {
  const std::string holder = t_.dir("holder");
  auto derived = derive(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite": ["../holder/a/b/c"],
      "denyWrite": [], "denyRead": [], "allowRead": []}})"),
                        DeriveContext{.home = t_ / "home", .cwd = ws, .tmpdir = std::nullopt});
  ASSERT_TRUE(std::holds_alternative<DerivedRules>(derived)) << std::get<PolicyError>(derived).text();
  const WriteRules held(std::get<DerivedRules>(derived), {holder}, {});
  auto verdict = [&](Effect e, const std::string& rel, ObjectKind k) {
    return held.decide({{e, holder + "/" + rel, k}});
  };
  for (const char* way : {"a", "a/b"}) EXPECT_EQ(verdict(Effect::kCreate, way, ObjectKind::kDirectory).action, Action::kPerform) << way;
  EXPECT_EQ(verdict(Effect::kCreate, "a/b/c", ObjectKind::kDirectory).action, Action::kPerform);
  EXPECT_EQ(verdict(Effect::kCreate, "a/b/c/file", ObjectKind::kOther).action, Action::kPerform);
  EXPECT_EQ(verdict(Effect::kModify, "a/b/c/d/file", ObjectKind::kOther).action, Action::kPerform);
  for (auto [effect, rel, kind] : {std::tuple{Effect::kCreate, "a", ObjectKind::kOther},
                                    std::tuple{Effect::kCreate, "a/b", ObjectKind::kSymlink},
                                    std::tuple{Effect::kCreate, "other", ObjectKind::kDirectory},
                                    std::tuple{Effect::kCreate, "a/other", ObjectKind::kDirectory},
                                    std::tuple{Effect::kCreate, "a/b/c2", ObjectKind::kDirectory},
                                    std::tuple{Effect::kModify, "existing", ObjectKind::kOther},
                                    std::tuple{Effect::kRemove, "a/b", ObjectKind::kDirectory},
                                    std::tuple{Effect::kMoveOut, "a", ObjectKind::kDirectory}})
    expectRefused(verdict(effect, rel, kind), EROFS, "filesystem.allowWrite");
  // Moving the writable tree's way away (or moving one in onto it) is refused too.
  expectRefused(held.decide({{Effect::kMoveOut, holder + "/a/b/c", ObjectKind::kDirectory},
                             {Effect::kMoveIn, holder + "/a/x", ObjectKind::kDirectory}}),
                EROFS, "filesystem.allowWrite");
}

TEST_F(WriteDecisionTest, SetIdModeBitsAreRefused) {
  expectRefused(decide({{Effect::kModify, ws + "/tool", ObjectKind::kOther}}, S_ISUID | 0755), EPERM, "setuid");
  expectRefused(decide({{Effect::kCreate, ws + "/tool", ObjectKind::kOther}}, S_ISGID | 0755), EPERM, "setuid");
  EXPECT_EQ(decide({{Effect::kModify, ws + "/tool", ObjectKind::kOther}}, 0755).action, Action::kPerform);
}

}  // namespace
}  // namespace stockade::policy
