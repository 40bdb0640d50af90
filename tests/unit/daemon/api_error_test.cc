#include "src/daemon/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace stockade::daemon {
namespace {

TEST(ApiErrorTest, EveryCodeHasAUniqueNameAndAnHttpErrorStatus) {
  std::set<std::string_view> names;
  for (ApiCode c : kAllApiCodes) {
    EXPECT_FALSE(apiCodeName(c).empty());
    EXPECT_TRUE(names.insert(apiCodeName(c)).second) << apiCodeName(c);
    EXPECT_GE(apiCodeStatus(c), 400) << apiCodeName(c);
    EXPECT_LE(apiCodeStatus(c), 599) << apiCodeName(c);
  }
}

TEST(ApiErrorTest, StatusesAreThoseOfTheContract) {
  EXPECT_EQ(apiCodeStatus(ApiCode::kInvalidArgument), 400);
  EXPECT_EQ(apiCodeStatus(ApiCode::kUnauthorized), 401);
  EXPECT_EQ(apiCodeStatus(ApiCode::kNotFound), 404);
  EXPECT_EQ(apiCodeName(ApiCode::kNotFound), "not_found");
  EXPECT_EQ(apiCodeStatus(ApiCode::kStaleEpoch), 409);
  EXPECT_EQ(apiCodeName(ApiCode::kStaleEpoch), "stale_epoch");
  EXPECT_EQ(apiCodeStatus(ApiCode::kTooLarge), 413);
  EXPECT_EQ(apiCodeName(ApiCode::kTooLarge), "too_large");
  EXPECT_EQ(apiCodeStatus(ApiCode::kPolicyConflict), 422);
  EXPECT_EQ(apiCodeStatus(ApiCode::kUnavailable), 503);
  EXPECT_EQ(apiCodeName(ApiCode::kUnavailable), "unavailable");
}

TEST(ApiErrorTest, LibraryCodesKeepTheirSeedNames) {
  for (ErrorCode c : kAllErrorCodes) EXPECT_EQ(apiCodeName(apiCodeFor(c)), errorCodeName(c));
}

TEST(ApiErrorTest, WorkspaceCodesKeepTheirSeedNames) {
  for (WorkspaceErrorCode c : kAllWorkspaceErrorCodes)
    EXPECT_EQ(apiCodeName(apiCodeFor(c)), workspaceErrorCodeName(c));
}

TEST(ApiErrorTest, JsonHasCodeAndMessageAndSurvivesInvalidUtf8) {
  ApiError e{ApiCode::kInvalidArgument, std::string("bad \xff byte")};
  auto j = nlohmann::json::parse(e.toJson());
  EXPECT_EQ(j["code"], "invalid_argument");
  EXPECT_EQ(j.size(), 2u);
  EXPECT_NE(j["message"].get<std::string>().find("bad"), std::string::npos);
}

TEST(ApiErrorTest, QuoteValueCutsLongValues) {
  std::string v = quoteValue(std::string(1000, 'a'));
  EXPECT_LT(v.size(), 140u);
  EXPECT_TRUE(v.ends_with("..."));
}

}  // namespace
}  // namespace stockade::daemon
