// sandbox-runtime settings files as policies: the examples of its README
// (0.0.83, written here from the README's text) load, every key of its
// settings schema is known, each key stockade can enforce keeps its meaning,
// and docs/srt-compat.md lists every key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/domain.h"
#include "policy/srt_settings.h"
#include "stockade/rules.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using Kind = PolicyNote::Kind;

struct Example {
  const char* name;
  const char* json;
  std::vector<std::pair<Kind, std::string>> notes;  // expected, in document order
};

void PrintTo(const Example& e, std::ostream* os) { *os << e.name; }

// The settings examples of sandbox-runtime 0.0.83's README, as printed there.
const Example kReadmeExamples[] = {
    {"McpServerSettings", R"({
  "filesystem": {
    "denyRead": [],
    "allowWrite": ["."],
    "denyWrite": ["~/sensitive-folder"]
  },
  "network": {
    "allowedDomains": [],
    "deniedDomains": []
  }
})",
     {}},
    {"CompleteConfigurationExample", R"({
  "network": {
    "allowedDomains": [
      "github.com",
      "*.github.com",
      "lfs.github.com",
      "api.github.com",
      "npmjs.org",
      "*.npmjs.org"
    ],
    "deniedDomains": ["malicious.com"],
    "allowUnixSockets": ["/var/run/docker.sock"],
    "allowLocalBinding": false
  },
  "filesystem": {
    "denyRead": ["~/.ssh"],
    "allowRead": [],
    "allowWrite": [".", "src/", "test/", "/tmp"],
    "denyWrite": [".env", "config/production.json"]
  },
  "ignoreViolations": {
    "*": ["/usr/bin", "/System"],
    "git push": ["/usr/bin/nc"],
    "npm": ["/private/tmp"]
  },
  "enableWeakerNestedSandbox": false,
  "allowNestedUserNamespaces": false,
  "enableWeakerNetworkIsolation": false,
  "allowAppleEvents": false
})",
     {{Kind::kStronger, "ignoreViolations"},
      {Kind::kNotApplicable, "enableWeakerNetworkIsolation"},
      {Kind::kNotApplicable, "allowAppleEvents"}}},
    {"TlsTermination", R"({
  "network": {
    "allowedDomains": ["*.example.com", "internal-mtls.example.net"],
    "deniedDomains": [],
    "tlsTerminate": {
      "excludeDomains": ["internal-mtls.example.net"],
      "extraCaCertPaths": ["/etc/internal-mtls-roots.pem"]
    }
  }
})",
     {{Kind::kNotApplicable, "network.tlsTerminate"}}},
    {"AllowGitHubAccess", R"({
  "network": {
    "allowedDomains": [
      "github.com",
      "*.github.com",
      "lfs.github.com",
      "api.github.com"
    ],
    "deniedDomains": []
  },
  "filesystem": {
    "denyRead": [],
    "allowWrite": ["."],
    "denyWrite": []
  }
})",
     {}},
    {"RestrictToSpecificDirectories", R"({
  "network": {
    "allowedDomains": [],
    "deniedDomains": []
  },
  "filesystem": {
    "denyRead": ["~/.ssh"],
    "allowWrite": [".", "src/", "test/"],
    "denyWrite": [".env", "secrets/"]
  }
})",
     {}},
    {"WorkspaceOnlyFilesystemAccess", R"({
  "network": {
    "allowedDomains": [],
    "deniedDomains": []
  },
  "filesystem": {
    "denyRead": ["/Users"],
    "allowRead": ["."],
    "allowWrite": ["."],
    "denyWrite": []
  }
})",
     {}},
    {"LocalServersOnWindows", R"({ "network": { "allowLocalBinding": true } })", {}},
    {"MandatoryDenySearchDepth", R"({
  "mandatoryDenySearchDepth": 5,
  "filesystem": {
    "allowWrite": ["."]
  }
})",
     {{Kind::kStronger, "mandatoryDenySearchDepth"}}},
};

class ReadmeExampleTest : public ::testing::TestWithParam<Example> {};

TEST_P(ReadmeExampleTest, LoadsAndDerivesWithItsNotes) {
  const Example& e = GetParam();
  auto parsed = SandboxPolicy::parse(e.json);
  ASSERT_TRUE(std::holds_alternative<SandboxPolicy>(parsed)) << std::get<PolicyError>(parsed).text();
  const auto& policy = std::get<SandboxPolicy>(parsed);
  std::vector<std::pair<Kind, std::string>> notes;
  for (const auto& n : policy.notes()) notes.emplace_back(n.kind, n.path);
  EXPECT_EQ(notes, e.notes);
  testing::TempDir t;
  auto derived = derive(policy, {.home = t.dir("home"), .cwd = t.dir("work"), .tmpdir = std::nullopt});
  EXPECT_TRUE(std::holds_alternative<DerivedRules>(derived)) << std::get<PolicyError>(derived).text();
}

INSTANTIATE_TEST_SUITE_P(SandboxRuntime0083, ReadmeExampleTest, ::testing::ValuesIn(kReadmeExamples),
                         [](const auto& i) { return std::string(i.param.name); });

// Every key of sandbox-runtime 0.0.83's settings schema, each with a value
// stockade accepts: none of them is an unknown key.
TEST(SrtSettingsTest, EveryKeyOfTheSettingsSchemaIsKnown) {
  auto parsed = SandboxPolicy::parse(R"({
    "network": {"allowedDomains": ["a.example"], "deniedDomains": ["*:22"], "deniedDomainReasons": {"*:22": "no ssh"},
                "strictAllowlist": true, "deniedResolvedAddresses": ["10.0.0.0/8", "203.0.113.7"],
                "allowUnixSockets": [], "allowAllUnixSockets": false, "allowLocalBinding": false,
                "allowMachLookup": ["com.example.*"], "httpProxyPort": 8080, "socksProxyPort": 1080,
                "mitmProxy": {"socketPath": "/tmp/m.sock", "domains": ["a.example"]},
                "allowPlaintextHeaderSet": false, "stripResponseHeaders": ["set-cookie"],
                "refuseOpaqueTunnels": false, "requireHostMatch": false, "ambiguousRequestTarget": "refuse",
                "tlsTerminate": {"excludeDomains": []}, "parentProxy": {"http": "http://proxy.example:3128"}},
    "filesystem": {"disabled": false, "denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": [],
                   "allowGitConfig": false},
    "credentials": {"files": [{"path": "~/.aws/credentials", "mode": "deny"}],
                    "envVars": [{"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["a.example"]}],
                    "allowPlaintextInject": false, "awsPairs": [], "sigv4": {"streaming": "deny"}},
    "ignoreViolations": {}, "enableWeakerNestedSandbox": false, "allowNestedUserNamespaces": false,
    "enableWeakerNetworkIsolation": false, "allowAppleEvents": false, "ripgrep": {"command": "rg"},
    "mandatoryDenySearchDepth": 3, "allowPty": false, "seccomp": {"applyPath": "/x"}, "bwrapPath": "/usr/bin/bwrap",
    "socatPath": "/usr/bin/socat", "javaAgentJarPath": "/x.jar", "windows": {"proxyPortRange": [60080, 60089]},
    "git": {"safeDirectories": []}})");
  ASSERT_TRUE(std::holds_alternative<SandboxPolicy>(parsed)) << std::get<PolicyError>(parsed).text();
}

TEST(SrtSettingsTest, EveryProblemOfAFileIsReportedAtOnce) {
  auto parsed = SandboxPolicy::parse(R"({"enableWeakerNestedSandbox": true, "filesystem": {"allowWrite": "."},
                                         "network": {"allowedDomains": ["*.com"], "tlsTerminate": {}},
                                         "limits": {"pids": -2}, "bogus": 1})");
  ASSERT_TRUE(std::holds_alternative<PolicyError>(parsed));
  const auto& e = std::get<PolicyError>(parsed);
  std::vector<std::string> paths = {e.path};
  for (const auto& m : e.more) paths.push_back(m.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"enableWeakerNestedSandbox", "filesystem.allowWrite", "limits.pids",
                                             "bogus", "network.allowedDomains[0]"}))
      << e.text();
}

TEST(SrtSettingsTest, ALiteralEntryIsNeverAPattern) {
  testing::TempDir t;
  std::string work = t.dir("work");
  t.file("work/a.env");
  auto p = SandboxPolicy::fromJson(R"({"filesystem": {
      "denyRead": [{"path": "*.env", "literal": true}, "*.env"],
      "allowWrite": [{"path": "[WIP] draft", "literal": true}], "denyWrite": []}})");
  auto rules = std::get<DerivedRules>(derive(p, {.home = t.dir("home"), .cwd = work, .tmpdir = std::nullopt}));
  const auto& deny = rules.filesystem().denyRead;
  EXPECT_NE(std::find(deny.begin(), deny.end(), work + "/*.env"), deny.end()) << "the literal name, though it is missing";
  EXPECT_NE(std::find(deny.begin(), deny.end(), work + "/a.env"), deny.end()) << "the pattern's match";
  EXPECT_EQ(rules.filesystem().denyReadPatterns, std::vector<std::string>{work + "/*.env"});
  EXPECT_EQ(rules.filesystem().allowWrite, std::vector<std::string>{work + "/[WIP] draft"});
  // Written back, a literal stays literal.
  EXPECT_EQ(SandboxPolicy::fromJson(p.toJson()), p);
  EXPECT_NE(p.toJson().find(R"("literal": true)"), std::string::npos) << p.toJson();
}

TEST(SrtSettingsTest, AllowReadAndDenyWriteTakeGlobsExpandedToTheirMatches) {
  testing::TempDir t;
  std::string work = t.dir("work");
  std::string key = t.file("home/keys/deploy.pub");
  t.file("home/keys/deploy");
  std::string conf = t.file("work/conf/app.yaml");
  t.file("work/conf/app.json");
  auto p = SandboxPolicy::fromJson(R"({"filesystem": {"denyRead": ["~/keys"], "allowRead": ["~/keys/*.pub"],
                                       "allowWrite": ["."], "denyWrite": ["conf/*.yaml", "build/**"]}})");
  auto rules = std::get<DerivedRules>(derive(p, {.home = t.path() + "/home", .cwd = work, .tmpdir = std::nullopt}));
  EXPECT_TRUE(rules.readable(key));
  EXPECT_FALSE(rules.readable(t.path() + "/home/keys/deploy"));
  EXPECT_FALSE(rules.writable(conf));
  EXPECT_TRUE(rules.writable(work + "/conf/app.json"));
  EXPECT_FALSE(rules.writable(work + "/build/out.o")) << "\"build/**\" is the directory build";
  EXPECT_EQ(rules.filesystem().denyWritePatterns, std::vector<std::string>{work + "/conf/*.yaml"});
  EXPECT_EQ(rules.filesystem().allowReadPatterns, std::vector<std::string>{t.path() + "/home/keys/*.pub"});
}

TEST(SrtSettingsTest, DeniedDomainsTakeEveryHostAndEveryHostOnAPort) {
  auto p = SandboxPolicy::fromJson(R"({"network": {"allowedDomains": ["a.example"], "deniedDomains": ["*:22", "*.com"]}})");
  testing::TempDir t;
  auto rules = std::get<DerivedRules>(derive(p, {.home = t / "home", .cwd = t / "work", .tmpdir = std::nullopt}));
  const auto& denied = rules.network().deniedDomains;
  auto every = std::find_if(denied.begin(), denied.end(), [](const DomainRule& r) { return r.matchesEveryHost(); });
  ASSERT_NE(every, denied.end());
  EXPECT_TRUE(every->matches("a.example", 22));
  EXPECT_FALSE(every->matches("a.example", 443));
  EXPECT_EQ(every->text(), "*:22");
  // A deny of every host covers every other deny, and narrows any policy.
  EXPECT_TRUE((DomainRule{"evil.example", 22}.within(*every)));
  EXPECT_FALSE(every->within(DomainRule{"*.example", std::nullopt}));
  auto closed = SandboxPolicy::fromJson(R"({"network": {"allowedDomains": ["a.example"], "deniedDomains": ["*"]}})");
  auto closedRules = std::get<DerivedRules>(derive(closed, {.home = t / "home", .cwd = t / "work", .tmpdir = std::nullopt}));
  EXPECT_FALSE(narrowing(rules, closedRules).has_value());
  EXPECT_TRUE(narrowing(closedRules, rules).has_value()) << "dropping the deny of every host widens";
}

TEST(SrtSettingsTest, AllowAllUnixSocketsIsAFieldThatOnlyABaseWithItCovers) {
  testing::TempDir t;
  DeriveContext ctx{.home = t / "home", .cwd = t / "work", .tmpdir = std::nullopt};
  auto all = std::get<DerivedRules>(derive(SandboxPolicy::fromJson(R"({"network":{"allowAllUnixSockets":true}})"), ctx));
  auto none = std::get<DerivedRules>(derive(SandboxPolicy::fromJson(R"({"network":{"allowAllUnixSockets":false}})"), ctx));
  EXPECT_TRUE(all.network().unixSocketsAllowed());
  EXPECT_FALSE(none.network().unixSocketsAllowed());
  auto w = narrowing(none, all);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->axis, "network.allowAllUnixSockets");
  EXPECT_FALSE(narrowing(all, none).has_value());
}

TEST(SrtSettingsTest, CredentialsAreReadDeniedAndWithheldAndAMaskIsADeny) {
  auto p = SandboxPolicy::fromJson(R"j({"env": {"allow": ["PATH", "GITHUB_TOKEN"]},
    "credentials": {"files": [{"path": "~/.aws/credentials", "mode": "mask", "extract": "key=(\\S+)"}],
                    "envVars": [{"name": "GITHUB_TOKEN", "mode": "deny"}]},
    "filesystem": {"denyRead": ["~/.ssh"]}})j");
  EXPECT_EQ(p.filesystem().denyRead, (std::vector<std::string>{"~/.ssh", "~/.aws/credentials"}));
  EXPECT_EQ(p.env().allow, std::vector<std::string>{"PATH"});
  ASSERT_EQ(p.notes().size(), 1u);
  EXPECT_EQ(p.notes()[0].path, "credentials.files[0].mode");
  EXPECT_EQ(p.notes()[0].kind, Kind::kStronger);
}

TEST(SrtSettingsTest, AResolvedAddressIsADeniedDomainAndARefusedRangeIsNoted) {
  auto p = SandboxPolicy::fromJson(R"({"network": {"deniedDomains": ["evil.example"],
    "deniedResolvedAddresses": ["203.0.113.7", "fd00::1", "192.168.0.0/16", "fc00::/7"]}})");
  EXPECT_EQ(p.network().deniedDomains, (std::vector<std::string>{"evil.example", "203.0.113.7", "[fd00::1]"}));
  ASSERT_EQ(p.notes().size(), 2u);
  EXPECT_EQ(p.notes()[0].path, "network.deniedResolvedAddresses[2]");
}

TEST(SrtSettingsTest, TheAlwaysRefusedRangesAreCidrs) {
  for (std::string_view range : policy::alwaysRefusedRanges())
    EXPECT_EQ(policy::classifyAddressRange(range), policy::AddressRange::kAlwaysRefused) << range;
  EXPECT_EQ(policy::classifyAddressRange("10.1.0.0/16"), policy::AddressRange::kAlwaysRefused);
  EXPECT_EQ(policy::classifyAddressRange("10.0.0.0/7"), policy::AddressRange::kOther);
  EXPECT_EQ(policy::classifyAddressRange("8.8.8.8/32"), policy::AddressRange::kOther);
  EXPECT_EQ(policy::classifyAddressRange("fc00::/6"), policy::AddressRange::kOther);
  EXPECT_EQ(policy::classifyAddressRange("10.0.0.0"), policy::AddressRange::kNotARange);
  EXPECT_EQ(policy::classifyAddressRange("10.0.0.0/x"), policy::AddressRange::kNotARange);
}

TEST(SrtSettingsTest, EveryRowHasAReasonAndAPathOfItsOwn) {
  std::vector<std::string_view> paths;
  for (const auto& k : policy::srtKeys()) {
    EXPECT_FALSE(k.why.empty()) << k.path;
    paths.push_back(k.path);
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(std::adjacent_find(paths.begin(), paths.end()), paths.end());
}

// docs/srt-compat.md is the table for users: it names every key the table
// has, and every stockade field.
TEST(SrtSettingsTest, TheCompatibilityDocumentNamesEveryKey) {
  std::ifstream in(STOCKADE_SOURCE_DIR "/docs/srt-compat.md");
  ASSERT_TRUE(in) << "docs/srt-compat.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (const auto& k : policy::srtKeys())
    EXPECT_NE(doc.find("`" + std::string(k.path) + "`"), std::string::npos) << k.path;
  for (PolicyField f : kAllPolicyFields)
    EXPECT_NE(doc.find("`" + std::string(policyFieldPath(f)) + "`"), std::string::npos) << policyFieldPath(f);
  for (const char* special : {"`credentials.files`", "`credentials.envVars`", "`network.deniedResolvedAddresses`",
                              "`mandatoryDenySearchDepth`"})
    EXPECT_NE(doc.find(special), std::string::npos) << special;
}

}  // namespace
}  // namespace stockade
