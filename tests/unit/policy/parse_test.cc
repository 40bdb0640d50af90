#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "stockade/error.h"
#include "stockade/policy.h"

namespace stockade {
namespace {

struct BadPolicy {
  const char* name;
  std::string json;
  std::string path;      // expected PolicyError::path
  std::string contains;  // expected substring of the message
};

// Keeps test listings short: the case's name, not its bytes.
void PrintTo(const BadPolicy& c, std::ostream* os) { *os << c.name; }

class ParseErrorTest : public ::testing::TestWithParam<BadPolicy> {};

TEST_P(ParseErrorTest, IsRefusedNamingTheFieldAndTheValue) {
  const BadPolicy& c = GetParam();
  auto parsed = SandboxPolicy::parse(c.json);
  ASSERT_TRUE(std::holds_alternative<PolicyError>(parsed)) << c.json;
  const auto& err = std::get<PolicyError>(parsed);
  EXPECT_EQ(err.path, c.path) << err.text();
  EXPECT_NE(err.message.find(c.contains), std::string::npos) << err.text();
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

INSTANTIATE_TEST_SUITE_P(
    EveryErrorClass, ParseErrorTest,
    ::testing::Values(
        BadPolicy{"NotJson", "{", "", "not valid JSON"},
        BadPolicy{"TopLevelArray", "[]", "", "must be an object, not an array"},
        BadPolicy{"UnknownTopKey", R"({"filesystem":{},"ignoreViolations":{}})", "ignoreViolations", "unknown key"},
        BadPolicy{"UnknownNestedKey", R"({"filesystem":{"denyReads":[]}})", "filesystem.denyReads", "unknown key"},
        BadPolicy{"DuplicateKey", R"({"filesystem":{"denyRead":["/a"],"denyRead":[]}})", "denyRead", "appears twice"},
        BadPolicy{"SectionWrongType", R"({"network":[]})", "network", "must be an object"},
        BadPolicy{"ListWrongType", R"({"filesystem":{"allowWrite":"/tmp"}})", "filesystem.allowWrite", "must be an array"},
        BadPolicy{"ListItemWrongType", R"({"filesystem":{"allowWrite":["/tmp",3]}})", "filesystem.allowWrite[1]", "must be a string, not a number"},
        BadPolicy{"EmptyPath", R"({"filesystem":{"denyRead":[""]}})", "filesystem.denyRead[0]", "is empty"},
        BadPolicy{"OtherUsersHome", R"({"filesystem":{"denyRead":["~bob/.ssh"]}})", "filesystem.denyRead[0]", "only \"~\""},
        BadPolicy{"GlobOutsideDenyRead", R"({"filesystem":{"allowWrite":["/tmp/*"]}})", "filesystem.allowWrite[0]", "globs are only supported"},
        BadPolicy{"NulInPath", R"({"filesystem":{"denyRead":["/a\u0000b"]}})", "filesystem.denyRead[0]", "NUL"},
        BadPolicy{"BoolWrongType", R"({"network":{"allowLocalBinding":"yes"}})", "network.allowLocalBinding", "true or false"},
        BadPolicy{"DomainStar", R"({"network":{"allowedDomains":["*"]}})", "network.allowedDomains[0]", "matches every host"},
        BadPolicy{"DomainTld", R"({"network":{"allowedDomains":["a.com","b.org","*.com"]}})", "network.allowedDomains[2]", "\"*.com\" is too broad"},
        BadPolicy{"DomainPublicSuffix", R"({"network":{"allowedDomains":["*.co.uk"]}})", "network.allowedDomains[0]", "too broad"},
        BadPolicy{"DomainScheme", R"({"network":{"allowedDomains":["https://github.com"]}})", "network.allowedDomains[0]", "scheme"},
        BadPolicy{"DomainPath", R"({"network":{"allowedDomains":["github.com/org"]}})", "network.allowedDomains[0]", "path"},
        BadPolicy{"DomainSpace", R"({"network":{"deniedDomains":["evil .com"]}})", "network.deniedDomains[0]", "whitespace"},
        BadPolicy{"DomainNonAscii", R"({"network":{"allowedDomains":["bücher.de"]}})", "network.allowedDomains[0]", "non-ASCII"},
        BadPolicy{"DomainMiddleStar", R"({"network":{"allowedDomains":["api.*.com"]}})", "network.allowedDomains[0]", "leading"},
        BadPolicy{"DomainBadLabel", R"({"network":{"allowedDomains":["-bad.com"]}})", "network.allowedDomains[0]", "not a valid host name"},
        BadPolicy{"DomainUserinfo", R"({"network":{"allowedDomains":["user@github.com"]}})", "network.allowedDomains[0]", "user information"},
        BadPolicy{"PortZero", R"({"network":{"allowedDomains":["localhost:0"]}})", "network.allowedDomains[0]", "1 to 65535"},
        BadPolicy{"PortTooBig", R"({"network":{"allowedDomains":["localhost:65536"]}})", "network.allowedDomains[0]", "1 to 65535"},
        BadPolicy{"PortNotNumber", R"({"network":{"allowedDomains":["localhost:http"]}})", "network.allowedDomains[0]", "1 to 65535"},
        BadPolicy{"PortEmpty", R"({"network":{"allowedDomains":["localhost:"]}})", "network.allowedDomains[0]", "empty port"},
        BadPolicy{"BadIpv4", R"({"network":{"allowedDomains":["1.2.3.256"]}})", "network.allowedDomains[0]", "not a valid IPv4"},
        BadPolicy{"BadIpv6", R"({"network":{"allowedDomains":["[::g]"]}})", "network.allowedDomains[0]", "not a valid IPv6"},
        BadPolicy{"ZoneId", R"({"network":{"allowedDomains":["[fe80::1%eth0]:80"]}})", "network.allowedDomains[0]", "zone id"},
        BadPolicy{"WildcardIp", R"({"network":{"allowedDomains":["*.0.0.1"]}})", "network.allowedDomains[0]", "IP address"},
        BadPolicy{"EnvNameDash", R"({"env":{"allow":["PATH","MY-VAR"]}})", "env.allow[1]", "\"MY-VAR\" is not a variable name"},
        BadPolicy{"EnvNameDigit", R"({"env":{"allow":["1X"]}})", "env.allow[0]", "not a variable name"},
        BadPolicy{"EnvNameEmpty", R"({"env":{"allow":[""]}})", "env.allow[0]", "not a variable name"},
        BadPolicy{"LimitNegative", R"({"limits":{"pids":-1}})", "limits.pids", "not a non-negative integer"},
        BadPolicy{"LimitFraction", R"({"limits":{"memoryBytes":1.5}})", "limits.memoryBytes", "not a non-negative integer"},
        BadPolicy{"LimitString", R"({"limits":{"cpuSeconds":"10"}})", "limits.cpuSeconds", "must be a number"},
        BadPolicy{"LimitUnknown", R"({"limits":{"files":3}})", "limits.files", "unknown key"},
        BadPolicy{"TooDeep", nested(100000), "", "nests deeper"}),
    [](const auto& i) { return std::string(i.param.name); });

TEST(ParseTest, AcceptsTheDesignDocumentExample) {
  auto p = SandboxPolicy::fromJson(R"({
    "filesystem": {"denyRead": ["~/.ssh", "/etc/shadow"], "allowRead": ["~/.ssh/known_hosts"],
                   "allowWrite": [".", "/tmp/build"], "denyWrite": [".env"]},
    "network": {"allowedDomains": ["github.com", "*.npmjs.org", "localhost:8080"],
                "deniedDomains": ["evil.example"], "allowUnixSockets": [], "allowLocalBinding": false},
    "env": {"allow": ["PATH", "HOME", "LANG", "TERM"]},
    "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}})");
  EXPECT_EQ(p.filesystem().allowWrite, (std::vector<std::string>{".", "/tmp/build"}));
  EXPECT_EQ(p.network().allowedDomains.size(), 3u);
  EXPECT_EQ(p.env().allow.size(), 4u);
}

TEST(ParseTest, LoadsASandboxRuntimeSettingsFile) {
  // The fields sandbox-runtime's settings file shares with stockade.
  auto parsed = SandboxPolicy::parse(R"({
    "network": {"allowedDomains": ["github.com", "*.github.com", "registry.npmjs.org"],
                "deniedDomains": [], "allowUnixSockets": ["/var/run/docker.sock"], "allowLocalBinding": false},
    "filesystem": {"denyRead": ["~/.ssh"], "allowWrite": [".", "/tmp"], "denyWrite": [".env", "config/production.json"]}})");
  ASSERT_TRUE(std::holds_alternative<SandboxPolicy>(parsed)) << std::get<PolicyError>(parsed).text();
}

TEST(ParseTest, EmptyObjectIsTheBundledDefault) {
  auto p = SandboxPolicy::fromJson("{}");
  EXPECT_EQ(p, SandboxPolicy::defaults());
  for (PolicyField f : kAllPolicyFields) EXPECT_EQ(p.source(f), ValueSource::kDefault) << policyFieldPath(f);
}

// The issue's case: a file that only allows a domain kept nothing of the
// default, so the child could read ~/.ssh and got an empty environment.
TEST(ParseTest, OmittedFieldsTakeTheBundledDefaultsValue) {
  auto p = SandboxPolicy::fromJson(R"({"network":{"allowedDomains":["github.com"]}})");
  const SandboxPolicy d = SandboxPolicy::defaults();
  EXPECT_EQ(p.network().allowedDomains, std::vector<std::string>{"github.com"});
  EXPECT_EQ(p.filesystem(), d.filesystem());
  EXPECT_EQ(p.env(), d.env());
  EXPECT_EQ(p.limits(), d.limits());
  const auto& deny = p.filesystem().denyRead;
  for (const char* secret : {"~/.ssh", "/etc/shadow"})
    EXPECT_NE(std::find(deny.begin(), deny.end(), secret), deny.end()) << secret;
  EXPECT_EQ(p.env().allow, (std::vector<std::string>{"PATH", "HOME", "LANG", "TERM"}));
}

TEST(ParseTest, AnExplicitValueReplacesTheDefaultEvenWhenEmpty) {
  auto p = SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[],"allowWrite":["/srv/out"]},"env":{"allow":[]},
                                       "limits":{"pids":0}})");
  EXPECT_TRUE(p.filesystem().denyRead.empty());
  EXPECT_EQ(p.filesystem().allowWrite, std::vector<std::string>{"/srv/out"});
  EXPECT_TRUE(p.env().allow.empty());
  // A field of the same section that the file left out keeps its default.
  EXPECT_EQ(p.filesystem().allowRead, SandboxPolicy::defaults().filesystem().allowRead);
}

TEST(ParseTest, AnEmptySectionKeepsEveryDefaultOfThatSection) {
  for (const char* text : {R"({"filesystem":{}})", R"({"network":{}})", R"({"env":{}})", R"({"limits":{}})"})
    EXPECT_EQ(SandboxPolicy::fromJson(text), SandboxPolicy::defaults()) << text;
}

TEST(ParseTest, SourceSaysWhichFieldsTheTextGave) {
  auto p = SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["."],"denyWrite":[]},
                                       "network":{"allowLocalBinding":false},"limits":{"pids":8}})");
  std::vector<std::string> given;
  for (PolicyField f : kAllPolicyFields)
    if (p.source(f) == ValueSource::kGiven) given.emplace_back(policyFieldPath(f));
  // Given with the default's own value still counts as given.
  EXPECT_EQ(given, (std::vector<std::string>{"filesystem.allowWrite", "filesystem.denyWrite",
                                             "network.allowLocalBinding", "limits.pids"}));
}

TEST(ParseTest, EveryFieldHasItsOwnJsonPath) {
  std::set<std::string_view> paths;
  for (PolicyField f : kAllPolicyFields) {
    EXPECT_TRUE(policyFieldPath(f).find('.') != std::string_view::npos) << static_cast<unsigned>(f);
    paths.insert(policyFieldPath(f));
  }
  EXPECT_EQ(paths.size(), std::size(kAllPolicyFields));
}

// The compiled-in values (the C++ members' initialisers) are what
// policy/default.json says, and the file spells out every field.
TEST(ParseTest, TheBundledDefaultsAreWhatDefaultJsonSays) {
  auto parsed = SandboxPolicy::parse(SandboxPolicy::defaultJson());
  ASSERT_TRUE(std::holds_alternative<SandboxPolicy>(parsed)) << std::get<PolicyError>(parsed).text();
  const auto& fromText = std::get<SandboxPolicy>(parsed);
  EXPECT_EQ(fromText, SandboxPolicy::defaults());
  for (PolicyField f : kAllPolicyFields) {
    EXPECT_EQ(fromText.source(f), ValueSource::kGiven) << "policy/default.json leaves out " << policyFieldPath(f);
    EXPECT_EQ(SandboxPolicy::defaults().source(f), ValueSource::kDefault) << policyFieldPath(f);
  }
}

TEST(ParseTest, MakeStartsEveryMemberLeftOutAtTheBundledDefault) {
  const SandboxPolicy d = SandboxPolicy::defaults();
  auto p = SandboxPolicy::make({.allowWrite = {"/srv/out"}}, {.allowedDomains = {"github.com"}}, {});
  EXPECT_EQ(p.filesystem().denyRead, d.filesystem().denyRead);
  EXPECT_EQ(p.env(), d.env());
  EXPECT_EQ(p.source(PolicyField::kAllowWrite), ValueSource::kGiven);
  EXPECT_EQ(p.source(PolicyField::kAllowedDomains), ValueSource::kGiven);
  EXPECT_EQ(p.source(PolicyField::kDenyRead), ValueSource::kDefault);
  // The same policy in JSON is the same value.
  EXPECT_EQ(p, SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["/srv/out"]},"network":{"allowedDomains":["github.com"]}})"));
  // An explicit empty member replaces the default.
  auto open = SandboxPolicy::make({.denyRead = {}}, {}, {.allow = {}});
  EXPECT_TRUE(open.filesystem().denyRead.empty());
  EXPECT_TRUE(open.env().allow.empty());
  EXPECT_EQ(open.source(PolicyField::kDenyRead), ValueSource::kGiven);
}

TEST(ParseTest, FromJsonThrowsInvalidPolicyWithTheFieldInTheMessage) {
  try {
    SandboxPolicy::fromJson(R"({"network":{"allowedDomains":["*.com"]}})");
    FAIL() << "expected SandboxError";
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidPolicy);
    EXPECT_EQ(e.codeName(), "E_SANDBOX_INVALID_POLICY");
    EXPECT_NE(std::string(e.what()).find("network.allowedDomains[0]: \"*.com\" is too broad"), std::string::npos)
        << e.what();
  }
}

TEST(ParseTest, MakeValidatesPartsBuiltInCode) {
  EXPECT_THROW(SandboxPolicy::make({}, {.allowedDomains = {"*"}}, {}), SandboxError);
  EXPECT_THROW(SandboxPolicy::make({.denyWrite = {"/tmp/*"}}, {}, {}), SandboxError);
  EXPECT_NO_THROW(SandboxPolicy::make({.allowWrite = {"/tmp"}}, {.allowedDomains = {"github.com"}}, {.allow = {"PATH"}}));
}

TEST(ParseTest, BundledDefaultPolicyIsValidAndClosed) {
  SandboxPolicy p = SandboxPolicy::defaults();
  EXPECT_TRUE(p.network().allowedDomains.empty()) << "the default policy has no network";
  EXPECT_EQ(p.filesystem().allowWrite, std::vector<std::string>{"."});
  EXPECT_EQ(p.env().allow, (std::vector<std::string>{"PATH", "HOME", "LANG", "TERM"}));
  for (const char* secret : {"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.kube", "~/.docker/config.json",
                             "~/.netrc", "/etc/shadow"}) {
    const auto& deny = p.filesystem().denyRead;
    EXPECT_NE(std::find(deny.begin(), deny.end(), secret), deny.end()) << secret;
  }
}

TEST(ParseTest, ToJsonRoundTrips) {
  auto p = SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["a.example:443"]},
                                       "limits":{"pids":64}})");
  EXPECT_EQ(SandboxPolicy::fromJson(p.toJson()), p);
}

TEST(ParseTest, GarbageNeverThrowsOutOfParse) {
  for (std::string text : {std::string("\xff\xfe"), std::string("{\"a\":"), std::string(2 << 20, ' '),
                           std::string("{\"filesystem\":{\"denyRead\":[\"\xc3\x28\"]}}"), std::string("nul\0l", 5)}) {
    auto parsed = SandboxPolicy::parse(text);
    EXPECT_TRUE(std::holds_alternative<PolicyError>(parsed));
  }
}

}  // namespace
}  // namespace stockade
