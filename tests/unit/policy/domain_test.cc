#include "policy/domain.h"

#include <gtest/gtest.h>

namespace stockade::policy {
namespace {

DomainRule rule(const std::string& text) {
  auto parsed = parseDomainPattern(text);
  if (auto* why = std::get_if<std::string>(&parsed)) throw std::runtime_error(text + " " + *why);
  return std::get<DomainRule>(parsed);
}

TEST(DomainTest, NormalisesCaseTrailingDotAndIpSpellings) {
  struct Case {
    const char* in;
    const char* host;
    int port;  // -1: any
  } cases[] = {
      {"GitHub.COM.", "github.com", -1},     {"*.NpmJS.org", "*.npmjs.org", -1},
      {"localhost:8080", "localhost", 8080}, {"127.1", "127.0.0.1", -1},
      {"0x7f.0.0.1", "127.0.0.1", -1},       {"0177.0.0.1", "127.0.0.1", -1},
      {"2130706433", "127.0.0.1", -1},       {"[::1]:8080", "::1", 8080},
      {"::1", "::1", -1},                    {"[::ffff:127.0.0.1]", "127.0.0.1", -1},
      {"[0:0::1]", "::1", -1},               {"api_v2.example.com", "api_v2.example.com", -1},
  };
  for (const auto& c : cases) {
    DomainRule r = rule(c.in);
    EXPECT_EQ(r.host, c.host) << c.in;
    EXPECT_EQ(r.port ? int(*r.port) : -1, c.port) << c.in;
  }
}

TEST(DomainTest, TextIsTheCanonicalSpelling) {
  EXPECT_EQ(rule("[0::1]:80").text(), "[::1]:80");
  EXPECT_EQ(rule("*.Example.com").text(), "*.example.com");
  EXPECT_EQ(rule("0x7f.1:443").text(), "127.0.0.1:443");
}

TEST(DomainTest, WildcardCoversSubdomainsButNotApexOrLookalikes) {
  DomainRule wild = rule("*.github.com");
  EXPECT_TRUE(rule("api.github.com").within(wild));
  EXPECT_TRUE(rule("a.b.github.com").within(wild));
  EXPECT_TRUE(rule("*.api.github.com").within(wild));
  EXPECT_TRUE(rule("*.github.com").within(wild));
  EXPECT_FALSE(rule("github.com").within(wild));
  EXPECT_FALSE(rule("evilgithub.com").within(wild));
  EXPECT_FALSE(rule("github.com.evil.net").within(wild));
  EXPECT_FALSE(wild.within(rule("api.github.com")));
}

TEST(DomainTest, PortsRestrictCoverage) {
  EXPECT_TRUE(rule("example.com:443").within(rule("example.com")));
  EXPECT_FALSE(rule("example.com").within(rule("example.com:443")));
  EXPECT_FALSE(rule("example.com:80").within(rule("example.com:443")));
  EXPECT_TRUE(rule("a.example.com:443").within(rule("*.example.com:443")));
}

TEST(DomainTest, MatchesAHostAndPort) {
  EXPECT_TRUE(rule("*.github.com").matches("api.github.com", 443));
  EXPECT_FALSE(rule("*.github.com").matches("github.com", 443));
  EXPECT_FALSE(rule("*.github.com").matches("evilgithub.com", 443));
  EXPECT_TRUE(rule("localhost:8080").matches("localhost", 8080));
  EXPECT_FALSE(rule("localhost:8080").matches("localhost", 8081));
}

TEST(DomainTest, CanonicalIpRefusesZonesAndNames) {
  EXPECT_EQ(canonicalIp("fe80::1%eth0"), std::nullopt);
  EXPECT_EQ(canonicalIp("1.example"), std::nullopt);
  EXPECT_EQ(canonicalIp("example.com"), std::nullopt);
  EXPECT_EQ(canonicalIp("[1.2.3.4]"), std::nullopt);
  EXPECT_EQ(canonicalIp("1.2.3.4."), std::nullopt);
  EXPECT_EQ(canonicalIp("017700000001"), "127.0.0.1");
  EXPECT_EQ(canonicalIp("0x7f000001"), "127.0.0.1");
  EXPECT_EQ(canonicalIp("[::ffff:7f00:1]"), "127.0.0.1");
  EXPECT_EQ(canonicalIp("169.254.169.254"), "169.254.169.254");
}

}  // namespace
}  // namespace stockade::policy
