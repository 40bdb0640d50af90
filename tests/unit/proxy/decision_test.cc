// The proxy's allow/deny decision, table-driven, without sockets.
#include "proxy/decision.h"

#include <gtest/gtest.h>

#include <variant>

#include "policy/domain.h"

namespace stockade::proxy {
namespace {

DomainRule rule(std::string_view text) {
  auto parsed = policy::parseDomainPattern(text);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    ADD_FAILURE() << "bad test rule " << text << ": " << *why;
    return {};
  }
  return std::get<DomainRule>(parsed);
}

DerivedRules::Network network(std::initializer_list<std::string_view> allow,
                              std::initializer_list<std::string_view> denyList = {}) {
  DerivedRules::Network n;
  for (auto a : allow) n.allowedDomains.push_back(rule(a));
  for (auto d : denyList) n.deniedDomains.push_back(rule(d));
  return n;
}

struct NameCase {
  const char* host;
  std::uint16_t port;
  bool allowed;
  const char* rule;  // expected verdict.rule, or a prefix of it ending in '*'
};

void expectCases(const DerivedRules::Network& rules, std::initializer_list<NameCase> cases) {
  for (const auto& c : cases) {
    Verdict v = decide(rules, c.host, c.port);
    EXPECT_EQ(v.allowed(), c.allowed) << c.host << ":" << c.port << " -> " << v.rule;
    std::string_view want = c.rule;
    if (want.ends_with('*')) {
      EXPECT_TRUE(std::string_view(v.rule).starts_with(want.substr(0, want.size() - 1)))
          << c.host << ": " << v.rule;
    } else {
      EXPECT_EQ(v.rule, want) << c.host;
    }
  }
}

TEST(DecisionTest, DeniedDomainsWinOverAllowedWildcards) {
  auto rules = network({"*.example.com", "example.com"}, {"evil.example.com"});
  expectCases(rules, {
      {"evil.example.com", 443, false, "deniedDomains: \"evil.example.com\""},
      {"EVIL.Example.COM.", 443, false, "deniedDomains: \"evil.example.com\""},
      {"good.example.com", 443, true, "allowedDomains: \"*.example.com\""},
      {"example.com", 80, true, "allowedDomains: \"example.com\""},
  });
}

TEST(DecisionTest, WildcardMatchesSubdomainsButNotTheApex) {
  auto rules = network({"*.npmjs.org"});
  expectCases(rules, {
      {"registry.npmjs.org", 443, true, "allowedDomains: \"*.npmjs.org\""},
      {"a.b.npmjs.org", 443, true, "allowedDomains: \"*.npmjs.org\""},
      {"npmjs.org", 443, false, "no allowedDomains entry matches"},
      {"evilnpmjs.org", 443, false, "no allowedDomains entry matches"},
      {"npmjs.org.evil.com", 443, false, "no allowedDomains entry matches"},
  });
}

TEST(DecisionTest, MatchingIsCaseInsensitiveAndIgnoresOneTrailingDot) {
  auto rules = network({"github.com"});
  expectCases(rules, {
      {"GitHub.COM", 443, true, "allowedDomains: \"github.com\""},
      {"github.com.", 443, true, "allowedDomains: \"github.com\""},
      {"github.com..", 443, false, "invalid host: *"},
      {"github.co", 443, false, "no allowedDomains entry matches"},
  });
}

TEST(DecisionTest, PortEntriesRestrictThePort) {
  auto rules = network({"localhost:8080", "api.example.com:443"});
  expectCases(rules, {
      {"localhost", 8080, true, "allowedDomains: \"localhost:8080\""},
      {"localhost", 8081, false, "no allowedDomains entry matches"},
      {"api.example.com", 443, true, "allowedDomains: \"api.example.com:443\""},
      {"api.example.com", 80, false, "no allowedDomains entry matches"},
      {"api.example.com", 0, false, "port 0 is not a destination"},
  });
}

TEST(DecisionTest, EveryIpv4SpellingIsCanonicalisedBeforeMatching) {
  auto rules = network({"93.184.216.34"}, {"127.0.0.1"});
  expectCases(rules, {
      {"93.184.216.34", 80, true, "allowedDomains: \"93.184.216.34\""},
      {"1572395042", 80, true, "allowedDomains: \"93.184.216.34\""},         // decimal
      {"0x5db8d822", 80, true, "allowedDomains: \"93.184.216.34\""},         // hex
      {"0135.0270.0330.042", 80, true, "allowedDomains: \"93.184.216.34\""}, // octal
      {"93.184.55330", 80, true, "allowedDomains: \"93.184.216.34\""},       // short form a.b.c
      {"[::ffff:93.184.216.34]", 80, true, "allowedDomains: \"93.184.216.34\""},
      {"::ffff:5db8:d822", 80, true, "allowedDomains: \"93.184.216.34\""},
      {"127.1", 80, false, "deniedDomains: \"127.0.0.1\""},
      {"0x7f000001", 80, false, "deniedDomains: \"127.0.0.1\""},
      {"017700000001", 80, false, "deniedDomains: \"127.0.0.1\""},
      {"[::ffff:127.0.0.1]", 80, false, "deniedDomains: \"127.0.0.1\""},
      {"2130706433", 80, false, "deniedDomains: \"127.0.0.1\""},
      {"1.2.3.999", 80, false, "invalid host: *"},
      {"1.2.3.4.5", 80, false, "invalid host: *"},
  });
}

TEST(DecisionTest, Ipv6LiteralsAreCanonicalAndZoneIdsRefused) {
  auto rules = network({"[2001:db8::1]", "[::1]:8080"});
  expectCases(rules, {
      {"[2001:DB8:0:0::1]", 443, true, "allowedDomains: \"[2001:db8::1]\""},
      {"2001:db8::0001", 443, true, "allowedDomains: \"[2001:db8::1]\""},
      {"[::1]", 8080, true, "allowedDomains: \"[::1]:8080\""},
      {"[0:0:0:0:0:0:0:1]", 8080, true, "allowedDomains: \"[::1]:8080\""},
      {"[::1]", 8081, false, "no allowedDomains entry matches"},
      {"[fe80::1%25eth0]", 80, false, "invalid host: *"},
      {"fe80::1%eth0", 80, false, "invalid host: *"},
      {"[::1", 80, false, "invalid host: *"},
      {"[1.2.3.4]", 80, false, "invalid host: *"},
  });
}

TEST(DecisionTest, MalformedHostsAreDeniedNamingWhy) {
  auto rules = network({"example.com"});
  expectCases(rules, {
      {"", 80, false, "invalid host: the host is empty"},
      {"exa mple.com", 80, false, "invalid host: *"},
      {"%65xample.com", 80, false, "invalid host: *"},
      {"example.com\r\n", 80, false, "invalid host: *"},
      {"-example.com", 80, false, "invalid host: *"},
      {"user@example.com", 80, false, "invalid host: *"},
      {"example.com/", 80, false, "invalid host: *"},
      {"ex\xc3\xa4mple.com", 80, false, "invalid host: *"},
  });
}

TEST(DecisionTest, NoRulesDeniesEverything) {
  DerivedRules::Network none;
  expectCases(none, {{"example.com", 443, false, "no allowedDomains entry matches"},
                     {"127.0.0.1", 80, false, "no allowedDomains entry matches"}});
}

struct AddressCase {
  const char* allowEntry;
  const char* host;
  const char* address;
  AddressSource source;
  bool allowed;
  const char* rulePrefix;
};

TEST(DecisionTest, SpecialResolvedAddressesNeedAnExplicitEntry) {
  const AddressCase cases[] = {
      {"example.com", "example.com", "93.184.216.34", AddressSource::kResolved, true, "allowedDomains"},
      {"example.com", "example.com", "10.0.0.1", AddressSource::kResolved, false,
       "resolved address 10.0.0.1 is private"},
      {"example.com", "example.com", "172.16.5.4", AddressSource::kResolved, false,
       "resolved address 172.16.5.4 is private"},
      {"example.com", "example.com", "192.168.1.1", AddressSource::kResolved, false,
       "resolved address 192.168.1.1 is private"},
      {"example.com", "example.com", "127.0.0.1", AddressSource::kResolved, false,
       "resolved address 127.0.0.1 is loopback"},
      {"example.com", "example.com", "127.8.9.10", AddressSource::kResolved, false,
       "resolved address 127.8.9.10 is loopback"},
      {"example.com", "example.com", "::1", AddressSource::kResolved, false, "resolved address ::1 is loopback"},
      {"example.com", "example.com", "0.0.0.0", AddressSource::kResolved, false,
       "resolved address 0.0.0.0 is unspecified"},
      {"example.com", "example.com", "::", AddressSource::kResolved, false, "resolved address :: is unspecified"},
      {"example.com", "example.com", "169.254.169.254", AddressSource::kResolved, false,
       "resolved address 169.254.169.254 is cloud-metadata"},
      {"example.com", "example.com", "fd00:ec2::254", AddressSource::kResolved, false,
       "resolved address fd00:ec2::254 is cloud-metadata"},
      {"example.com", "example.com", "169.254.1.1", AddressSource::kResolved, false,
       "resolved address 169.254.1.1 is link-local"},
      {"example.com", "example.com", "fe80::1", AddressSource::kResolved, false,
       "resolved address fe80::1 is link-local"},
      {"example.com", "example.com", "fc00::1", AddressSource::kResolved, false,
       "resolved address fc00::1 is private"},
      {"example.com", "example.com", "224.0.0.1", AddressSource::kResolved, false,
       "resolved address 224.0.0.1 is multicast"},
      {"example.com", "example.com", "ff02::1", AddressSource::kResolved, false,
       "resolved address ff02::1 is multicast"},
      {"example.com", "example.com", "255.255.255.255", AddressSource::kResolved, false,
       "resolved address 255.255.255.255 is reserved"},
      {"example.com", "example.com", "::ffff:10.1.2.3", AddressSource::kResolved, false,
       "resolved address 10.1.2.3 is private"},
      {"example.com", "example.com", "64:ff9b::a9fe:a9fe", AddressSource::kResolved, false,
       "resolved address 64:ff9b::a9fe:a9fe is cloud-metadata"},
      {"example.com", "example.com", "100.64.0.1", AddressSource::kResolved, false,
       "resolved address 100.64.0.1 is private"},
      {"example.com", "example.com", "2606:2800:220:1::1", AddressSource::kResolved, true, "allowedDomains"},
      // An entry that names the address, or localhost for loopback, is explicit.
      {"127.0.0.1:8080", "127.0.0.1", "127.0.0.1", AddressSource::kLiteral, true, "allowedDomains"},
      {"169.254.169.254", "169.254.169.254", "169.254.169.254", AddressSource::kLiteral, true, "allowedDomains"},
      {"localhost", "localhost", "127.0.0.1", AddressSource::kResolved, true, "allowedDomains"},
      {"localhost", "localhost", "::1", AddressSource::kResolved, true, "allowedDomains"},
      {"localhost", "localhost", "10.0.0.1", AddressSource::kResolved, false,
       "resolved address 10.0.0.1 is private"},
      {"*.example.com", "a.example.com", "127.0.0.1", AddressSource::kResolved, false,
       "resolved address 127.0.0.1 is loopback"},
      // Operator resolve overrides are trusted configuration.
      {"*.example.com", "a.example.com", "127.0.0.1", AddressSource::kOperatorOverride, true, "allowedDomains"},
  };
  for (const auto& c : cases) {
    auto rules = network({c.allowEntry});
    Verdict name = decide(rules, c.host, 8080);
    ASSERT_TRUE(name.allowed()) << c.host << ": " << name.rule;
    Verdict v = decideAddress(rules, name, c.address, c.source);
    EXPECT_EQ(v.allowed(), c.allowed) << c.allowEntry << " " << c.address << ": " << v.rule;
    EXPECT_TRUE(v.rule.starts_with(c.rulePrefix)) << c.address << ": " << v.rule;
  }
}

TEST(DecisionTest, AnAllowedNameReachingADeniedAddressIsRefusedHoweverItGotThere) {
  auto rules = network({"*.example.com", "api.example.com"}, {"93.184.216.34", "2606:2800:220:1::1", "1.1.1.1:443"});
  Verdict name = decide(rules, "www.example.com", 443);
  ASSERT_TRUE(name.allowed()) << name.rule;
  for (auto source : {AddressSource::kResolved, AddressSource::kOperatorOverride}) {
    // Spellings the resolver or an override could produce: all canonicalised.
    for (const char* address : {"93.184.216.34", "::ffff:93.184.216.34", "2606:2800:0220:0001::0001"}) {
      Verdict v = decideAddress(rules, name, address, source);
      EXPECT_FALSE(v.allowed()) << address;
      EXPECT_NE(v.rule.find("is denied: deniedDomains: "), std::string::npos) << v.rule;
    }
    // A port-restricted deny holds on its port only.
    EXPECT_FALSE(decideAddress(rules, name, "1.1.1.1", source).allowed());
    EXPECT_TRUE(decideAddress(rules, decide(rules, "www.example.com", 80), "1.1.1.1", source).allowed());
  }
  // The neighbouring public address stays reachable.
  Verdict ok = decideAddress(rules, name, "93.184.216.35", AddressSource::kResolved);
  EXPECT_TRUE(ok.allowed()) << ok.rule;
}

TEST(DecisionTest, AddressStageNeverWidensADeniedName) {
  auto rules = network({"example.com"});
  Verdict name = decide(rules, "other.com", 443);
  ASSERT_FALSE(name.allowed());
  Verdict v = decideAddress(rules, name, "93.184.216.34", AddressSource::kOperatorOverride);
  EXPECT_FALSE(v.allowed());
  EXPECT_EQ(v.rule, "no allowedDomains entry matches");
}

TEST(DecisionTest, AddressStageRefusesNonAddresses) {
  auto rules = network({"example.com"});
  Verdict v = decideAddress(rules, decide(rules, "example.com", 443), "not-an-address", AddressSource::kResolved);
  EXPECT_FALSE(v.allowed());
}

TEST(DecisionTest, SpecialUseIpv4RangesAreNotPublic) {
  for (const char* a : {"192.0.0.192", "192.0.0.1", "198.18.0.1", "198.19.255.255", "192.88.99.1", "192.0.2.7",
                        "198.51.100.7", "203.0.113.7"})
    EXPECT_EQ(classifyAddress(a), AddressClass::kReserved) << a;
  for (const char* a : {"192.0.1.1", "198.20.0.1", "93.184.216.34"}) EXPECT_EQ(classifyAddress(a), AddressClass::kPublic) << a;
}

TEST(DecisionTest, EveryAddressClassHasAName) {
  for (auto c : {AddressClass::kPublic, AddressClass::kUnspecified, AddressClass::kLoopback, AddressClass::kPrivate,
                 AddressClass::kLinkLocal, AddressClass::kMulticast, AddressClass::kReserved,
                 AddressClass::kCloudMetadata}) {
    EXPECT_NE(addressClassName(c), "unknown");
  }
}

}  // namespace
}  // namespace stockade::proxy
