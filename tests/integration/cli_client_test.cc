// The stockade CLI as a client of the real stockaded (`stockade sandbox ...`).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;

class CliClientTest : public ::testing::Test {
 protected:
  CliClientTest() : daemon(dir) {}

  // The CLI with --connect and --token-file, then `args`.
  ProcessResult cli(std::vector<std::string> args, bool withToken = true) {
    std::vector<std::string> argv = {stockadeBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--connect", "unix:" + daemon.socketPath()});
    if (withToken) argv.insert(argv.end(), {"--token-file", daemon.tokenFile()});
    return runProcess(argv);
  }

  TempDir dir;
  DaemonProcess daemon;
};

TEST_F(CliClientTest, SandboxCreateListNarrowAndRemove) {
  auto r = cli({"sandbox", "create"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(id.starts_with("sb_")) << r.out;
  r = cli({"sandbox", "ls"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find(id), std::string::npos);
  EXPECT_NE(r.out.find("active"), std::string::npos);
  r = cli({"sandbox", "ls", "--json"});
  EXPECT_EQ(json::parse(r.out)["items"][0]["id"], id);
  std::string narrow = dir.file("narrow.json", R"({"filesystem":{"allowWrite":[]}})");
  r = cli({"sandbox", "narrow", id, "--policy", narrow});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("narrowed " + id), std::string::npos);
  r = cli({"sandbox", "show", id});
  EXPECT_EQ(json::parse(r.out)["effectivePolicy"]["filesystem"]["allowWrite"], json::array());
  r = cli({"sandbox", "rm", id});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = cli({"sandbox", "ls", "--json"});
  EXPECT_EQ(json::parse(r.out)["items"].size(), 0u);
}

TEST_F(CliClientTest, ARefusalReadsWellAndExits1) {
  std::string wide = dir.file("wide.json", R"({"filesystem":{"allowWrite":["/etc"]}})");
  auto r = cli({"sandbox", "create", "--policy", wide});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(r.err.starts_with("stockade: sandbox create: policy is wider than the daemon's baseline")) << r.err;
  EXPECT_NE(r.err.find("\"/etc\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(E_SANDBOX_POLICY_CONFLICT)"), std::string::npos) << r.err;
  std::string broken = dir.file("broken.json", R"({"network":{"allowedDomains":["*.com"]}})");
  r = cli({"sandbox", "create", "--policy", broken});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("network.allowedDomains[0]"), std::string::npos) << "checked before anything is sent: " << r.err;
  r = cli({"sandbox", "rm", "sb_00000000000000000000000000000000"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("(not_found)"), std::string::npos) << r.err;
}

TEST_F(CliClientTest, AMissingTokenSaysHowToGiveOne) {
  auto r = cli({"sandbox", "ls"}, false);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("(unauthorized)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--token-file"), std::string::npos) << r.err;
  // From the environment instead.
  r = runProcess({"env", "STOCKADE_CONNECT=unix:" + daemon.socketPath(), "STOCKADE_TOKEN_FILE=" + daemon.tokenFile(),
                  stockadeBinary(), "sandbox", "ls", "--json"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["items"].is_array());
}

TEST_F(CliClientTest, AnUnreachableDaemonIsNamed) {
  auto r = runProcess({stockadeBinary(), "sandbox", "ls", "--connect", "unix:" + (dir / "nothing.sock")});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("cannot connect to unix:" + (dir / "nothing.sock")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is stockaded running?"), std::string::npos) << r.err;
  r = runProcess({stockadeBinary(), "sandbox", "ls", "--connect", "nonsense"});
  EXPECT_EQ(r.exitCode, 2);
  r = runProcess({stockadeBinary(), "sandbox", "frobnicate", "--connect", "unix:/x"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("unknown subcommand"), std::string::npos);
}

}  // namespace
}  // namespace stockade::testing
