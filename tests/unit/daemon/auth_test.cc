#include "src/daemon/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/temp_dir.h"

namespace stockade::daemon {
namespace {

TEST(AuthTest, ConstantTimeEqualComparesWholeValues) {
  EXPECT_TRUE(constantTimeEqual("", ""));
  EXPECT_TRUE(constantTimeEqual("secret-token", "secret-token"));
  EXPECT_FALSE(constantTimeEqual("secret-token", "secret-tokeN"));
  EXPECT_FALSE(constantTimeEqual("secret-token", "secret-token2"));
  EXPECT_FALSE(constantTimeEqual("secret-token", "secret-toke"));
  EXPECT_FALSE(constantTimeEqual("", "x"));
  EXPECT_FALSE(constantTimeEqual(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(AuthTest, TokenCheckNeedsTheExactBearerToken) {
  AuthPolicy p;
  p.token = "0123456789abcdef";
  EXPECT_EQ(checkToken(p, std::nullopt)->code, ApiCode::kUnauthorized);
  EXPECT_EQ(checkToken(p, "Basic 0123456789abcdef")->code, ApiCode::kUnauthorized);
  EXPECT_EQ(checkToken(p, "Bearer 0123456789abcdeF")->code, ApiCode::kUnauthorized);
  EXPECT_EQ(checkToken(p, "Bearer 0123456789abcdef ")->code, ApiCode::kUnauthorized);
  EXPECT_EQ(checkToken(p, "Bearer")->code, ApiCode::kUnauthorized);
  EXPECT_FALSE(checkToken(p, "Bearer 0123456789abcdef"));
  EXPECT_FALSE(checkToken(p, "bearer 0123456789abcdef"));
  EXPECT_FALSE(checkToken(AuthPolicy{}, std::nullopt)) << "no token configured: the socket's mode guards";
}

TEST(AuthTest, OriginIsRefusedUnlessListed) {
  AuthPolicy p;
  EXPECT_FALSE(checkOrigin(p, std::nullopt));
  EXPECT_EQ(checkOrigin(p, "http://localhost:3000")->code, ApiCode::kPermissionDenied);
  EXPECT_EQ(checkOrigin(p, "null")->code, ApiCode::kPermissionDenied);
  EXPECT_EQ(checkOrigin(p, "")->code, ApiCode::kPermissionDenied);
  p.allowedOrigins = {"http://localhost:3000"};
  EXPECT_FALSE(checkOrigin(p, "http://localhost:3000"));
  EXPECT_EQ(checkOrigin(p, "http://localhost:3000.evil.example")->code, ApiCode::kPermissionDenied);
}

TEST(AuthTest, TokenFilesMustBePrivateAndHoldALongToken) {
  testing::TempDir dir;
  std::string good = dir.file("good", "0123456789abcdef0123\n");
  ::chmod(good.c_str(), 0600);
  auto r = readTokenFile(good);
  ASSERT_EQ(r.index(), 0u) << std::get<1>(r);
  EXPECT_EQ(std::get<0>(r), "0123456789abcdef0123");

  std::string open = dir.file("open", "0123456789abcdef0123\n");
  ::chmod(open.c_str(), 0644);
  r = readTokenFile(open);
  ASSERT_EQ(r.index(), 1u);
  EXPECT_NE(std::get<1>(r).find("chmod 600"), std::string::npos) << std::get<1>(r);

  std::string shortToken = dir.file("short", "abc\n");
  ::chmod(shortToken.c_str(), 0600);
  EXPECT_EQ(readTokenFile(shortToken).index(), 1u);
  EXPECT_EQ(readTokenFile(dir / "missing").index(), 1u);
  std::string spaced = dir.file("spaced", "0123456789 abcdef0123\n");
  ::chmod(spaced.c_str(), 0600);
  EXPECT_EQ(readTokenFile(spaced).index(), 1u);
}

}  // namespace
}  // namespace stockade::daemon
