#include "stockade/error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace stockade {
namespace {

TEST(ErrorTest, EveryCodeHasItsPublicSeedName) {
  std::set<std::string> names;
  for (ErrorCode code : kAllErrorCodes) {
    std::string name(errorCodeName(code));
    EXPECT_TRUE(name.starts_with("E_SANDBOX_")) << name;
    EXPECT_NE(name, "E_SANDBOX_UNKNOWN");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(kAllErrorCodes)) << "names must be distinct";
  EXPECT_EQ(errorCodeName(ErrorCode::kPolicyConflict), "E_SANDBOX_POLICY_CONFLICT");
  EXPECT_EQ(errorCodeName(ErrorCode::kNarrowingUnsupported), "E_SANDBOX_NARROWING_UNSUPPORTED");
  EXPECT_EQ(errorCodeName(ErrorCode::kNetworkGrantUnsupported), "E_SANDBOX_NETWORK_GRANT_UNSUPPORTED");
  EXPECT_EQ(errorCodeName(ErrorCode::kPolicyDrift), "E_SANDBOX_POLICY_DRIFT");
  EXPECT_EQ(errorCodeName(ErrorCode::kNotInitialized), "E_SANDBOX_NOT_INITIALIZED");
}

TEST(ErrorTest, SandboxErrorCarriesCodeAndNameInItsMessage) {
  SandboxError err(ErrorCode::kPolicyDrift, "filesystem.allowWrite: \"/w\" now resolves to \"/etc\"");
  EXPECT_EQ(err.code(), ErrorCode::kPolicyDrift);
  EXPECT_EQ(err.codeName(), "E_SANDBOX_POLICY_DRIFT");
  EXPECT_NE(std::string(err.what()).find("/etc"), std::string::npos);
}

}  // namespace
}  // namespace stockade
