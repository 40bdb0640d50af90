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
        BadPolicy{"UnknownTopKey", R"({"filesystem":{},"sandbox":{}})", "sandbox", "unknown key \"sandbox\"; expected one of: filesystem, network, env, limits"},
        BadPolicy{"UnknownNestedKey", R"({"filesystem":{"denyReads":[]}})", "filesystem.denyReads", "unknown key"},
        BadPolicy{"DuplicateKey", R"({"filesystem":{"denyRead":["/a"],"denyRead":[]}})", "filesystem.denyRead", "appears twice in the same object; give each key once"},
        BadPolicy{"DuplicateTopKey", R"({"env":{},"env":{}})", "env", "appears twice"},
        BadPolicy{"SectionWrongType", R"({"network":[]})", "network", "must be an object"},
        BadPolicy{"ListWrongType", R"({"filesystem":{"allowWrite":"/tmp"}})", "filesystem.allowWrite", "must be an array"},
        BadPolicy{"ListItemWrongType", R"({"filesystem":{"allowWrite":["/tmp",3]}})", "filesystem.allowWrite[1]", "not a number"},
        BadPolicy{"DomainItemWrongType", R"({"network":{"allowedDomains":[true]}})", "network.allowedDomains[0]", "must be a string, not a boolean"},
        BadPolicy{"PathObjectWithoutLiteral", R"({"filesystem":{"denyRead":[{"path":"/a"}]}})", "filesystem.denyRead[0]", "{\"path\":\"/a\"} is not a path entry; write a path, or {\"path\": \"<path>\", \"literal\": true}"},
        BadPolicy{"PathObjectLiteralFalse", R"({"filesystem":{"denyRead":[{"path":"/a","literal":false}]}})", "filesystem.denyRead[0]", "is not a path entry"},
        BadPolicy{"PathObjectExtraKey", R"({"filesystem":{"denyRead":[{"path":"/a","literal":true,"x":1}]}})", "filesystem.denyRead[0]", "is not a path entry"},
        BadPolicy{"LiteralEntryEmpty", R"({"filesystem":{"allowWrite":[{"path":"","literal":true}]}})", "filesystem.allowWrite[0]", "is empty"},
        BadPolicy{"EmptyPath", R"({"filesystem":{"denyRead":[""]}})", "filesystem.denyRead[0]", "is empty"},
        BadPolicy{"OtherUsersHome", R"({"filesystem":{"denyRead":["~bob/.ssh"]}})", "filesystem.denyRead[0]", "only \"~\""},
        BadPolicy{"GlobInAllowWrite", R"({"filesystem":{"allowWrite":["/tmp/*"]}})", "filesystem.allowWrite[0]", "\"/tmp/*\" contains a glob character (*, ?, [); this list takes paths only: to name a path with such characters write {\"path\": \"/tmp/*\", \"literal\": true}"},
        BadPolicy{"GlobInUnixSockets", R"({"network":{"allowUnixSockets":["/run/*.sock"]}})", "network.allowUnixSockets[0]", "contains a glob character"},
        BadPolicy{"NulInPath", R"({"filesystem":{"denyRead":["/a\u0000b"]}})", "filesystem.denyRead[0]", "NUL"},
        BadPolicy{"BoolWrongType", R"({"network":{"allowLocalBinding":"yes"}})", "network.allowLocalBinding", "true or false"},
        BadPolicy{"SystemPathsOptInWrongType", R"({"filesystem":{"allowWriteSystemPaths":1}})",
                  "filesystem.allowWriteSystemPaths", "true or false, not a number"},
        BadPolicy{"DomainStar", R"({"network":{"allowedDomains":["*"]}})", "network.allowedDomains[0]", "matches every host; list the domains the child needs (only deniedDomains takes \"*\")"},
        BadPolicy{"DeniedStarBadPort", R"({"network":{"deniedDomains":["*:0"]}})", "network.deniedDomains[0]", "\"*:0\" has port \"0\"; a port is a number from 1 to 65535"},
        BadPolicy{"DeniedStarDot", R"({"network":{"deniedDomains":["*.*"]}})", "network.deniedDomains[0]", "more than one"},
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
        BadPolicy{"LimitNegative", R"({"limits":{"pids":-1}})", "limits.pids", "-1 is negative; give a whole number from 0 to 18446744073709551615 (use 0 for no limit)"},
        BadPolicy{"LimitHugeNegative", R"({"limits":{"pids":-99999999999999999999}})", "limits.pids", "-99999999999999999999 is negative"},
        BadPolicy{"LimitTwoToThe64", R"({"limits":{"memoryBytes":18446744073709551616}})", "limits.memoryBytes", "18446744073709551616 is larger than 18446744073709551615, the largest value; use 0 for no limit"},
        BadPolicy{"LimitFraction", R"({"limits":{"memoryBytes":1.5}})", "limits.memoryBytes", "1.5 is not a whole number; write it in digits, such as 1073741824 (use 0 for no limit)"},
        BadPolicy{"LimitExponent", R"({"limits":{"fileSizeBytes":1e3}})", "limits.fileSizeBytes", "1e3 is not a whole number"},
        BadPolicy{"LimitString", R"({"limits":{"cpuSeconds":"10"}})", "limits.cpuSeconds", "must be a whole number, not a string; use 0 for no limit"},
        BadPolicy{"LimitUnknown", R"({"limits":{"files":3}})", "limits.files", "unknown key \"files\"; expected one of: memoryBytes, pids, cpuSeconds, fileSizeBytes"},
        BadPolicy{"EnvUnknown", R"({"env":{"deny":[]}})", "env.deny", "unknown key \"deny\"; expected: allow"},
        // sandbox-runtime keys that would weaken enforcement.
        BadPolicy{"SrtWeakerNestedSandbox", R"({"enableWeakerNestedSandbox":true})", "enableWeakerNestedSandbox", "true is refused: it would weaken enforcement, and stockade never runs a weaker sandbox; run it where unprivileged user namespaces are allowed; remove the key or set it to false"},
        BadPolicy{"SrtNestedUserNamespaces", R"({"allowNestedUserNamespaces":true})", "allowNestedUserNamespaces", "is refused"},
        BadPolicy{"SrtFilesystemDisabled", R"({"filesystem":{"disabled":true}})", "filesystem.disabled", "is refused"},
        BadPolicy{"SrtAllowGitConfig", R"({"filesystem":{"allowGitConfig":true}})", "filesystem.allowGitConfig", "is refused"},
        BadPolicy{"SrtRefuseOpaqueTunnels", R"({"network":{"refuseOpaqueTunnels":true}})", "network.refuseOpaqueTunnels", "is refused"},
        BadPolicy{"SrtFilterRequest", R"({"network":{"filterRequest":"x"}})", "network.filterRequest", "\"x\" is refused: it would weaken enforcement, and a library callback: a settings file cannot hold one, and stockade has none; remove the key"},
        BadPolicy{"SrtFlagNotBoolean", R"({"enableWeakerNestedSandbox":"no"})", "enableWeakerNestedSandbox", "must be true or false, not a string"},
        BadPolicy{"SrtUnknownNested", R"({"network":{"allowMachLookups":[]}})", "network.allowMachLookups", "unknown key \"allowMachLookups\"; expected one of: allowedDomains, deniedDomains, allowUnixSockets, allowAllUnixSockets, allowLocalBinding, deniedResolvedAddresses (sandbox-runtime keys: see docs/srt-compat.md)"},
        BadPolicy{"SrtSearchDepthZero", R"({"mandatoryDenySearchDepth":0})", "mandatoryDenySearchDepth", "0 is outside 1 to 10"},
        BadPolicy{"SrtSearchDepthString", R"({"mandatoryDenySearchDepth":"3"})", "mandatoryDenySearchDepth", "must be a whole number, not a string"},
        BadPolicy{"SrtResolvedPublicRange", R"({"network":{"deniedResolvedAddresses":["8.8.8.0/24"]}})", "network.deniedResolvedAddresses[0]", "\"8.8.8.0/24\" is refused: stockade refuses loopback"},
        BadPolicy{"SrtResolvedNotARange", R"({"network":{"deniedResolvedAddresses":["10.0.0.0/33"]}})", "network.deniedResolvedAddresses[0]", "is not an IP address or CIDR range"},
        BadPolicy{"SrtCredentialMode", R"({"credentials":{"files":[{"path":"~/.aws","mode":"hide"}]}})", "credentials.files[0].mode", "must be \"deny\" or \"mask\""},
        BadPolicy{"SrtCredentialEnvName", R"({"credentials":{"envVars":[{"name":"A-B","mode":"deny"}]}})", "credentials.envVars[0].name", "is not a variable name"},
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
  EXPECT_THROW(SandboxPolicy::make({.allowWrite = {"/tmp/*"}}, {}, {}), SandboxError);
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
