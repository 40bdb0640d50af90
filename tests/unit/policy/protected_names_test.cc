// The protected-name table and its matcher, without a filesystem.
#include "policy/protected_names.h"

#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>

namespace stockade::policy {
namespace {

ProtectedNameMatcher tableMatcher() { return ProtectedNameMatcher(tableProtectedNames()); }

struct Case {
  const char* path;
  bool isDirectory;
  const char* protectedBy;  // nullptr: not protected
};
// The case in test names and messages (not the struct's bytes).
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.path << (c.isDirectory ? " (directory)" : "") << " -> " << (c.protectedBy ? c.protectedBy : "not protected");
}

class ProtectedNameTest : public ::testing::TestWithParam<Case> {};

TEST_P(ProtectedNameTest, DecidesByNameAtAnyDepth) {
  const Case& c = GetParam();
  auto m = tableMatcher();
  const ProtectedName* hit = m.protecting(c.path, c.isDirectory);
  if (!c.protectedBy) {
    EXPECT_EQ(hit, nullptr) << c.path << " is protected by " << (hit ? hit->text() : "");
  } else {
    ASSERT_NE(hit, nullptr) << c.path << " should be protected by " << c.protectedBy;
    EXPECT_EQ(hit->text(), c.protectedBy) << c.path;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProtectedNameTest,
    ::testing::Values(
        // rc files at any depth, and what is beneath one
        Case{"/w/.bashrc", false, ".bashrc"}, Case{"/w/a/b/c/.bashrc", false, ".bashrc"},
        Case{"/w/.bashrc/inner", false, ".bashrc"}, Case{"/w/bashrc", false, nullptr},
        Case{"/w/.bashrc.bak", false, nullptr}, Case{"/w/x.bashrc", false, nullptr},
        Case{"/w/.envrc", false, ".envrc"}, Case{"/w/.npmrc", false, ".npmrc"},
        // git: entries of a git directory, named as such whether or not HEAD exists
        Case{"/w/.git/hooks", true, ".git/hooks"}, Case{"/w/.git/hooks/pre-commit", false, ".git/hooks"},
        Case{"/w/sub/deep/.git/hooks/post-checkout", false, ".git/hooks"},
        Case{"/w/.git/config", false, ".git/config"}, Case{"/w/.git/config.worktree", false, ".git/config.worktree"},
        Case{"/w/.git/commondir", false, ".git/commondir"}, Case{"/w/.git/info/attributes", false, ".git/info"},
        Case{"/w/.git/objects/ab/cdef", false, nullptr}, Case{"/w/.git/HEAD", false, nullptr},
        Case{"/w/.git/refs/heads/config", false, nullptr}, Case{"/w/.git/index", false, nullptr},
        Case{"/w/.git", true, nullptr}, Case{"/w/src/config", false, nullptr}, Case{"/w/src/hooks/x", false, nullptr},
        Case{"/w/git/hooks/x", false, nullptr},
        // submodule git directories, nested, with a slash in the name
        Case{"/w/.git/modules/lib/hooks/pre-commit", false, ".git/modules/**/hooks"},
        Case{"/w/.git/modules/a/b/config", false, ".git/modules/**/config"},
        Case{"/w/.git/modules/a/modules/b/hooks", true, ".git/modules/**/hooks"},
        Case{"/w/.git/modules/lib/commondir", false, ".git/modules/**/commondir"},
        Case{"/w/.git/modules/lib/objects/pack/x", false, nullptr},
        // linked worktrees
        Case{"/w/.git/worktrees/wt1/commondir", false, ".git/worktrees/*/commondir"},
        Case{"/w/.git/worktrees/wt1/HEAD", false, nullptr},
        Case{"/w/.git/worktrees/wt1/modules/sub/config", false, ".git/worktrees/*/modules/**/config"},
        Case{"/w/.git/worktrees/wt1/modules/a/b/hooks/pre-commit", false, ".git/worktrees/*/modules/**/hooks"},
        Case{"/w/.git/worktrees/wt1/modules/sub/objects/ab", false, nullptr},
        // a .git that is not a directory redirects git; a .git directory does not
        Case{"/w/sub/.git", false, ".git (not a directory)"}, Case{"/w/sub/.git", true, nullptr},
        Case{"/w/.gitmodules", false, ".gitmodules"},
        // the tree's own ancestors count: a tree at ~/.git/hooks is protected as a whole
        Case{"/home/u/.git/hooks/x", false, ".git/hooks"},
        Case{"/home/u/.config/git/config", false, ".config/git"}, Case{"/home/u/.config/other", false, nullptr},
        // editors and agents
        Case{"/w/.vscode/tasks.json", false, ".vscode"}, Case{"/w/.idea", true, ".idea"},
        Case{"/w/.claude/settings.json", false, ".claude/settings.json"},
        Case{"/w/.claude/commands/x.md", false, ".claude/commands"}, Case{"/w/.claude/notes.md", false, nullptr},
        Case{"/w/.mcp.json", false, ".mcp.json"}, Case{"/w/.husky/pre-commit", false, ".husky"},
        Case{"/w/.pre-commit-config.yaml", false, ".pre-commit-config.yaml"},
        // every spelling a case-insensitive directory takes for the name (name_fold.h), on any filesystem
        Case{"/w/.BashRC", false, ".bashrc"}, Case{"/w/.GIT/hooks/pre-commit", false, ".git/hooks"},
        Case{"/w/.git/HOOKS", true, ".git/hooks"}, Case{"/w/.VSCode/tasks.json", false, ".vscode"},
        Case{"/w/.ba\u017fhrc", false, ".bashrc"}, Case{"/w/.bashrc.", false, ".bashrc"},
        Case{"/w/\u200b.envrc", false, ".envrc"}, Case{"/w/sub/.Git", false, ".git (not a directory)"},
        Case{"/w/.GIT/Modules/x/CONFIG", false, ".git/modules/**/config"},
        Case{"/w/.Claude/Settings.JSON", false, ".claude/settings.json"}, Case{"/w/.BashRC.bak", false, nullptr},
        // programs and code other tools run from the directory
        Case{"/w/crate/.cargo/config.toml", false, ".cargo/config.toml"}, Case{"/w/.cargo/registry", true, nullptr},
        Case{"/w/.tmux.conf", false, ".tmux.conf"}, Case{"/w/.gdbinit", false, ".gdbinit"},
        Case{"/w/.rprofile", false, ".Rprofile"}, Case{"/w/.mvn/extensions.xml", false, ".mvn"},
        Case{"/w/.ipython/profile_default/startup/a.py", false, ".ipython"}));

struct ContextCase {
  const char* path;
  bool isContext;
};
void PrintTo(const ContextCase& c, std::ostream* os) { *os << c.path << (c.isContext ? " -> context" : " -> none"); }

class ProtectedContextTest : public ::testing::TestWithParam<ContextCase> {};

TEST_P(ProtectedContextTest, ADirectoryWhoseNameMakesWhatIsBeneathItProtectedIsAContext) {
  auto m = tableMatcher();
  EXPECT_EQ(m.contextOf(GetParam().path) != nullptr, GetParam().isContext) << GetParam().path;
}

INSTANTIATE_TEST_SUITE_P(Table, ProtectedContextTest,
                         ::testing::Values(ContextCase{"/w/.git", true}, ContextCase{"/w/sub/.git", true},
                                           ContextCase{"/w/.git/modules", true},
                                           ContextCase{"/w/.git/modules/a", true},
                                           ContextCase{"/w/.git/modules/a/b/c", true},
                                           ContextCase{"/w/.git/worktrees", true},
                                           ContextCase{"/w/.git/worktrees/wt1", true},
                                           ContextCase{"/w/.git/objects", false}, ContextCase{"/w/.git/refs", false},
                                           ContextCase{"/w/.claude", true}, ContextCase{"/w/.config", true},
                                           ContextCase{"/w/src", false}, ContextCase{"/w/.vscode", false},
                                           ContextCase{"/w", false}, ContextCase{"/w/.GIT", true},
                                           ContextCase{"/w/.Git/MODULES/a", true}));

TEST(ProtectedNameTableTest, EveryEntryHasAReasonAndAPatternOfItsOwn) {
  std::set<std::string> seen;
  for (const auto& e : protectedNameTable()) {
    EXPECT_GT(std::string(e.reason).size(), 10u) << e.pattern;
    EXPECT_TRUE(seen.insert(ProtectedName{e.pattern, e.nonDirectoryOnly}.text()).second) << e.pattern;
    std::string p = e.pattern;
    EXPECT_FALSE(p.empty() || p.front() == '/' || p.back() == '/' || p.find("//") != std::string::npos) << p;
  }
  for (const auto& n : tableProtectedNames()) EXPECT_FALSE(protectedNameReason(n).empty()) << n.text();
  EXPECT_TRUE(protectedNameReason(ProtectedName{".githooks", false}).empty());
}

TEST(ProtectedNameTableTest, TheIssuesGitNamesAreInTheTable) {
  auto m = tableMatcher();
  for (const char* p : {"/w/.git/hooks", "/w/.git/config", "/w/.git/config.worktree", "/w/.git/commondir",
                        "/w/.git/info", "/w/.git/modules/x/hooks", "/w/.git/modules/x/config", "/w/.gitmodules"})
    EXPECT_NE(m.protecting(p, false), nullptr) << p;
}

// Startup files of tools that read them from the directory they start in
// (or from a home that is a writable tree) and run what they say: each is
// protected at any depth, its look-alike neighbours are not.
TEST(ProtectedNameTableTest, DirectoryStartupFilesOfDebuggersVersionManagersEditorsAndAgentsAreInTheTable) {
  auto m = tableMatcher();
  for (const char* p : {"/w/p/.pdbrc", "/w/p/.perldb", "/w/p/.ocamlinit", "/w/p/.octaverc", "/w/p/.tool-versions",
                        "/w/p/rust-toolchain.toml", "/w/p/rust-toolchain", "/w/p/mise/config.toml",
                        "/w/p/.mise/config.toml", "/w/p/.direnvrc", "/w/h/.config/direnv/direnvrc",
                        "/w/h/.config/hg/hgrc", "/w/h/.gnupg/gpg-agent.conf", "/w/h/.vim/plugin/x.vim",
                        "/w/h/.config/vim/vimrc", "/w/h/.emacs", "/w/h/.emacs.el", "/w/h/.emacs.d/init.el",
                        "/w/h/.config/emacs/early-init.el", "/w/p/opencode.json", "/w/p/opencode.jsonc",
                        "/w/p/.opencode/plugin/x.ts", "/w/p/.roo/mcp.json", "/w/p/.kiro/settings/mcp.json",
                        "/w/p/.kiro/hooks/x.kiro.hook", "/w/p/.kiro/agents/a.json", "/w/h/.local/bin/git",
                        "/w/h/.local/lib/python3.11/site-packages/x.pth",
                        "/w/h/.local/share/nvim/site/plugin/x.lua"})
    EXPECT_NE(m.protecting(p, false), nullptr) << p;
  for (const char* p : {"/w/p/pdbrc", "/w/p/.pdbrc.example", "/w/p/tool-versions", "/w/p/rust-toolchain.md",
                        "/w/p/mise/tasks.toml", "/w/p/.mise/tasks/build", "/w/p/vim/plugin/x.vim",
                        "/w/p/emacs.d/init.el", "/w/p/.config/other/x", "/w/p/gnupg/x",
                        "/w/p/.roo/rules/x.md", "/w/p/.kiro/specs/feature.md", "/w/p/opencode.md",
                        "/w/p/.venv/lib/python3.11/site-packages/x.pth", "/w/p/.venv/bin/python",
                        "/w/h/.local/share/other/x", "/w/h/.local/lib/x"})
    EXPECT_EQ(m.protecting(p, false), nullptr) << p;
}

TEST(ProtectedNameMatcherTest, AWildcardFirstComponentMatchesAnyName) {
  ProtectedNameMatcher m({ProtectedName{"*/secret", false}});
  EXPECT_NE(m.protecting("/w/a/secret", false), nullptr);
  EXPECT_NE(m.protecting("/w/a/secret/deeper", true), nullptr);
  EXPECT_EQ(m.protecting("/secret", false), nullptr);  // needs one component before it
  EXPECT_EQ(m.protecting("/w/a/other", false), nullptr);
}

TEST(ProtectedNameMatcherTest, AnEmptyPatternProtectsNothing) {
  ProtectedNameMatcher m({ProtectedName{"", false}, ProtectedName{"/", false}});
  EXPECT_EQ(m.protecting("/w/anything", false), nullptr);
  EXPECT_EQ(m.contextOf("/w"), nullptr);
}

// A path from the child is at most PATH_MAX long: about 300 of these.
TEST(ProtectedNameMatcherTest, APathMaxOfRepeatedContextNamesIsDecided) {
  std::string path;
  for (int i = 0; i < 300; ++i) path += "/.git/modules";
  auto m = tableMatcher();
  EXPECT_EQ(m.protecting(path, true), nullptr);
  EXPECT_NE(m.contextOf(path), nullptr);
  EXPECT_NE(m.protecting(path + "/hooks", true), nullptr);
}

}  // namespace
}  // namespace stockade::policy
