// limits.pids from inside the sandbox: a fork loop stops at the limit, a
// program within it runs, the sandbox cannot leave or raise its cgroup, and
// the cgroup is gone once the run is over. Without a usable pids cgroup (the
// unprivileged re-run) the run must say the limit is not enforced.
#include <sys/wait.h>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "platform/linux/cgroup.h"
#include "tests/security/sandbox_fixture.h"
#include "tests/support/pids_cgroup.h"

namespace stockade::testing {
namespace {


class PidsLimitEscapeTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    policy["limits"] = {{"pids", 8}};
    audit_ = root_ + "/audit.jsonl";
  }
  // The spawn event's enforcement.pids of the last run (null: not enforced).
  nlohmann::json lastPidsEnforcement() {
    std::ifstream in(audit_);
    nlohmann::json pids;
    for (std::string line; std::getline(in, line);) {
      auto event = nlohmann::json::parse(line);
      if (event["event"] == "spawn") pids = event["enforcement"]["pids"];
    }
    return pids;
  }
  ProcessResult run(const std::vector<std::string>& args) { return probe(args, {"--audit", audit_}); }
  std::string audit_;
};

TEST_F(PidsLimitEscapeTest, AForkLoopStopsAtTheLimitWhileAProgramWithinItRuns) {
  auto within = run({"fork-until-fail", "7"});  // the probe and 7 children: 8 tasks
  auto pids = lastPidsEnforcement();
  if (pids.is_null()) {
    ASSERT_FALSE(pidsCgroupRequired()) << "root on a host with a pids hierarchy, yet not enforced: " << within.err;
    EXPECT_NE(within.err.find("weaker enforcement: limits.pids: not enforced"), std::string::npos) << within.err;
    GTEST_SKIP() << "no usable pids cgroup for this user; the run was warned about";
  }
  EXPECT_EQ(within.exitCode, 0) << within.out << within.err;
  EXPECT_NE(within.out.find("forked=7\n"), std::string::npos) << within.out;
  EXPECT_EQ(within.err.find("weaker enforcement"), std::string::npos) << within.err;

  auto loop = run({"fork-until-fail", "1000"});
  EXPECT_EQ(loop.exitCode, 1) << loop.out << loop.err;
  EXPECT_NE(loop.out.find("forked=7\n"), std::string::npos) << loop.out;
  EXPECT_NE(loop.out.find("errno=EAGAIN"), std::string::npos) << loop.out;
  EXPECT_FALSE(std::filesystem::exists(lastPidsEnforcement()["cgroup"].get<std::string>()));
}

TEST_F(PidsLimitEscapeTest, TheSandboxCannotLeaveOrRaiseItsCgroupWhileItsOwnFilesStayWritable) {
  std::ofstream(ws + "/note") << "x";
  auto first = run({"write-text", ws + "/note", "0"});
  auto pids = lastPidsEnforcement();
  if (pids.is_null()) {
    ASSERT_FALSE(pidsCgroupRequired()) << first.err;
    GTEST_SKIP() << "no usable pids cgroup for this user";
  }
  const std::string cgroup = pids["cgroup"];
  const std::string parent = std::filesystem::path(cgroup).parent_path().string();
  // "0" written to cgroup.procs moves the writer itself.
  for (const auto& [path, text] : std::vector<std::pair<std::string, std::string>>{
           {parent + "/cgroup.procs", "0"}, {cgroup + "/pids.max", "max"}, {parent + "/tasks", "0"}}) {
    auto r = run({"write-text", path, text});
    EXPECT_EQ(r.exitCode, 1) << path << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("open: "), std::string::npos) << path << ": " << r.err;  // refused at open, not at parse
  }
  // A fresh cgroup from inside: refused as well.
  auto mk = run({"mkdir", parent + "/escape"});
  EXPECT_EQ(mk.exitCode, 1) << mk.err;
  EXPECT_FALSE(std::filesystem::exists(parent + "/escape"));
  // The neighbour: a write-allowed file takes the same write.
  auto ok = run({"write-text", ws + "/note", "0"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_EQ(slurp(ws + "/note"), "0");
}

TEST_F(PidsLimitEscapeTest, AWritableCgroupTreeMakesThePidsLimitADegradationNotAClaim) {
  if (!pidsCgroupRequired()) GTEST_SKIP() << "no pids cgroup for this user: the limit is reported as not enforced anyway";
  // A policy that write-allows the cgroup tree: the program could move itself
  // out ("echo 0 > .../tasks"), so the limit must not be claimed as enforced.
  policy["filesystem"]["allowWrite"].push_back("/sys/fs/cgroup");
  auto r = run({"fork-until-fail", "3"});
  EXPECT_NE(r.err.find("could leave its pids cgroup"), std::string::npos) << r.err;
  // The default policy's tree (workspace only) gets no such warning.
  policy["filesystem"]["allowWrite"] = {ws};
  auto ok = run({"fork-until-fail", "3"});
  EXPECT_EQ(ok.err.find("could leave its pids cgroup"), std::string::npos) << ok.err;
}

TEST_F(PidsLimitEscapeTest, CgroupsLeftByAKilledSupervisorAreSweptThoseOfALiveOneAreNot) {
  if (!pidsCgroupRequired()) GTEST_SKIP() << "no pids cgroup for this user: nothing is created, nothing to sweep";
  auto controller = platform::findPidsController();  // the hierarchy stockade will use
  ASSERT_TRUE(std::holds_alternative<platform::PidsHierarchy>(controller)) << std::get<std::string>(controller);
  std::string base = std::get<platform::PidsHierarchy>(controller).ownCgroupDir;
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  std::string abandoned = base + "/stockade-" + std::to_string(dead) + "-0";
  std::string live = base + "/stockade-" + std::to_string(::getpid()) + "-999";
  ASSERT_EQ(::mkdir(abandoned.c_str(), 0755), 0) << abandoned << ": " << std::strerror(errno);
  ASSERT_EQ(::mkdir(live.c_str(), 0755), 0) << live << ": " << std::strerror(errno);
  auto r = run({"fork-until-fail", "1"});
  EXPECT_FALSE(std::filesystem::exists(abandoned)) << abandoned << " of a dead supervisor is still there; " << r.err;
  EXPECT_TRUE(std::filesystem::exists(live)) << "the cgroup of a live process was removed";
  ::rmdir(live.c_str());
  ::rmdir(abandoned.c_str());
}

}  // namespace
}  // namespace stockade::testing
