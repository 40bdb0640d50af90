#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stockade/rules.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using testing::TempDir;

class NarrowingTest : public ::testing::Test {
 protected:
  DerivedRules rules(const std::string& json) {
    auto r = derive(SandboxPolicy::fromJson(json), {.home = t_ / "home", .cwd = t_ / "work", .tmpdir = std::nullopt});
    if (auto* e = std::get_if<PolicyError>(&r)) throw std::runtime_error(e->text());
    return std::get<DerivedRules>(std::move(r));
  }
  // Expects `candidate` to widen `base` on `axis`, naming `entry`.
  void expectWidens(const std::string& base, const std::string& candidate, const std::string& axis,
                    const std::string& entry) {
    auto w = narrowing(rules(base), rules(candidate));
    ASSERT_TRUE(w.has_value()) << candidate << " should widen " << base;
    EXPECT_EQ(w->axis, axis) << w->message;
    EXPECT_EQ(w->entry, entry) << w->message;
    EXPECT_NE(w->message.find(axis + ": \""), std::string::npos) << w->message;
  }
  void expectNarrower(const std::string& base, const std::string& candidate) {
    auto w = narrowing(rules(base), rules(candidate));
    EXPECT_FALSE(w.has_value()) << candidate << " should narrow " << base << ": " << w->message;
  }

  TempDir t_;
  std::string work_ = t_.dir("work");
  std::string home_ = t_.dir("home");
};

TEST_F(NarrowingTest, EqualPoliciesAreNarrower) {
  std::string p = R"({"filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."]},"network":{"allowedDomains":["github.com"]},
                      "env":{"allow":["PATH"]},"limits":{"pids":10}})";
  expectNarrower(p, p);
}

// ---- reads: deny-then-allow ----
TEST_F(NarrowingTest, AddingAReadDenyNarrows) {
  expectNarrower(R"({"filesystem":{"denyRead":["~/.ssh"]}})", R"({"filesystem":{"denyRead":["~/.ssh","/etc/shadow"]}})");
}

TEST_F(NarrowingTest, DroppingAReadDenyWidensNamingThePath) {
  expectWidens(R"({"filesystem":{"denyRead":["~/.ssh","/etc/shadow"]}})", R"({"filesystem":{"denyRead":["~/.ssh"]}})",
               "filesystem.denyRead", "/etc/shadow");
}

TEST_F(NarrowingTest, AddingAReadCarveOutInsideADeniedTreeWidens) {
  expectWidens(R"({"filesystem":{"denyRead":["~/.ssh"]}})",
               R"({"filesystem":{"denyRead":["~/.ssh"],"allowRead":["~/.ssh/known_hosts"]}})", "filesystem.allowRead",
               home_ + "/.ssh/known_hosts");
}

TEST_F(NarrowingTest, RemovingACarveOutNarrows) {
  expectNarrower(R"({"filesystem":{"denyRead":["~/.ssh"],"allowRead":["~/.ssh/known_hosts"]}})",
                 R"({"filesystem":{"denyRead":["~/.ssh"]}})");
}

TEST_F(NarrowingTest, DenyingAParentOfABaseDenyNarrows) {
  expectNarrower(R"({"filesystem":{"denyRead":["~/.ssh"]}})", R"({"filesystem":{"denyRead":["~"]}})");
}

TEST_F(NarrowingTest, ReplacingADenyWithOneOfItsChildrenWidens) {
  expectWidens(R"({"filesystem":{"denyRead":["~/.ssh"]}})", R"({"filesystem":{"denyRead":["~/.ssh/id_rsa"]}})",
               "filesystem.denyRead", home_ + "/.ssh");
}

TEST_F(NarrowingTest, DroppingADenyGlobWidensEvenWithNoMatches) {
  expectWidens(R"({"filesystem":{"denyRead":["**/*.pem"]}})", R"({"filesystem":{"denyRead":[]}})", "filesystem.denyRead",
               work_ + "/**/*.pem");
}

// ---- writes: allow-only ----
TEST_F(NarrowingTest, AllowWriteOutsideBaselineIsRejectedNamingTheAxis) {
  expectWidens(R"({"filesystem":{"allowWrite":["."]}})", R"({"filesystem":{"allowWrite":[".","/srv/data"]}})",
               "filesystem.allowWrite", "/srv/data");
  auto w = narrowing(rules(R"({"filesystem":{"allowWrite":["."]}})"), rules(R"({"filesystem":{"allowWrite":["/srv/data"]}})"));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->message, "filesystem.allowWrite: \"/srv/data\" is not inside any writable path of the base policy");
}

TEST_F(NarrowingTest, WritingASubdirectoryOfABaseWriteNarrows) {
  expectNarrower(R"({"filesystem":{"allowWrite":["."]}})", R"({"filesystem":{"allowWrite":["build"]}})");
}

TEST_F(NarrowingTest, AddingAWriteDenyNarrows) {
  expectNarrower(R"({"filesystem":{"allowWrite":["."]}})", R"({"filesystem":{"allowWrite":["."],"denyWrite":[".env"]}})");
}

TEST_F(NarrowingTest, DroppingAWriteDenyWidens) {
  expectWidens(R"({"filesystem":{"allowWrite":["."],"denyWrite":[".env"]}})", R"({"filesystem":{"allowWrite":["."]}})",
               "filesystem.denyWrite", work_ + "/.env");
}

TEST_F(NarrowingTest, WritingInsideABaseWriteDenyWidens) {
  expectWidens(R"({"filesystem":{"allowWrite":["."],"denyWrite":["secret"]}})",
               R"({"filesystem":{"allowWrite":["secret/sub"]}})", "filesystem.allowWrite", work_ + "/secret/sub");
}

TEST_F(NarrowingTest, PrefixCoverageIsByComponentNotString) {
  t_.dir("work2");
  expectWidens(R"({"filesystem":{"allowWrite":[")" + work_ + R"("]}})",
               R"({"filesystem":{"allowWrite":[")" + t_ / "work2" + R"("]}})", "filesystem.allowWrite", t_ / "work2");
}

// ---- network ----
TEST_F(NarrowingTest, SubdomainInsideWildcardNarrows) {
  expectNarrower(R"({"network":{"allowedDomains":["*.github.com"]}})", R"({"network":{"allowedDomains":["api.github.com"]}})");
}

TEST_F(NarrowingTest, LookalikeOutsideWildcardWidens) {
  expectWidens(R"({"network":{"allowedDomains":["*.github.com"]}})", R"({"network":{"allowedDomains":["evilgithub.com"]}})",
               "network.allowedDomains", "evilgithub.com");
}

TEST_F(NarrowingTest, ApexIsNotInsideItsWildcard) {
  expectWidens(R"({"network":{"allowedDomains":["*.github.com"]}})", R"({"network":{"allowedDomains":["github.com"]}})",
               "network.allowedDomains", "github.com");
}

TEST_F(NarrowingTest, WildcardIsWiderThanOneHost) {
  expectWidens(R"({"network":{"allowedDomains":["api.github.com"]}})",
               R"({"network":{"allowedDomains":["*.github.com"]}})", "network.allowedDomains", "*.github.com");
}

TEST_F(NarrowingTest, PortRestrictionNarrowsAndLiftingItWidens) {
  expectNarrower(R"({"network":{"allowedDomains":["example.com"]}})", R"({"network":{"allowedDomains":["example.com:443"]}})");
  expectWidens(R"({"network":{"allowedDomains":["example.com:443"]}})", R"({"network":{"allowedDomains":["example.com"]}})",
               "network.allowedDomains", "example.com");
}

TEST_F(NarrowingTest, DroppingADeniedDomainThatAnAllowCoversWidens) {
  expectWidens(R"({"network":{"allowedDomains":["*.github.com"],"deniedDomains":["gist.github.com"]}})",
               R"({"network":{"allowedDomains":["*.github.com"]}})", "network.deniedDomains", "gist.github.com");
}

TEST_F(NarrowingTest, DroppingADeniedDomainNoAllowReachesIsNarrower) {
  expectNarrower(R"({"network":{"allowedDomains":["*.github.com"],"deniedDomains":["gist.github.com"]}})",
                 R"({"network":{"allowedDomains":["api.github.com"]}})");
}

TEST_F(NarrowingTest, IpSpellingsCompareCanonically) {
  expectNarrower(R"({"network":{"allowedDomains":["127.0.0.1:8080"]}})", R"({"network":{"allowedDomains":["0x7f.1:8080"]}})");
}

TEST_F(NarrowingTest, UnixSocketsAndLocalBinding) {
  expectNarrower(R"({"network":{"allowUnixSockets":["/run"]}})", R"({"network":{"allowUnixSockets":["/run/docker.sock"]}})");
  expectWidens(R"({"network":{"allowUnixSockets":["/run/docker.sock"]}})", R"({"network":{"allowUnixSockets":["/run"]}})",
               "network.allowUnixSockets", "/run");
  expectWidens(R"({"network":{}})", R"({"network":{"allowLocalBinding":true}})", "network.allowLocalBinding", "true");
  expectNarrower(R"({"network":{"allowLocalBinding":true}})", R"({"network":{}})");
}

TEST_F(NarrowingTest, IntersectedNetworkAllowsOnlyWhatBothAllow) {
  auto a = rules(R"({"network":{"allowedDomains":["*.github.com","registry.npmjs.org"],"deniedDomains":["gist.github.com"]}})");
  auto b = rules(R"({"network":{"allowedDomains":["api.github.com","gist.github.com","pypi.org"]}})");
  DerivedRules::Network both = intersectNetworks(a.network(), b.network());
  std::vector<std::string> allowed;
  for (const auto& d : both.allowedDomains) allowed.push_back(d.text());
  EXPECT_EQ(allowed, (std::vector<std::string>{"api.github.com", "gist.github.com"}));
  std::vector<std::string> denied;
  for (const auto& d : both.deniedDomains) denied.push_back(d.text());
  EXPECT_EQ(denied, std::vector<std::string>{"gist.github.com"}) << "a's deny still wins over b's allow";
  auto none = rules(R"({"network":{}})");
  EXPECT_TRUE(intersectNetworks(a.network(), none.network()).allowedDomains.empty());
}

// ---- env and limits ----
TEST_F(NarrowingTest, EnvNamesMustBeASubset) {
  expectNarrower(R"({"env":{"allow":["PATH","HOME"]}})", R"({"env":{"allow":["PATH"]}})");
  expectWidens(R"({"env":{"allow":["PATH"]}})", R"({"env":{"allow":["PATH","AWS_SECRET_ACCESS_KEY"]}})", "env.allow",
               "AWS_SECRET_ACCESS_KEY");
}

TEST_F(NarrowingTest, LimitsMayOnlyShrink) {
  expectNarrower(R"({"limits":{"pids":100}})", R"({"limits":{"pids":50}})");
  expectNarrower(R"({"limits":{}})", R"({"limits":{"pids":50}})");
  expectWidens(R"({"limits":{"pids":50}})", R"({"limits":{"pids":100}})", "limits.pids", "100");
  expectWidens(R"({"limits":{"memoryBytes":1024}})", R"({"limits":{}})", "limits.memoryBytes", "0");
}

// ---- diff ----
TEST_F(NarrowingTest, DiffListsAddedAndRemovedPerAxisAndFlagsWidening) {
  auto a = rules(R"({"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["github.com"]}})");
  auto b = rules(R"({"filesystem":{"allowWrite":[".","/srv/data"]},"network":{"allowedDomains":["api.github.com"]}})");
  RulesDiff d = diff(a, b);
  auto j = nlohmann::json::parse(d.toJson());
  EXPECT_EQ(j["axes"]["filesystem.allowWrite"]["added"], nlohmann::json::array({"/srv/data"}));
  EXPECT_EQ(j["axes"]["network.allowedDomains"]["added"], nlohmann::json::array({"api.github.com"}));
  EXPECT_EQ(j["axes"]["network.allowedDomains"]["removed"], nlohmann::json::array({"github.com"}));
  EXPECT_FALSE(j["axes"].contains("env.allow"));
  EXPECT_TRUE(j["widens"].get<bool>());
  EXPECT_EQ(j["widening"]["axis"], "filesystem.allowWrite");
  EXPECT_TRUE(diff(a, a).empty());
  // Back from b to a: /srv/data goes away, but "github.com" is not inside "api.github.com".
  ASSERT_TRUE(diff(b, a).widening.has_value());
  EXPECT_EQ(diff(b, a).widening->axis, "network.allowedDomains");
}

}  // namespace
}  // namespace stockade
