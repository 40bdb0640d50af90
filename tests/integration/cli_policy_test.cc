// The `stockade policy` commands as a user runs them: real binary, real files.
#include <gtest/gtest.h>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using testing::ProcessResult;
using testing::runProcess;
using testing::stockadeBinary;
using testing::TempDir;

class CliPolicyTest : public ::testing::Test {
 protected:
  ProcessResult cli(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), stockadeBinary());
    return runProcess(args, input);
  }
  std::string policy(const std::string& name, const std::string& json) { return t_.file(name, json); }

  TempDir t_;
};

TEST_F(CliPolicyTest, CheckAcceptsTheBundledDefault) {
  auto r = cli({"policy", "check", STOCKADE_SOURCE_DIR "/policy/default.json"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(CliPolicyTest, CheckAcceptsEveryExamplePolicy) {
  for (const char* name : {"agent-git-npm-github.json", "ci-job.json", "locked-down-runner.json"}) {
    auto r = cli({"policy", "check", std::string(STOCKADE_SOURCE_DIR "/policy/examples/") + name});
    EXPECT_EQ(r.exitCode, 0) << name << ": " << r.err;
  }
}

TEST_F(CliPolicyTest, CheckRefusesABadPolicyWithExit2AndTheFieldOnStderr) {
  auto r = cli({"policy", "check", policy("bad.json", R"({"network":{"allowedDomains":["a.example","b.example","*.com"]}})")});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("network.allowedDomains[2]: \"*.com\" is too broad"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(CliPolicyTest, CheckReadsStandardInput) {
  EXPECT_EQ(cli({"policy", "check", "-"}, R"({"env":{"allow":["PATH"]}})").exitCode, 0);
  EXPECT_EQ(cli({"policy", "check", "-"}, R"({"env":{"allow":["PA TH"]}})").exitCode, 2);
}

TEST_F(CliPolicyTest, CheckOfAMissingFileIsExit2NamingIt) {
  auto r = cli({"policy", "check", t_ / "nope.json"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
}

TEST_F(CliPolicyTest, DeriveResolvesAgainstCwdAndPrintsFingerprintedRules) {
  std::string work = t_.dir("work");
  t_.file("work/.bashrc");
  auto r = cli({"policy", "derive", policy("p.json", R"({"filesystem":{"allowWrite":["."]}})"), "--cwd", work});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rules"]["filesystem"]["allowWrite"], nlohmann::json::array({work}));
  // Protected names are patterns, whether or not the file exists; no scan lists them.
  EXPECT_EQ(j["rules"]["filesystem"]["mandatoryDenyWrite"], nlohmann::json::array());
  const auto& names = j["rules"]["filesystem"]["protectedNames"];
  EXPECT_NE(std::find(names.begin(), names.end(), ".bashrc"), names.end()) << names.dump();
  EXPECT_NE(std::find(names.begin(), names.end(), ".git (not a directory)"), names.end()) << names.dump();
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 64u);
  // Same input, same fingerprint.
  auto again = cli({"policy", "derive", t_ / "p.json", "--cwd=" + work});
  EXPECT_EQ(nlohmann::json::parse(again.out)["fingerprint"], j["fingerprint"]);
}

TEST_F(CliPolicyTest, DeriveShowsWhereEachValueCameFromAndOmittedFieldsKeepTheDefault) {
  std::string work = t_.dir("work");
  std::string p = policy("partial.json", R"({"network":{"allowedDomains":["github.com"]},"env":{"allow":[]}})");
  auto r = cli({"policy", "derive", p, "--cwd", work});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sources"], nlohmann::json::parse(R"({
    "filesystem.denyRead": "default", "filesystem.allowRead": "default", "filesystem.allowWrite": "default",
    "filesystem.denyWrite": "default", "filesystem.allowWriteSystemPaths": "default",
    "network.allowedDomains": "file", "network.deniedDomains": "default",
    "network.allowUnixSockets": "default", "network.allowAllUnixSockets": "default",
    "network.allowLocalBinding": "default", "env.allow": "file",
    "limits.memoryBytes": "default", "limits.pids": "default", "limits.cpuSeconds": "default",
    "limits.fileSizeBytes": "default"})"));
  // The default's values are in the rules: "." writable, /etc/shadow read-denied; env as given.
  EXPECT_EQ(j["rules"]["filesystem"]["allowWrite"], nlohmann::json::array({work}));
  const auto& deny = j["rules"]["filesystem"]["denyRead"];
  EXPECT_NE(std::find(deny.begin(), deny.end(), "/etc/shadow"), deny.end()) << deny;
  EXPECT_EQ(j["rules"]["env"]["allow"], nlohmann::json::array());
}

TEST_F(CliPolicyTest, DeriveRefusesAWritableSystemDirectoryAndShowsTheOptIn) {
  std::string p = policy("p.json", R"({"filesystem":{"allowWrite":["."],"denyRead":[]}})");
  auto refused = cli({"policy", "derive", p, "--cwd", "/etc"});
  EXPECT_EQ(refused.exitCode, 2);
  EXPECT_NE(refused.err.find("filesystem.allowWrite[0]: \".\" resolves to \"/etc\", the system directory \"/etc\""),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("\"filesystem.allowWriteSystemPaths\": true"), std::string::npos) << refused.err;
  std::string opted = policy("opted.json", R"({"filesystem":{"allowWrite":["."],"denyRead":[],"allowWriteSystemPaths":true}})");
  auto shown = cli({"policy", "derive", opted, "--cwd", "/etc"});
  ASSERT_EQ(shown.exitCode, 0) << shown.err;
  auto j = nlohmann::json::parse(shown.out);
  EXPECT_EQ(j["rules"]["filesystem"]["allowWriteSystemPaths"], true);
  EXPECT_EQ(j["rules"]["filesystem"]["allowWrite"], nlohmann::json::array({"/etc"}));
}

TEST_F(CliPolicyTest, NarrowerExitCodes) {
  std::string base = policy("base.json", R"({"filesystem":{"allowWrite":["/tmp"]},"network":{"allowedDomains":["*.github.com"]}})");
  std::string narrow = policy("narrow.json", R"({"filesystem":{"allowWrite":["/tmp/x"]},"network":{"allowedDomains":["api.github.com"]}})");
  std::string wide = policy("wide.json", R"({"filesystem":{"allowWrite":["/tmp","/srv/data"]},"network":{"allowedDomains":["*.github.com"]}})");
  EXPECT_EQ(cli({"policy", "narrower", base, narrow}).exitCode, 0);
  auto r = cli({"policy", "narrower", base, wide});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_NE(r.err.find("filesystem.allowWrite: \"/srv/data\" is not inside any writable path of the base policy"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(cli({"policy", "narrower", base, policy("bad.json", "{")}).exitCode, 2);
}

TEST_F(CliPolicyTest, DiffPrintsPerAxisJsonAndExitsZero) {
  std::string a = policy("a.json", R"({"env":{"allow":["PATH"]}})");
  std::string b = policy("b.json", R"({"env":{"allow":["PATH","HOME"]}})");
  auto r = cli({"policy", "diff", a, b});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["axes"]["env.allow"]["added"], nlohmann::json::array({"HOME"}));
  EXPECT_TRUE(j["widens"].get<bool>());
}

TEST_F(CliPolicyTest, HelpOnEveryCommandAndUnknownFlagsAreErrors) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"policy", "--help"}, {"policy", "check", "--help"},
                                        {"policy", "derive", "--help"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.exitCode, 0) << args.back();
    EXPECT_NE(r.out.find("usage"), std::string::npos) << r.out;
  }
  auto r = cli({"policy", "check", "--frobnicate", "x.json"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"policy", "check", "--cwd", "/", "x.json"}).exitCode, 2) << "check takes no --cwd";
  EXPECT_EQ(cli({"policy", "explode"}).exitCode, 2);
  EXPECT_EQ(cli({"frobnicate"}).exitCode, 2);
}

}  // namespace
}  // namespace stockade
