// Limits from inside the sandbox. limits.pids: a fork loop stops at the
// limit, a program within it runs, the sandbox cannot leave or raise its
// cgroup, and the cgroup is gone once the run is over. limits.memoryBytes and
// limits.cpuSeconds hold for the whole sandbox (tmpfs and memfd balloons, a
// fork chain of CPU hogs) and a kill says which limit; limits.fileSizeBytes
// holds against fallocate(KEEP_SIZE); per-user kernel counters are the
// sandbox's own share. Without a usable cgroup (the unprivileged re-run) the
// run must say each limit is weaker.
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "platform/linux/cgroup.h"
#include "platform/linux/user_counters.h"
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
  policy["filesystem"]["allowWriteSystemPaths"] = true;
  auto r = run({"fork-until-fail", "3"});
  EXPECT_NE(r.err.find("could leave its pids cgroup"), std::string::npos) << r.err;
  // The default policy's tree (workspace only) gets no such warning.
  policy["filesystem"]["allowWrite"] = {ws};
  auto ok = run({"fork-until-fail", "3"});
  EXPECT_EQ(ok.err.find("could leave its pids cgroup"), std::string::npos) << ok.err;
}

// The cgroup tree need not be under /sys/fs/cgroup: a bind of the pids
// hierarchy inside the workspace made it writable to the program (which moved
// itself to the supervisor's cgroup and forked past the limit) while the
// limit was still claimed as enforced. Every mount of the hierarchy counts.
TEST_F(PidsLimitEscapeTest, APidsHierarchyMountedInsideAWritableTreeMakesTheLimitADegradationNotAClaim) {
  if (!pidsCgroupRequired()) GTEST_SKIP() << "no pids cgroup for this user: the limit is reported as not enforced anyway";
  if (::geteuid() != 0) GTEST_SKIP() << "binding the cgroup tree into the workspace needs root";
  auto controller = platform::findCgroupController(platform::CgroupController::kPids);
  ASSERT_TRUE(std::holds_alternative<platform::CgroupHierarchy>(controller)) << std::get<std::string>(controller);
  const std::string base = std::get<platform::CgroupHierarchy>(controller).ownCgroupDir;
  std::filesystem::create_directories(ws + "/cg");
  // The bind lives in a mount namespace of the run's own (unshare -m), never on the host.
  auto runWithBind = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"unshare", "-m", "--propagation", "private", "sh", "-c",
                                     "mount --bind \"$0\" \"$1\" && shift && exec \"$@\"", base, ws + "/cg"};
    for (const auto& a : stockadeArgv({"--audit", audit_})) argv.push_back(a);
    argv.push_back(probe_);
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv);
  };
  auto bound = runWithBind({"fork-until-fail", "3"});
  EXPECT_EQ(bound.exitCode, 0) << bound.out << bound.err;
  EXPECT_NE(bound.err.find("limits.pids: the policy makes \"" + ws + "\" writable, and with it the cgroup tree mounted "
                           "at \"" + ws + "/cg\""),
            std::string::npos)
      << bound.err;
  // The neighbour: the same policy and workspace without the bind claims nothing weaker.
  auto plain = run({"fork-until-fail", "3"});
  EXPECT_EQ(plain.exitCode, 0) << plain.out << plain.err;
  EXPECT_EQ(plain.err.find("could leave its pids cgroup"), std::string::npos) << plain.err;
}

TEST_F(PidsLimitEscapeTest, CgroupsLeftByAKilledSupervisorAreSweptThoseOfALiveOneAreNot) {
  if (!pidsCgroupRequired()) GTEST_SKIP() << "no pids cgroup for this user: nothing is created, nothing to sweep";
  auto controller = platform::findCgroupController(platform::CgroupController::kPids);  // the hierarchy stockade will use
  ASSERT_TRUE(std::holds_alternative<platform::CgroupHierarchy>(controller)) << std::get<std::string>(controller);
  std::string base = std::get<platform::CgroupHierarchy>(controller).ownCgroupDir;
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

// A policy with every limit spelt out, and the audit of each run.
class SandboxLimitTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    policy["network"] = {{"allowedDomains", nlohmann::json::array()}};
    setLimits(0, 0, 0);
    audit_ = root_ + "/audit.jsonl";
  }
  void setLimits(std::uint64_t memoryBytes, std::uint64_t cpuSeconds, std::uint64_t fileSizeBytes) {
    policy["limits"] = {{"memoryBytes", memoryBytes}, {"pids", 0}, {"cpuSeconds", cpuSeconds},
                        {"fileSizeBytes", fileSizeBytes}};
  }
  // The probe under `stockade run --audit`, killed after 60 s whatever the limits do.
  ProcessResult run(const std::vector<std::string>& args) {
    return probe(args, {"--audit", audit_, "--timeout-ms", "60000"});
  }
  // The last event of that kind in the audit log (null when none).
  nlohmann::json lastEvent(const std::string& kind) {
    std::ifstream in(audit_);
    nlohmann::json found;
    for (std::string line; std::getline(in, line);) {
      auto event = nlohmann::json::parse(line);
      if (event["event"] == kind) found = event;
    }
    return found;
  }
  // The mechanism the last spawn event reports for "memory"/"cpu"/"pids" ("" when null).
  std::string mechanism(const std::string& limit) {
    auto e = lastEvent("spawn")["enforcement"][limit];
    return e.is_null() ? "" : e["mechanism"].get<std::string>();
  }
  // The highest "KEY=N" the probe printed (-1: none).
  static long lastCount(const std::string& out, const std::string& key) {
    long last = -1;
    for (std::size_t at = out.find(key + "="); at != std::string::npos; at = out.find(key + "=", at + 1))
      last = std::atol(out.c_str() + at + key.size() + 1);
    return last;
  }
  std::string audit_;
};

constexpr std::uint64_t kMiB = 1 << 20;

class MemoryLimitTest : public SandboxLimitTest {
 protected:
  void SetUp() override {
    SandboxLimitTest::SetUp();
    setLimits(64 * kMiB, 0, 0);
  }
  // True when the memory cgroup enforces the limit; else checks that the run
  // said it is only RLIMIT_AS (and fails where a cgroup is required).
  bool cgroupEnforces(const ProcessResult& r) {
    if (mechanism("memory") == "cgroup-v1" || mechanism("memory") == "cgroup2") return true;
    EXPECT_FALSE(testing::cgroupRequired(platform::CgroupController::kMemory))
        << "root on a host with a memory hierarchy, yet: " << r.err;
    EXPECT_NE(r.err.find("weaker enforcement: limits.memoryBytes: enforced per process only, as RLIMIT_AS"),
              std::string::npos)
        << r.err;
    return false;
  }
};

TEST_F(MemoryLimitTest, ATmpfsBalloonIsKilledForTheLimitWhileASmallFileInTheSameTmpFits) {
  // Both files are in the sandbox's private /tmp; one that reached the host's
  // (a build without the mount namespace, scripts/mutate) fails and is removed.
  // The balloon is bounded (8 times the limit) so that it cannot fill the
  // host's disk there.
  std::error_code ignored;
  auto small = run({"fill", "/tmp/stockade-small", "8"});
  EXPECT_FALSE(std::filesystem::remove("/tmp/stockade-small", ignored)) << "written to the host's /tmp";
  EXPECT_EQ(small.exitCode, 0) << small.out << small.err;
  EXPECT_EQ(lastCount(small.out, "wrote"), 8) << small.out;
  EXPECT_FALSE(lastEvent("exit").contains("limit")) << lastEvent("exit");

  auto balloon = run({"fill", "/tmp/stockade-balloon", "512"});
  EXPECT_FALSE(std::filesystem::remove("/tmp/stockade-balloon", ignored)) << "written to the host's /tmp";
  const long wrote = lastCount(balloon.out, "wrote");
  EXPECT_GE(wrote, 8) << "the balloon did not grow: " << balloon.out << balloon.err;
  EXPECT_LE(wrote, 64) << "more tmpfs than limits.memoryBytes";
  if (!cgroupEnforces(balloon)) {
    // Without the cgroup the private /tmp's own size is what holds.
    EXPECT_EQ(balloon.exitCode, 1) << balloon.out << balloon.err;
    EXPECT_NE(balloon.out.find("errno=ENOSPC"), std::string::npos) << balloon.out;
    return;
  }
  EXPECT_EQ(balloon.exitCode, 137) << balloon.out << balloon.err;
  EXPECT_EQ(lastEvent("exit")["limit"], "limits.memoryBytes") << lastEvent("exit");
  EXPECT_EQ(lastEvent("exit")["reason"], "limits.memoryBytes") << lastEvent("exit");
  EXPECT_NE(balloon.err.find("stockade run: limits.memoryBytes: "), std::string::npos) << balloon.err;
}

TEST_F(MemoryLimitTest, AMemfdBalloonIsKilledForTheLimitWhileASmallOneFits) {
  auto small = run({"memfd-fill", "8"});
  EXPECT_EQ(small.exitCode, 0) << small.out << small.err;
  EXPECT_EQ(lastCount(small.out, "wrote"), 8) << small.out;
  // memfd pages are in no mount with a size: only the memory cgroup bounds them.
  auto first = run({"memfd-fill", "1"});
  if (!cgroupEnforces(first)) return;  // warned; a balloon would be bounded by nothing here
  auto balloon = run({"memfd-fill", "512"});  // 8 times the limit
  EXPECT_EQ(balloon.exitCode, 137) << balloon.out << balloon.err;
  const long wrote = lastCount(balloon.out, "wrote");
  EXPECT_GE(wrote, 8) << balloon.out << balloon.err;
  EXPECT_LT(wrote, 64) << balloon.out;
  EXPECT_EQ(lastEvent("exit")["limit"], "limits.memoryBytes") << lastEvent("exit");
  EXPECT_NE(balloon.err.find("stockade run: limits.memoryBytes: "), std::string::npos) << balloon.err;
}

// Socket buffers are kernel memory no address-space limit sees, and on
// cgroup v1 the memory cgroup charged them nowhere: 32 sockets on the
// sandbox's own loopback, each sent 8 MiB nobody reads, held 191 MiB under
// a 64 MiB limit (and the host-wide net.ipv4.udp_mem is the only ceiling).
TEST_F(MemoryLimitTest, UnreadDatagramsOnTheSandboxsLoopbackStayWithinTheLimitWhileASmallQueueFits) {
  auto small = run({"udp-fill", "1", "4"});
  EXPECT_EQ(small.exitCode, 0) << small.out << small.err;
  EXPECT_GE(lastCount(small.out, "held"), 3) << small.out;
  if (!cgroupEnforces(small)) return;  // warned: RLIMIT_AS does not see socket buffers either
  auto flood = run({"udp-fill", "32", "8"});  // 256 MiB sent, four times the limit
  EXPECT_EQ(flood.exitCode, 0) << flood.out << flood.err;
  EXPECT_GE(lastCount(flood.out, "sent"), 192) << flood.out;
  EXPECT_GE(lastCount(flood.out, "held"), 8) << "the queues did not fill: " << flood.out;
  EXPECT_LE(lastCount(flood.out, "held"), 64) << "more socket memory than limits.memoryBytes: " << flood.out;
}

class TmpfsSizeTest : public SandboxLimitTest {
 protected:
  void SetUp() override {
    SandboxLimitTest::SetUp();
    setLimits(64 * kMiB, 0, 0);
  }
};

TEST_F(TmpfsSizeTest, TheSandboxsTmpfsMountsAreSizedByTheMemoryLimitOrAQuarterOfTheHost) {
  for (const char* path : {"/tmp", "/dev/shm"}) {
    auto r = run({"statfs", path});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "bytes=" + std::to_string(64 * kMiB) + "\n") << path;
  }
  setLimits(0, 0, 0);
  const std::uint64_t quarter =
      static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 4;
  auto r = run({"statfs", "/tmp"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  const long long bytes = std::atoll(r.out.c_str() + 6);
  EXPECT_GT(bytes, 0) << r.out;
  // The kernel rounds the size up to whole pages.
  EXPECT_GE(static_cast<std::uint64_t>(bytes), quarter) << r.out;
  EXPECT_LT(static_cast<std::uint64_t>(bytes), quarter + 4096) << r.out;
  // A read mask is a tiny tmpfs (nothing can be written to it anyway).
  auto mask = run({"statfs", home + "/.ssh"});
  EXPECT_EQ(mask.out, "bytes=4096\n") << mask.err;
}

class CpuLimitTest : public SandboxLimitTest {
 protected:
  void SetUp() override {
    SandboxLimitTest::SetUp();
    setLimits(0, 1, 0);
  }
};

TEST_F(CpuLimitTest, AForkChainOfCpuHogsIsKilledNearOneSecondInAllWhileAShortComputationFinishes) {
  auto spin = run({"cpu-spin", "0.2"});
  EXPECT_EQ(spin.exitCode, 0) << spin.out << spin.err;
  EXPECT_EQ(spin.out, "spun\n");
  auto spun = lastEvent("exit");
  EXPECT_FALSE(spun.contains("limit")) << spun;

  if (mechanism("cpu") != "cgroup-v1" && mechanism("cpu") != "cgroup2") {
    EXPECT_FALSE(testing::cgroupRequired(platform::CgroupController::kCpu)) << "root, yet: " << spin.err;
    EXPECT_NE(spin.err.find("weaker enforcement: limits.cpuSeconds: enforced per process only, as RLIMIT_CPU"),
              std::string::npos)
        << spin.err;
    // The per-process fallback still holds for one process, and its kill is named.
    auto hog = run({"cpu-spin", "5"});
    EXPECT_EQ(hog.exitCode, 137) << hog.out << hog.err;  // RLIMIT_CPU: SIGKILL at the hard limit
    EXPECT_EQ(hog.out, "");
    auto killed = lastEvent("exit");
    EXPECT_EQ(killed["reason"], "limits.cpuSeconds") << killed;
    EXPECT_GE(killed["cpuTimeMs"].get<long>(), 1000) << killed;
    EXPECT_NE(hog.err.find("stockade run: limits.cpuSeconds: the sandbox used "), std::string::npos) << hog.err;
    // A SIGKILL from elsewhere (here the program's own) is not the limit's.
    auto self = run({"kill", "2", "9"});
    EXPECT_EQ(self.exitCode, 137) << self.out << self.err;
    auto other = lastEvent("exit");
    EXPECT_FALSE(other.contains("limit")) << other;
    EXPECT_EQ(other["reason"], "exited") << other;
    return;
  }
  EXPECT_GE(spun["cpuTimeMs"].get<long>(), 200) << spun;
  EXPECT_LT(spun["cpuTimeMs"].get<long>(), 1000) << spun;

  // Each process stays below one second (RLIMIT_CPU alone never fired);
  // together they would use 4.8 s.
  auto chain = run({"cpu-chain", "12", "0.4"});
  EXPECT_EQ(chain.exitCode, 137) << chain.out << chain.err;
  EXPECT_GE(lastCount(chain.out, "generation"), 2) << "the chain never forked: " << chain.out << chain.err;
  auto exit = lastEvent("exit");
  EXPECT_EQ(exit["limit"], "limits.cpuSeconds") << exit;
  EXPECT_EQ(exit["reason"], "limits.cpuSeconds") << exit;
  // Checked every 50 ms on 2 CPUs: the kill lands within a few checks of the limit.
  EXPECT_GE(exit["cpuTimeMs"].get<long>(), 1000) << exit;
  EXPECT_LT(exit["cpuTimeMs"].get<long>(), 2000) << exit;
  EXPECT_NE(chain.err.find("stockade run: limits.cpuSeconds: the sandbox used "), std::string::npos) << chain.err;
}

// Each denied call makes the supervisor receive, answer and audit it: CPU
// time outside the sandbox's cgroup, 4.6 times the sandbox's own here, and
// a flood of them once ran for good under cpuSeconds 1 with the sandbox at
// 0.2 s of CPU per second. That time is charged to the sandbox: the flood
// is killed by limits.cpuSeconds long before its own CPU time reaches the
// limit; the neighbour -- a computation with no trapped calls -- finishes.
TEST_F(CpuLimitTest, TheSupervisorsTimeAnsweringAFloodOfDeniedCallsCountsAgainstTheLimit) {
  // Without a cgroup (RLIMIT_CPU per process, a reported degradation) the
  // answers are bounded by the limit on their own: the flood is killed too.
  auto spin = run({"cpu-spin", "0.2"});
  ASSERT_EQ(spin.exitCode, 0) << spin.out << spin.err;
  // 0.9 s of its own CPU would fit the 1 s limit, were the answers not counted.
  auto flood = run({"denied-spin", "0.9"});
  EXPECT_EQ(flood.exitCode, 137) << "the flood ran to its end: " << flood.out << flood.err;
  EXPECT_EQ(flood.out, "");
  auto exit = lastEvent("exit");
  EXPECT_EQ(exit["reason"], "limits.cpuSeconds") << exit;
  EXPECT_GT(exit["denials"].get<long>(), 1000) << "the flood ran: " << exit;
  EXPECT_GE(exit["cpuTimeMs"].get<long>(), 1000) << exit;
}

class FileSizeLimitTest : public SandboxLimitTest {
 protected:
  void SetUp() override {
    SandboxLimitTest::SetUp();
    setLimits(0, 0, kMiB);
  }
  static struct stat statOf(const std::string& path) {
    struct stat st = {};
    ::stat(path.c_str(), &st);
    return st;
  }
};

TEST_F(FileSizeLimitTest, AKeepSizeAllocationBeyondTheLimitFailsWithEfbigWhileOneWithinItWorks) {
  constexpr int kKeepSize = 1;  // FALLOC_FL_KEEP_SIZE
  auto within = run({"fallocate", ws + "/within", std::to_string(kKeepSize), "0", std::to_string(kMiB / 2)});
  EXPECT_EQ(within.exitCode, 0) << within.out << within.err;
  EXPECT_EQ(within.out, "blocks=1024 size=0\n");  // 512 KiB allocated, the size left at 0
  EXPECT_EQ(statOf(ws + "/within").st_blocks, 1024);

  auto beyond = run({"fallocate", ws + "/beyond", std::to_string(kKeepSize), "0", std::to_string(1ULL << 30)});
  EXPECT_EQ(beyond.exitCode, 1) << beyond.out << beyond.err;
  EXPECT_NE(beyond.out.find("errno=EFBIG"), std::string::npos) << beyond.out << beyond.err;
  EXPECT_EQ(statOf(ws + "/beyond").st_blocks, 0) << "space was allocated beyond limits.fileSizeBytes";
  auto denial = lastEvent("denial");
  EXPECT_EQ(denial["syscall"], "fallocate") << denial;
  EXPECT_EQ(denial["error"], "EFBIG") << denial;
  // Starting inside the limit and ending beyond it is beyond it too.
  auto straddle = run({"fallocate", ws + "/beyond", std::to_string(kKeepSize), std::to_string(kMiB / 2),
                       std::to_string(kMiB)});
  EXPECT_NE(straddle.out.find("errno=EFBIG"), std::string::npos) << straddle.out << straddle.err;
}

TEST_F(FileSizeLimitTest, ThePreallocationIoctlIsRefusedWhileWritesWithinTheLimitWork) {
  auto ioctl = run({"resvsp", ws + "/reserved", std::to_string(1ULL << 30)});
  EXPECT_EQ(ioctl.exitCode, 1) << ioctl.out << ioctl.err;
  EXPECT_NE(ioctl.out.find("errno=EOPNOTSUPP"), std::string::npos) << ioctl.out << ioctl.err;
  EXPECT_EQ(statOf(ws + "/reserved").st_blocks, 0);
  auto write = run({"fill", ws + "/written", "1"});
  EXPECT_EQ(write.exitCode, 0) << write.out << write.err;
  EXPECT_EQ(statOf(ws + "/written").st_size, static_cast<off_t>(kMiB));
}

TEST_F(FileSizeLimitTest, AWritePastTheLimitEndsTheProgramNamingTheLimitWhileOneUpToItExitsCleanly) {
  auto within = run({"fill", ws + "/within", "1"});
  EXPECT_EQ(within.exitCode, 0) << within.out << within.err;
  auto clean = lastEvent("exit");
  EXPECT_FALSE(clean.contains("limit")) << clean;
  EXPECT_EQ(clean["reason"], "exited") << clean;

  auto past = run({"fill", ws + "/past", "2"});
  EXPECT_EQ(past.exitCode, 128 + SIGXFSZ) << past.out << past.err;
  EXPECT_EQ(statOf(ws + "/past").st_size, static_cast<off_t>(kMiB)) << "the file grew past limits.fileSizeBytes";
  auto ended = lastEvent("exit");
  EXPECT_EQ(ended["limit"], "limits.fileSizeBytes") << ended;
  EXPECT_EQ(ended["reason"], "limits.fileSizeBytes") << ended;
  EXPECT_NE(past.err.find("stockade run: limits.fileSizeBytes: a write went past the limit of 1048576 bytes per file"),
            std::string::npos)
      << past.err;
}

TEST_F(FileSizeLimitTest, WithoutAFileSizeLimitFallocateIsNotTrapped) {
  setLimits(0, 0, 0);
  auto r = run({"fallocate", ws + "/free", "1", "0", std::to_string(2 * kMiB)});
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "blocks=4096 size=0\n");
  EXPECT_EQ(lastEvent("denial"), nlohmann::json()) << "a fallocate() reached the supervisor without a limit";
}

class UserCountersTest : public SandboxLimitTest {
 protected:
  // Runs `hold` (an OP-hold of the probe) in one sandbox and, once it holds
  // all it could get, `meanwhile` on the host or in another sandbox; returns
  // the holder's result.
  ProcessResult whileHeld(const std::string& hold, const std::function<void()>& meanwhile) {
    ProcessResult holder;
    std::thread sandbox([&] { holder = run({hold, ws}); });
    for (int i = 0; i < 3000 && !std::filesystem::exists(ws + "/ready"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const bool ready = std::filesystem::exists(ws + "/ready");
    if (ready) meanwhile();
    std::ofstream(ws + "/go") << "go";
    sandbox.join();
    EXPECT_TRUE(ready) << holder.out << holder.err;
    return holder;
  }
  // The holder ran, got something, and was stopped within `share` by `why`.
  static void expectStoppedWithin(const ProcessResult& holder, const std::string& key, long share, const char* why) {
    EXPECT_EQ(holder.exitCode, 0) << holder.out << holder.err;
    const long held = lastCount(holder.out, key);
    EXPECT_GE(held, 1) << holder.out;
    EXPECT_LE(held, share) << holder.out;
    EXPECT_NE(holder.out.find(std::string("errno=") + why), std::string::npos) << holder.out;
  }
};

TEST_F(UserCountersTest, AnInotifyFloodHitsTheSandboxsOwnCapWhileTheHostUserCanStillCreateOne) {
  const long hostMax = std::atol(slurp("/proc/sys/user/max_inotify_instances").c_str());
  ASSERT_GT(hostMax, 0);
  const long share = static_cast<long>(platform::sandboxShare(static_cast<std::uint64_t>(hostMax)));
  {
    int before = ::inotify_init1(IN_CLOEXEC);
    if (before < 0) GTEST_SKIP() << "this user has no inotify instance left before the run: " << strerrorname_np(errno);
    ::close(before);
  }
  auto cap = run({"cat", "/proc/sys/user/max_inotify_instances"});
  EXPECT_EQ(cap.out, std::to_string(share) + "\n") << cap.err;

  // While the sandbox holds every instance it could get:
  int host = -1, hostErrno = 0;
  ProcessResult flood = whileHeld("inotify-hold", [&] {
    host = ::inotify_init1(IN_CLOEXEC);
    hostErrno = errno;
  });
  EXPECT_GE(host, 0) << "the host user got " << strerrorname_np(hostErrno) << " while the sandbox ran";
  if (host >= 0) ::close(host);
  expectStoppedWithin(flood, "inotify", share, "EMFILE");
}

// Pseudo-terminals are one count for the whole system (kernel.pty.max): a
// sandbox's devpts instance once took every pty but the host's reserve, and
// every other sandbox then got ENOSPC from posix_openpt().
TEST_F(UserCountersTest, APtyFloodHitsTheSandboxsOwnCapWhileAnotherSandboxCanStillOpenOne) {
  const long share = static_cast<long>(platform::sandboxPtyShare(
      std::stoull(slurp("/proc/sys/kernel/pty/max")), std::stoull(slurp("/proc/sys/kernel/pty/reserve"))));
  // While the first sandbox holds every pty it could get:
  ProcessResult other;
  ProcessResult flood = whileHeld("pty-hold", [&] { other = run({"pty-open"}); });
  EXPECT_EQ(other.exitCode, 0) << "another sandbox got no pty while the first ran: " << other.out << other.err;
  expectStoppedWithin(flood, "ptys", share, "ENOSPC");
}

// Linux AIO's events come from fs.aio-max-nr, one count for the whole host
// that no namespace or cgroup divides: a sandbox once reserved all of them and
// the host's own io_setup() failed with EAGAIN. The call is refused (ENOSYS,
// so libaio callers fall back); glibc's POSIX AIO, built on threads, works.
TEST_F(UserCountersTest, LinuxAioIsRefusedForItsSystemWideCountWhilePosixAioWorks) {
  auto aio = run({"aio-setup", "65536"});
  EXPECT_EQ(aio.exitCode, 1) << aio.out << aio.err;
  EXPECT_NE(aio.out.find("errno=ENOSYS"), std::string::npos) << aio.out << aio.err;
  auto posix = run({"posix-aio-write", ws + "/aio.txt", "written by aio_write"});
  EXPECT_EQ(posix.exitCode, 0) << posix.out << posix.err;
  EXPECT_EQ(slurp(ws + "/aio.txt"), "written by aio_write");
}

TEST_F(UserCountersTest, TheSandboxsTasksAndQueuedSignalsAreCappedAtAShareOfTheHostUsers) {
  rlimit nproc{}, sigpending{};
  ::getrlimit(RLIMIT_NPROC, &nproc);
  ::getrlimit(RLIMIT_SIGPENDING, &sigpending);
  auto r = run({"cat", "/proc/self/limits"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto soft = [&](const std::string& name) {
    auto at = r.out.find(name);
    return at == std::string::npos ? std::string("?") : r.out.substr(at + 26, r.out.find(' ', at + 26) - at - 26);
  };
  if (nproc.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(soft("Max processes"), std::to_string(platform::sandboxShare(nproc.rlim_cur))) << r.out;
  }
  if (sigpending.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(soft("Max pending signals"), std::to_string(platform::sandboxShare(sigpending.rlim_cur))) << r.out;
  }
}

}  // namespace
}  // namespace stockade::testing
