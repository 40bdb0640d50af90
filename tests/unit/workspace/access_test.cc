#include "src/workspace/access.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace stockade::workspace {
namespace {

using stockade::testing::TempDir;

TEST(GlobMatchesTest, ComponentsAndDoubleStar) {
  EXPECT_TRUE(globMatches("/w/**/*.pem", "/w/a.pem"));
  EXPECT_TRUE(globMatches("/w/**/*.pem", "/w/x/y/a.pem"));
  EXPECT_FALSE(globMatches("/w/**/*.pem", "/w/x/a.pem.txt"));
  EXPECT_FALSE(globMatches("/w/*.pem", "/w/x/a.pem"));
  EXPECT_TRUE(globMatches("/w/se?ret", "/w/secret"));
  EXPECT_FALSE(globMatches("/w/secret", "/w/secret/x"));
}

class AccessRulesTest : public ::testing::Test {
 protected:
  AccessRules rules(const std::string& json) {
    auto r = derive(SandboxPolicy::fromJson(json), {.home = t_.dir("home"), .cwd = ws_, .tmpdir = std::nullopt});
    if (auto* e = std::get_if<PolicyError>(&r)) ADD_FAILURE() << e->text();
    return AccessRules(std::get<DerivedRules>(std::move(r)));
  }
  TempDir t_;
  std::string ws_ = t_.dir("ws");
};

TEST_F(AccessRulesTest, ReadDeniesNameTheRuleAndCarveOutsHold) {
  t_.dir("ws/secret/open");
  auto r = rules(R"({"filesystem":{"denyRead":["secret"],"allowRead":["secret/open"],"allowWrite":["."],"denyWrite":[]}})");
  EXPECT_EQ(r.readRefusal(ws_ + "/secret/key"), "filesystem.denyRead \"" + ws_ + "/secret\"");
  EXPECT_EQ(r.readRefusal(ws_ + "/secret/open/x"), std::nullopt);
  EXPECT_EQ(r.readRefusal(ws_ + "/other"), std::nullopt);
}

TEST_F(AccessRulesTest, ADenyReadGlobCoversFilesMadeAfterDerivation) {
  auto r = rules(R"({"filesystem":{"denyRead":["**/*.pem"],"allowRead":[],"allowWrite":["."],"denyWrite":[]}})");
  // No .pem existed when the rules were derived: the glob still decides.
  EXPECT_EQ(r.readRefusal(ws_ + "/new/key.pem"), "filesystem.denyRead \"" + ws_ + "/**/*.pem\"");
  EXPECT_EQ(r.readRefusal(ws_ + "/key.pem.txt"), std::nullopt);
}

TEST_F(AccessRulesTest, WritesOutsideAllowWriteOrUnderDenyWriteAreRefusedNamingTheRule) {
  auto r = rules(R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":["./out"],"denyWrite":["out/.env"]}})");
  EXPECT_EQ(r.writeRefusal(ws_ + "/out/a", WriteOp::kCreate, ObjectKind::kOther), std::nullopt);
  EXPECT_EQ(r.writeRefusal(ws_ + "/out/.env", WriteOp::kCreate, ObjectKind::kOther),
            "filesystem.denyWrite \"" + ws_ + "/out/.env\"");
  EXPECT_EQ(r.writeRefusal(ws_ + "/a", WriteOp::kCreate, ObjectKind::kOther),
            "not inside any filesystem.allowWrite path");
}

TEST_F(AccessRulesTest, MandatoryDeniesFoundOnDiskAreRefused) {
  t_.dir("ws/.git/hooks");
  t_.file("ws/.git/HEAD", "ref: refs/heads/main\n");  // what makes .git a git directory
  t_.file("ws/.git/config", "");
  auto r = rules(R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":["."],"denyWrite":[]}})");
  EXPECT_NE(r.writeRefusal(ws_ + "/.git/hooks/pre-commit", WriteOp::kCreate, ObjectKind::kOther), std::nullopt);
  EXPECT_NE(r.writeRefusal(ws_ + "/.git/config", WriteOp::kReplace, ObjectKind::kOther), std::nullopt);
  EXPECT_EQ(r.writeRefusal(ws_ + "/src/main.c", WriteOp::kCreate, ObjectKind::kOther), std::nullopt);
}

}  // namespace
}  // namespace stockade::workspace
