#include "src/workspace/import_policy.h"

#include <gtest/gtest.h>

#include <set>

namespace stockade::workspace {
namespace {

using T = ArchiveEntryType;

ArchiveEntry file(std::string name, std::uint64_t size = 1) { return {.name = std::move(name), .type = T::kFile, .size = size, .mode = 0644}; }
ArchiveEntry dir(std::string name) { return {.name = std::move(name), .type = T::kDirectory, .mode = 0755}; }
ArchiveEntry sym(std::string name, std::string target) { return {.name = std::move(name), .type = T::kSymlink, .linkName = std::move(target)}; }
ArchiveEntry hard(std::string name, std::string target) { return {.name = std::move(name), .type = T::kHardLink, .linkName = std::move(target)}; }
ArchiveEntry special(std::string name, T type) { return {.name = std::move(name), .type = type}; }

ImportChecker::WriteCheck protectGitHooks() {
  return [](const std::string& rel, ObjectKind) -> std::optional<std::string> {
    if (rel == ".git/hooks" || rel.starts_with(".git/hooks/")) return std::string("protected name \".git/hooks\"");
    return std::nullopt;
  };
}

struct Case {
  const char* name;
  std::vector<ArchiveEntry> entries;  // all but the last must be admitted
  ImportRefusal reason;
  std::string entry;  // the refused entry's name
};

class RefusalTest : public ::testing::TestWithParam<Case> {};

TEST_P(RefusalTest, TheLastEntryIsRefusedNamingItAndWhy) {
  ImportLimits limits{.maxEntries = 5, .maxEntryBytes = 100, .maxTotalBytes = 150};
  ImportChecker c(limits, SymlinkTargets::kBeneathDestination, protectGitHooks());
  const auto& entries = GetParam().entries;
  for (std::size_t i = 0; i + 1 < entries.size(); ++i) {
    auto r = c.admit(entries[i]);
    ASSERT_TRUE(std::holds_alternative<PlannedEntry>(r))
        << GetParam().name << ": entry " << i << " refused: " << std::get<Refusal>(r).message;
  }
  auto r = c.admit(entries.back());
  ASSERT_TRUE(std::holds_alternative<Refusal>(r)) << GetParam().name;
  const auto& refusal = std::get<Refusal>(r);
  EXPECT_EQ(importRefusalName(refusal.reason), importRefusalName(GetParam().reason)) << refusal.message;
  EXPECT_EQ(refusal.entry, GetParam().entry);
  EXPECT_NE(refusal.message.find(GetParam().entry.substr(0, 100)), std::string::npos) << refusal.message;
  auto err = toError(refusal);
  EXPECT_EQ(err.code, WorkspaceErrorCode::kInvalidArchive);
  EXPECT_EQ(err.entry, GetParam().entry);
  EXPECT_EQ(err.reason, importRefusalName(GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Archives, RefusalTest,
    ::testing::Values(
        Case{"absolute", {file("/etc/passwd")}, ImportRefusal::kAbsoluteName, "/etc/passwd"},
        Case{"dotdot", {file("../x")}, ImportRefusal::kDotDot, "../x"},
        Case{"dotdot_inside", {file("a/../b")}, ImportRefusal::kDotDot, "a/../b"},
        Case{"dotdot_after_dot", {file("./../x")}, ImportRefusal::kDotDot, "./../x"},
        Case{"empty_name", {file("")}, ImportRefusal::kBadName, ""},
        Case{"long_component", {file(std::string(256, 'a'))}, ImportRefusal::kBadName, std::string(256, 'a')},
        Case{"root_as_file", {file("./")}, ImportRefusal::kBadName, "./"},
        Case{"too_deep", {file([] {
               std::string deep;
               for (int i = 0; i < 257; ++i) deep += "d/";
               return deep + "f";
             }())},
             ImportRefusal::kBadName, [] {
               std::string deep;
               for (int i = 0; i < 257; ++i) deep += "d/";
               return deep + "f";
             }()},
        Case{"symlink_absolute", {sym("l", "/etc")}, ImportRefusal::kLinkOutside, "l"},
        Case{"symlink_climbs", {sym("l", "..")}, ImportRefusal::kLinkOutside, "l"},
        Case{"symlink_climbs_deep", {dir("a"), sym("a/l", "../../x")}, ImportRefusal::kLinkOutside, "a/l"},
        Case{"symlink_dotdot_after_unknown", {sym("a/l", "b/../../x")}, ImportRefusal::kLinkOutside, "a/l"},
        Case{"symlink_dotdot_after_symlink",
             {dir("d"), sym("d/up", ".."), sym("x", "d/up/..")}, ImportRefusal::kLinkOutside, "x"},
        Case{"symlink_empty", {sym("l", "")}, ImportRefusal::kMalformed, "l"},
        Case{"through_symlink", {sym("l", "d"), file("l/x")}, ImportRefusal::kThroughSymlink, "l/x"},
        Case{"through_symlink_deep", {dir("a"), sym("a/l", "."), file("a/l/b/c")}, ImportRefusal::kThroughSymlink, "a/l/b/c"},
        Case{"hardlink_absolute", {hard("h", "/etc/passwd")}, ImportRefusal::kHardLinkOutside, "h"},
        Case{"hardlink_dotdot", {hard("h", "../x")}, ImportRefusal::kHardLinkOutside, "h"},
        Case{"hardlink_to_nothing", {hard("h", "missing")}, ImportRefusal::kHardLinkOutside, "h"},
        Case{"hardlink_to_symlink", {sym("s", "f"), hard("h", "s")}, ImportRefusal::kHardLinkOutside, "h"},
        Case{"hardlink_to_dir", {dir("d"), hard("h", "d")}, ImportRefusal::kHardLinkOutside, "h"},
        Case{"hardlink_to_itself", {file("f"), hard("f", "f")}, ImportRefusal::kHardLinkOutside, "f"},
        Case{"hardlink_with_data", {file("f"), ArchiveEntry{.name = "h", .type = T::kHardLink, .linkName = "f", .size = 5}},
             ImportRefusal::kMalformed, "h"},
        Case{"char_device", {special("null", T::kCharDevice)}, ImportRefusal::kSpecialFile, "null"},
        Case{"block_device", {special("sda", T::kBlockDevice)}, ImportRefusal::kSpecialFile, "sda"},
        Case{"fifo", {special("p", T::kFifo)}, ImportRefusal::kSpecialFile, "p"},
        Case{"socket", {special("s", T::kSocket)}, ImportRefusal::kSpecialFile, "s"},
        Case{"unknown_type", {special("u", T::kUnknown)}, ImportRefusal::kMalformed, "u"},
        Case{"entry_too_large", {file("big", 101)}, ImportRefusal::kEntryTooLarge, "big"},
        Case{"total_too_large", {file("a", 100), file("b", 51)}, ImportRefusal::kTotalTooLarge, "b"},
        Case{"too_many_entries", {dir("a"), dir("b"), dir("c"), dir("d"), dir("e"), dir("f")},
             ImportRefusal::kTooManyEntries, "f"},
        Case{"dir_over_file", {file("a"), dir("a")}, ImportRefusal::kConflictingEntry, "a"},
        Case{"file_over_dir", {dir("a"), file("a")}, ImportRefusal::kConflictingEntry, "a"},
        Case{"file_over_implicit_dir", {file("a/b"), file("a")}, ImportRefusal::kConflictingEntry, "a"},
        Case{"beneath_a_file", {file("a"), file("a/b")}, ImportRefusal::kConflictingEntry, "a/b"},
        Case{"protected_name", {file(".git/hooks/pre-commit")}, ImportRefusal::kPermissionDenied, ".git/hooks/pre-commit"},
        Case{"protected_parent", {file(".git/hooks")}, ImportRefusal::kPermissionDenied, ".git/hooks"},
        Case{"protected_via_dot", {file("./.git//hooks/x")}, ImportRefusal::kPermissionDenied, "./.git//hooks/x"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ImportCheckerTest, NormalTreesPassWithNormalisedNamesAndModesMasked) {
  ImportChecker c({}, SymlinkTargets::kBeneathDestination, protectGitHooks());
  auto plan = [&](ArchiveEntry e) { return std::get<PlannedEntry>(c.admit(e)); };
  EXPECT_EQ(plan(dir("./")).rel, "");
  EXPECT_EQ(plan(dir("./src/")).rel, "src");
  auto f = plan(ArchiveEntry{.name = "./src//main.c", .type = T::kFile, .size = 3, .mode = 04755});
  EXPECT_EQ(f.rel, "src/main.c");
  EXPECT_EQ(f.mode, 0755u);  // set-id and sticky bits never survive
  EXPECT_FALSE(f.replaces);
  EXPECT_EQ(plan(sym("node_modules/.bin/tool", "../tool/bin/tool")).target, "../tool/bin/tool");
  EXPECT_EQ(plan(sym("self", ".")).rel, "self");
  EXPECT_EQ(plan(sym("src/up", "..")).rel, "src/up");
  EXPECT_EQ(plan(sym("deep", "src/main.c")).rel, "deep");
  EXPECT_EQ(plan(sym("via_link", "src/up/src/main.c")).rel, "via_link");  // through a link of the archive, no ".."
  EXPECT_EQ(plan(hard("src/again.c", "src/main.c")).target, "src/main.c");
  EXPECT_EQ(plan(hard("again2", "./src/again.c")).target, "src/again.c");
  EXPECT_TRUE(plan(file("src/main.c")).replaces);  // a later file replaces the earlier one
  EXPECT_EQ(plan(dir("src")).rel, "src");           // a directory twice is fine
  EXPECT_EQ(c.implicitDirectories(), (std::vector<std::string>{"node_modules", "node_modules/.bin"}));
  EXPECT_EQ(plan(file(".git/config")).rel, ".git/config");  // only hooks are protected by this check
}

// A symlink entry is decided as a symlink: at a name whose contents are
// protected (.claude) it would redirect them, where a file there would not.
TEST(ImportCheckerTest, ASymlinkEntryIsDecidedAsASymlink) {
  ImportChecker c({}, SymlinkTargets::kBeneathDestination, [](const std::string& rel, ObjectKind kind) {
    return rel == ".claude" && kind == ObjectKind::kSymlink ? std::optional<std::string>("protected name") : std::nullopt;
  });
  EXPECT_TRUE(std::holds_alternative<PlannedEntry>(c.admit(dir("cl"))));
  auto link = c.admit(sym(".claude", "cl"));
  ASSERT_TRUE(std::holds_alternative<Refusal>(link));
  EXPECT_EQ(std::get<Refusal>(link).reason, ImportRefusal::kPermissionDenied);
  ImportChecker other({}, SymlinkTargets::kBeneathDestination, [](const std::string& rel, ObjectKind kind) {
    return rel == ".claude" && kind == ObjectKind::kSymlink ? std::optional<std::string>("protected name") : std::nullopt;
  });
  EXPECT_TRUE(std::holds_alternative<PlannedEntry>(other.admit(file(".claude"))));
}

TEST(ImportCheckerTest, RestoredLinksMayPointAnywhereButEverythingElseHolds) {
  ImportChecker c({}, SymlinkTargets::kAsTheSandboxMadeThem, protectGitHooks());
  EXPECT_TRUE(std::holds_alternative<PlannedEntry>(c.admit(sym("venv/bin/python", "/usr/bin/python3"))));
  EXPECT_TRUE(std::holds_alternative<PlannedEntry>(c.admit(sym("up", "../../x"))));
  auto through = c.admit(file("up/x"));
  ASSERT_TRUE(std::holds_alternative<Refusal>(through));
  EXPECT_EQ(std::get<Refusal>(through).reason, ImportRefusal::kThroughSymlink);
  auto hooks = c.admit(file(".git/hooks/post-checkout"));
  ASSERT_TRUE(std::holds_alternative<Refusal>(hooks));
  EXPECT_EQ(std::get<Refusal>(hooks).reason, ImportRefusal::kPermissionDenied);
}

TEST(ImportCheckerTest, EveryRefusalHasADistinctName) {
  std::set<std::string_view> names;
  for (auto r : kAllImportRefusals) {
    EXPECT_NE(importRefusalName(r), "unknown");
    EXPECT_TRUE(names.insert(importRefusalName(r)).second);
  }
}

}  // namespace
}  // namespace stockade::workspace
