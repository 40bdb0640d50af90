// Target planning (proxy/target.h), table-driven, without sockets or DNS.
#include "proxy/target.h"

#include <gtest/gtest.h>

#include <variant>

#include "policy/domain.h"

namespace stockade::proxy {
namespace {

DerivedRules::Network network(std::initializer_list<std::string_view> allow,
                              std::initializer_list<std::string_view> deny = {}) {
  DerivedRules::Network n;
  for (auto a : allow) n.allowedDomains.push_back(std::get<DomainRule>(policy::parseDomainPattern(a)));
  for (auto d : deny) n.deniedDomains.push_back(std::get<DomainRule>(policy::parseDomainPattern(d)));
  return n;
}

const std::map<std::string, std::string> kOverrides{{"files.test", "127.0.0.1"}};

TEST(TargetTest, ADeniedNameIsRefusedBeforeAnyAddressIsKnownOrAskedFor) {
  auto rules = network({"*.example.com"}, {"evil.example.com"});
  TargetPlan plan = planTarget(&rules, kOverrides, "EVIL.example.com", 443);
  ASSERT_TRUE(plan.refused);
  EXPECT_FALSE(plan.needsDns);
  EXPECT_TRUE(plan.addresses.empty());
  EXPECT_EQ(plan.refused->httpStatus, 403);
  EXPECT_EQ(plan.refused->socksReply, socks5::Reply::kNotAllowedByRuleset);
  EXPECT_EQ(plan.refused->eventVerdict, EventVerdict::kDenied);
  EXPECT_EQ(plan.refused->host, "evil.example.com");
  EXPECT_EQ(plan.refused->message, "deniedDomains: \"evil.example.com\"");
  EXPECT_EQ(clientMessage(*plan.refused, 443),
            "blocked by policy: host \"evil.example.com\" port 443: deniedDomains: \"evil.example.com\"");
}

TEST(TargetTest, NoRulesRefuseEverything) {
  TargetPlan plan = planTarget(nullptr, kOverrides, "files.test", 80);
  ASSERT_TRUE(plan.refused);
  EXPECT_EQ(plan.refused->message, "no network rules are available for this sandbox");
  EXPECT_EQ(plan.refused->host, "files.test");
}

TEST(TargetTest, WhereTheAddressesOfAnAllowedNameComeFrom) {
  auto rules = network({"files.test", "localhost", "api.example.com", "127.0.0.1:8080"});
  struct Case {
    const char* host;
    std::uint16_t port;
    bool needsDns;
    std::vector<AddressCandidate> addresses;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"files.test", 80, false, {{"127.0.0.1", AddressSource::kOperatorOverride}}},
           {"localhost", 80, false, {{"127.0.0.1", AddressSource::kResolved}, {"::1", AddressSource::kResolved}}},
           {"0x7f.1", 8080, false, {{"127.0.0.1", AddressSource::kLiteral}}},
           {"api.example.com", 443, true, {}},
       }) {
    TargetPlan plan = planTarget(&rules, kOverrides, c.host, c.port);
    ASSERT_FALSE(plan.refused) << c.host << ": " << plan.refused->message;
    EXPECT_EQ(plan.needsDns, c.needsDns) << c.host;
    EXPECT_EQ(plan.addresses, c.addresses) << c.host;
  }
}

TEST(TargetTest, EveryAddressMustPassAndTheConnectionGoesOnlyToCheckedOnes) {
  auto rules = network({"api.example.com"});
  TargetPlan plan = planTarget(&rules, kOverrides, "api.example.com", 443);
  ASSERT_TRUE(plan.needsDns);
  Target ok = checkAddresses(rules, plan, resolvedCandidates({"93.184.216.34", "93.184.216.34", "2606:2800::1"}));
  ASSERT_TRUE(ok.ok) << ok.message;
  EXPECT_EQ(ok.addresses, (std::vector<std::string>{"93.184.216.34", "2606:2800::1"})) << "duplicates dropped";
  EXPECT_EQ(ok.eventVerdict, EventVerdict::kAllowed);
  EXPECT_EQ(ok.message, "allowedDomains: \"api.example.com\"");

  // One private address among public ones refuses the name as a whole.
  Target mixed = checkAddresses(rules, plan, resolvedCandidates({"93.184.216.34", "10.0.0.7"}));
  EXPECT_FALSE(mixed.ok);
  EXPECT_TRUE(mixed.addresses.empty());
  EXPECT_EQ(mixed.refusedAddress, "10.0.0.7");
  EXPECT_EQ(mixed.httpStatus, 403);
  EXPECT_NE(mixed.message.find("10.0.0.7"), std::string::npos) << mixed.message;
}

TEST(TargetTest, AFailedResolutionIsABadGatewayOrATimeout) {
  auto rules = network({"api.example.com"});
  TargetPlan plan = planTarget(&rules, kOverrides, "api.example.com", 443);
  Target failed = resolutionFailed(plan, false, 10'000, "Host not found");
  EXPECT_EQ(failed.httpStatus, 502);
  EXPECT_EQ(failed.socksReply, socks5::Reply::kHostUnreachable);
  EXPECT_EQ(failed.eventVerdict, EventVerdict::kAllowed);
  EXPECT_EQ(failed.message, "could not resolve \"api.example.com\": Host not found");
  EXPECT_EQ(clientMessage(failed, 443), failed.message) << "not a policy refusal";
  Target late = resolutionFailed(plan, true, 10'000, "ignored");
  EXPECT_EQ(late.httpStatus, 504);
  EXPECT_EQ(late.message, "could not resolve \"api.example.com\": timed out after 10000 ms");
}

TEST(TargetTest, ClientTextInARefusalIsEscaped) {
  Target t = refusedTarget("a\"b\\c\x01", 80, "the rules provider failed: boom");
  EXPECT_EQ(t.host, "a\\x22b\\x5cc\\x01");
  EXPECT_EQ(clientMessage(t, 80), "blocked by policy: host \"a\\x22b\\x5cc\\x01\" port 80: the rules provider failed: boom");
}

}  // namespace
}  // namespace stockade::proxy
