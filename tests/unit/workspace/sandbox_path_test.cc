#include "src/workspace/sandbox_path.h"

#include <gtest/gtest.h>

#include <set>

namespace stockade::workspace {
namespace {

std::string relOf(std::string_view p) {
  auto r = parseSandboxPath(p);
  if (auto* e = std::get_if<WorkspaceError>(&r)) return "ERROR " + e->message;
  return std::get<SandboxPath>(r).rel;
}

TEST(SandboxPathTest, AcceptsTheWorkspaceAndPathsBeneathIt) {
  EXPECT_EQ(relOf("/workspace"), "");
  EXPECT_EQ(relOf("/workspace/"), "");
  EXPECT_EQ(relOf("/workspace/a"), "a");
  EXPECT_EQ(relOf("/workspace/a/b/c.txt"), "a/b/c.txt");
  EXPECT_EQ(relOf("/workspace//a/./b/"), "a/b");
  EXPECT_EQ(relOf("/workspace/a b/\xc3\xa9\\x"), "a b/\xc3\xa9\\x");  // any bytes but NUL and '/' make a name
  EXPECT_EQ(relOf("/workspace/...") , "...");
}

struct Hostile {
  const char* name;
  std::string path;
  const char* why;
};

class HostileSpellingTest : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileSpellingTest, IsInvalidPathNamingTheValueAndTheFix) {
  auto r = parseSandboxPath(GetParam().path, "path");
  ASSERT_TRUE(std::holds_alternative<WorkspaceError>(r)) << GetParam().name;
  const auto& e = std::get<WorkspaceError>(r);
  EXPECT_EQ(e.code, WorkspaceErrorCode::kInvalidPath);
  EXPECT_EQ(e.codeName(), "invalid_path");
  EXPECT_TRUE(e.message.starts_with("path: \"")) << e.message;
  EXPECT_NE(e.message.find(GetParam().why), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("beneath /workspace"), std::string::npos) << e.message;
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, HostileSpellingTest,
    ::testing::Values(Hostile{"dotdot", "/workspace/../etc/passwd", "\"..\""},
                      Hostile{"dotdot_deep", "/workspace/a/b/../../../etc", "\"..\""},
                      Hostile{"dotdot_inside", "/workspace/a/../b", "\"..\""},
                      Hostile{"dotdot_trailing", "/workspace/..", "\"..\""},
                      Hostile{"absolute_elsewhere", "/etc/passwd", "outside the workspace"},
                      Hostile{"prefix_lookalike", "/workspaces/x", "outside the workspace"},
                      Hostile{"prefix_lookalike2", "/workspace..", "outside the workspace"},
                      Hostile{"root", "/", "outside the workspace"},
                      Hostile{"relative", "workspace/a", "not an absolute path"},
                      Hostile{"empty", "", "not an absolute path"},
                      Hostile{"nul", std::string("/workspace/a\0/../../etc", 23), "NUL byte"},
                      Hostile{"nul_end", std::string("/workspace/a\0", 13), "NUL byte"},
                      Hostile{"long_component", "/workspace/" + std::string(256, 'a'), "longer than 255"},
                      Hostile{"long_path", "/workspace/" + std::string(5000, 'a'), "longer than 4095"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(SandboxPathTest, QuoteValueEscapesControlBytesAndQuotes) {
  EXPECT_EQ(quoteValue(std::string("a\0b\"\n\xff", 6)), "\"a\\x00b\\\"\\x0a\\xff\"");
  EXPECT_EQ(quoteValue(std::string(300, 'x')).size(), 200u + 5u);
}

TEST(SandboxPathTest, ParentAndLeaf) {
  SandboxPath p{"a/b/c"};
  EXPECT_EQ(p.leaf(), "c");
  EXPECT_EQ(p.parent(), "a/b");
  EXPECT_EQ(p.text(), "/workspace/a/b/c");
  SandboxPath top{"x"};
  EXPECT_EQ(top.parent(), "");
  EXPECT_EQ(SandboxPath{}.text(), "/workspace");
}

TEST(WorkspaceErrorTest, EveryCodeHasItsSeedNameOnce) {
  std::set<std::string_view> names;
  for (auto c : kAllWorkspaceErrorCodes) {
    auto n = workspaceErrorCodeName(c);
    EXPECT_NE(n, "unknown");
    EXPECT_TRUE(names.insert(n).second) << n;
  }
  EXPECT_EQ(names.size(), 15u);
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kLimitExceeded), "SANDBOX_LIMIT_EXCEEDED");
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kConflict), "SANDBOX_CONFLICT");
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kDataCorrupted), "SANDBOX_DATA_CORRUPTED");
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kFailedOperation), "SANDBOX_FAILED_OPERATION");
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kNotQuiescent), "not_quiescent");
  EXPECT_EQ(workspaceErrorCodeName(WorkspaceErrorCode::kIsDirectory), "is_directory");
}

}  // namespace
}  // namespace stockade::workspace
