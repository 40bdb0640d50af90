// Abuse inside one sandbox of the real stockaded (issue 15, "Resource limits
// against abuse"): a fork bomb, an anonymous-memory and a memfd balloon, a
// CPU hog with many children, a disk filler and an output flood each end with
// their reason in the process record (reason, signal, metrics.killedByLimit /
// limitReached), and while each runs, another sandbox of the same daemon
// still runs a program and the attacker's own sandbox still runs one within
// its limits afterwards. As a user without a delegated cgroup (the
// unprivileged re-run) the daemon refuses to start a process under a
// whole-sandbox limit it cannot enforce, naming the limit; limits.fileSizeBytes
// (RLIMIT_FSIZE) and the output ring need no cgroup and hold for both. No
// timing is asserted: how much slower the neighbour gets is
// bench/daemon_bench --abuse's to measure.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "platform/linux/cgroup.h"
#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/pids_cgroup.h"
#include "tests/support/private_mounts.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;
using platform::CgroupController;

constexpr std::uint64_t kMiB = 1 << 20;

class DaemonAbuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir / "baseline.json") << daemonTestPolicy().dump();
    DaemonProcess::Options o;
    o.extraArgs = {"--policy", dir / "baseline.json"};
    daemon = std::make_unique<DaemonProcess>(dir, o);
    c = std::make_unique<HttpTestClient>(daemon->client());
    neighbour = create(daemonTestPolicy());
  }
  std::string create(const json& policy) {
    auto r = c->request("POST", "/v1/sandboxes", json{{"policy", policy}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body)["id"].get<std::string>() : "";
  }
  // A sandbox under the test policy with these limits (every limit spelled out).
  std::string limited(std::uint64_t memoryBytes, std::uint64_t pids, std::uint64_t cpuSeconds, std::uint64_t fileSizeBytes) {
    json p = daemonTestPolicy();
    p["limits"] = {{"memoryBytes", memoryBytes}, {"pids", pids}, {"cpuSeconds", cpuSeconds}, {"fileSizeBytes", fileSizeBytes}};
    return create(p);
  }
  HttpReply startIn(const std::string& sandbox, json argv, int timeoutMs) {
    return c->request("POST", "/v1/sandboxes/" + sandbox + "/processes",
                      json{{"argv", std::move(argv)}, {"executionTimeout", timeoutMs}}.dump());
  }
  json runIn(const std::string& sandbox, json argv) {
    auto r = c->request("POST", "/v1/sandboxes/" + sandbox + "/processes/run", json{{"argv", std::move(argv)}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json::object();
  }
  // The neighbour sandbox runs a program to completion: the daemon still serves others.
  void expectTheNeighbourRuns(const std::string& during) {
    json r = runIn(neighbour, {"/bin/sh", "-c", "echo neighbour ran"});
    EXPECT_EQ(r.value("exitCode", -1), 0) << during << ": " << r;
    EXPECT_EQ(r.value("stdout", ""), "neighbour ran\n") << during << ": " << r;
  }
  // Starts `argv` in `sandbox`, lets the neighbour run while it runs, and
  // returns its process record once it ended (by itself or by its timeout).
  json attack(const std::string& sandbox, json argv, int timeoutMs = 60000) {
    auto started = startIn(sandbox, argv, timeoutMs);
    EXPECT_EQ(started.status, 200) << started.body;
    if (started.status != 200) return json::object();
    const std::string id = json::parse(started.body)["id"];
    const std::string process = "/v1/sandboxes/" + sandbox + "/processes/" + id;
    expectTheNeighbourRuns("while " + argv.dump() + " ran");
    auto waited = c->request("POST", process + "/wait", json{{"timeout", timeoutMs + 60000}}.dump());
    EXPECT_EQ(waited.status, 200) << waited.body;
    auto record = c->request("GET", process);
    EXPECT_EQ(record.status, 200) << record.body;
    json dto = record.status == 200 ? json::parse(record.body) : json::object();
    EXPECT_EQ(dto.value("state", ""), "terminal") << dto;
    return dto;
  }
  // Without a usable `controller` cgroup the daemon refuses the process (422,
  // naming `field`) instead of running it weaker; true when it did (and the
  // neighbour still runs). Fails where a cgroup is required (root on a host
  // with the hierarchy).
  bool refusedWithoutCgroup(const std::string& sandbox, CgroupController controller, const std::string& field) {
    auto probe = startIn(sandbox, {"/bin/true"}, 10000);
    if (probe.status == 200) return false;
    EXPECT_FALSE(cgroupRequired(controller)) << "root on a host with the hierarchy, yet: " << probe.body;
    EXPECT_EQ(probe.status, 422) << probe.body;
    json e = json::parse(probe.body, nullptr, false);
    EXPECT_EQ(e.value("code", ""), "E_SANDBOX_SPAWN_FAILED") << probe.body;
    EXPECT_NE(e.value("message", "").find("refusing to run weaker than the rules: " + field + ": "), std::string::npos)
        << probe.body;
    expectTheNeighbourRuns("after the refusal");
    return true;
  }
  static json metric(const json& dto, const char* name) { return dto.value("metrics", json::object()).value(name, json()); }

  TempDir dir;
  std::unique_ptr<DaemonProcess> daemon;
  std::unique_ptr<HttpTestClient> c;
  std::string neighbour;
};

TEST_F(DaemonAbuseTest, AForkBombEndsAtThePidsLimitSaysSoAndTheSandboxStillRunsAProgramAfterwards) {
  const std::string bomb = limited(0, 32, 0, 0);
  if (refusedWithoutCgroup(bomb, CgroupController::kPids, "limits.pids")) return;
  // Each shell forks two more and waits: without a limit it never ends.
  json dto = attack(bomb, {"/bin/sh", "-c", "b() { b & b & wait; }; b"});
  EXPECT_EQ(metric(dto, "limitReached"), "limits.pids") << dto;
  EXPECT_EQ(metric(dto, "killedByLimit"), json()) << "limits.pids refuses forks, it kills nothing: " << dto;
  EXPECT_NE(dto.value("reason", ""), "timed_out") << "the bomb was stopped by its timeout, not the limit: " << dto;
  json after = runIn(bomb, {"/bin/sh", "-c", "echo still runs"});
  EXPECT_EQ(after.value("stdout", ""), "still runs\n") << after;
  EXPECT_EQ(after.value("exitCode", -1), 0) << after;
}

TEST_F(DaemonAbuseTest, AnAnonymousMemoryBalloonIsKilledForTheMemoryLimitWhileFourMegabytesFit) {
  const std::string balloon = limited(64 * kMiB, 0, 0, 0);
  if (refusedWithoutCgroup(balloon, CgroupController::kMemory, "limits.memoryBytes")) return;
  // tail keeps the one endless line of /dev/zero in memory.
  json dto = attack(balloon, {"/usr/bin/tail", "/dev/zero"});
  EXPECT_EQ(dto.value("reason", ""), "signaled") << dto;
  EXPECT_EQ(dto.value("signal", ""), "SIGKILL") << dto;
  EXPECT_EQ(metric(dto, "killedByLimit"), "limits.memoryBytes") << dto;
  EXPECT_EQ(metric(dto, "limitReached"), "limits.memoryBytes") << dto;
  json fits = runIn(balloon, {"/bin/sh", "-c", "x=$(head -c 4000000 /dev/zero | tr '\\0' a); echo ${#x}"});
  EXPECT_EQ(fits.value("stdout", ""), "4000000\n") << fits;
  EXPECT_EQ(fits.value("exitCode", -1), 0) << fits;
}

TEST_F(DaemonAbuseTest, AMemfdBalloonIsStoppedByTheMemoryLimitWhileASmallMemfdFits) {
  const std::string balloon = limited(64 * kMiB, 0, 0, 0);
  if (refusedWithoutCgroup(balloon, CgroupController::kMemory, "limits.memoryBytes")) return;
  // memfd pages are in no sized mount: only the memory cgroup bounds them.
  // Writes 1 MiB at a time up to 512 MiB and prints how far it got.
  auto fill = [](int mib) {
    return json{"/usr/bin/python3", "-c",
                "import os, sys\nfd = os.memfd_create('balloon')\nblock = b'x' * (1 << 20)\n"
                "for i in range(" + std::to_string(mib) + "):\n"
                "    os.write(fd, block)\n    print('wrote', i + 1, flush=True)\n"};
  };
  json small = runIn(balloon, fill(8));
  EXPECT_EQ(small.value("exitCode", -1), 0) << small;
  EXPECT_NE(small.value("stdout", "").find("wrote 8\n"), std::string::npos) << small;
  json dto = attack(balloon, fill(512));
  EXPECT_EQ(metric(dto, "killedByLimit"), "limits.memoryBytes") << dto;
  EXPECT_EQ(dto.value("signal", ""), "SIGKILL") << dto;
}

TEST_F(DaemonAbuseTest, ACpuHogWithEightChildrenIsKilledForTheSandboxsCpuLimitWhileAShortLoopFinishes) {
  const std::string hog = limited(0, 0, 1, 0);
  if (refusedWithoutCgroup(hog, CgroupController::kCpu, "limits.cpuSeconds")) return;
  json shortLoop = runIn(hog, {"/bin/sh", "-c", "i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; echo $i"});
  EXPECT_EQ(shortLoop.value("stdout", ""), "1000\n") << shortLoop;
  // Each child alone would stay under RLIMIT_CPU for a while; together they
  // use the sandbox's second within about half a second of wall time.
  json dto = attack(hog, {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait"});
  EXPECT_EQ(metric(dto, "killedByLimit"), "limits.cpuSeconds") << dto;
  EXPECT_EQ(dto.value("reason", ""), "signaled") << dto;
  EXPECT_NE(dto.value("reason", ""), "timed_out") << dto;
}

// RLIMIT_FSIZE needs no cgroup: root and the unprivileged user alike.
TEST_F(DaemonAbuseTest, ADiskFillerIsStoppedByTheFileSizeLimitWithSigxfszWhileAFileWithinItIsWritten) {
  const std::string filler = limited(0, 0, 0, 4 * kMiB);
  json within = runIn(filler, {"/usr/bin/dd", "if=/dev/zero", "of=/workspace/within", "bs=1M", "count=2"});
  EXPECT_EQ(within.value("exitCode", -1), 0) << within;
  json dto = attack(filler, {"/usr/bin/dd", "if=/dev/zero", "of=/workspace/filler", "bs=1M", "count=1024"});
  EXPECT_EQ(dto.value("reason", ""), "signaled") << dto;
  EXPECT_EQ(dto.value("signal", ""), "SIGXFSZ") << dto;
  EXPECT_EQ(metric(dto, "killedByLimit"), "limits.fileSizeBytes") << dto;
  auto bytes = c->request("GET", "/v1/sandboxes/" + filler + "/files?path=/workspace/filler");
  EXPECT_EQ(bytes.body.size(), 4 * kMiB) << "the filler's file is not cut at limits.fileSizeBytes";
  auto kept = c->request("GET", "/v1/sandboxes/" + filler + "/files?path=/workspace/within");
  EXPECT_EQ(kept.body.size(), 2 * kMiB);
}

// An output flood is bounded by the process's log ring (it keeps the newest
// bytes and counts the dropped ones) and ends at its execution timeout.
TEST_F(DaemonAbuseTest, AnOutputFloodEndsAtItsTimeoutWithTheDroppedBytesCountedAndTheNewestKept) {
  const std::string flood = limited(0, 0, 0, 0);
  json dto = attack(flood, {"/usr/bin/yes", "flood"}, 2000);
  EXPECT_EQ(dto.value("reason", ""), "timed_out") << dto;
  const auto written = metric(dto, "stdoutBytes").get<std::uint64_t>();
  const auto dropped = metric(dto, "droppedLogBytes").get<std::uint64_t>();
  EXPECT_GT(written, 16 * kMiB) << "the flood hardly ran: " << dto;
  EXPECT_GT(dropped, 0u) << dto;
  EXPECT_LT(dropped, written) << "the newest output was not kept: " << dto;
  EXPECT_TRUE(dto.value("truncatedHead", false)) << dto;
  auto logs = c->request("GET", "/v1/sandboxes/" + flood + "/processes/" + dto.value("id", "") + "/logs?limit=1");
  EXPECT_EQ(logs.status, 200) << logs.body;
  EXPECT_NE(logs.body.find("flood"), std::string::npos) << logs.body.substr(0, 500);
}

// Descriptors: every idle sandbox of one daemon holds a spare (a sandbox
// built ahead for its next program) and whatever the spare needs open; the
// host objects every spare pins are shared by identity (host_pins.h), so a
// sandbox costs the daemon a bounded number of descriptors, and at
// RLIMIT_NOFILE a create is refused with the reason instead of a spawn failing
// half-way.
class DaemonDescriptorTest : public DaemonAbuseTest {
 protected:
  // The daemon's sandbox inits that finished building and wait for their
  // program (blocked in read(2) on the command socket, the only read they make).
  std::size_t sparesWaiting() const {
    std::size_t n = 0;
    const std::string task = "/proc/" + std::to_string(daemon->pid()) + "/task";
    for (const auto& t : std::filesystem::directory_iterator(task)) {
      std::ifstream children(t.path() / "children");
      for (int pid; children >> pid;) {
        std::ifstream syscall("/proc/" + std::to_string(pid) + "/syscall");
        std::string number;
        if (syscall >> number && number == "0") ++n;
      }
    }
    return n;
  }
  std::size_t daemonFds() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(daemon->pid()) + "/fd"))
      ++n;
    return n;
  }
  // Until `count` spares wait (each sandbox ran a program, so each has one).
  bool sparesSettle(std::size_t count) const {
    for (int i = 0; i < 1000 && sparesWaiting() < count; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the spare handed over to its sandbox
    return sparesWaiting() == count;
  }
  // A new sandbox that ran /bin/true (so that it holds its spare); its id.
  std::string idleSandbox() {
    std::string id = create(daemonTestPolicy());
    EXPECT_EQ(runIn(id, {"/bin/true"}).value("exitCode", -1), 0);
    return id;
  }
};

TEST_F(DaemonDescriptorTest, EachIdleSandboxHoldsAtMostSixteenOfTheDaemonsDescriptors) {
  EXPECT_EQ(runIn(neighbour, {"/bin/true"}).value("exitCode", -1), 0);
  ASSERT_TRUE(sparesSettle(1));
  const std::size_t before = daemonFds();
  constexpr std::size_t kMore = 20;
  for (std::size_t i = 0; i < kMore; ++i) idleSandbox();
  ASSERT_TRUE(sparesSettle(kMore + 1)) << sparesWaiting() << " spares wait";
  const std::size_t after = daemonFds();
  // About 12 each (a spare's pidfd, seccomp listener, command socket, root,
  // pipes, the workspace's), where one O_PATH pin per host object per
  // sandbox cost 43: the shared pins are the first sandbox's.
  EXPECT_LE(after - before, kMore * 16) << before << " descriptors with one idle sandbox, " << after << " with "
                                        << kMore + 1;
  // Every sandbox still runs a program in its spare, and sees its own workspace.
  json r = runIn(neighbour, {"/bin/sh", "-c", "echo ran > marker && cat marker"});
  EXPECT_EQ(r.value("stdout", ""), "ran\n") << r;
}

TEST_F(DaemonDescriptorTest, AtTheDescriptorLimitACreateIsRefusedNamingItAndTheDaemonStillServes) {
  EXPECT_EQ(runIn(neighbour, {"/bin/true"}).value("exitCode", -1), 0);
  ASSERT_TRUE(sparesSettle(1));
  // Room for a few sandboxes more: the limit is lowered on the running daemon.
  const rlim_t limit = daemonFds() + 100;
  const rlimit files{limit, limit};
  ASSERT_EQ(::prlimit(daemon->pid(), RLIMIT_NOFILE, &files, nullptr), 0) << std::strerror(errno);
  std::size_t made = 0;
  HttpReply refused;
  for (; made < 40; ++made) {
    auto r = c->request("POST", "/v1/sandboxes", json{{"policy", daemonTestPolicy()}}.dump());
    if (r.status != 200) {
      refused = r;
      break;
    }
    // Every sandbox admitted runs its program: the limit is met at create, not in a spawn.
    json ran = runIn(json::parse(r.body)["id"], {"/bin/true"});
    ASSERT_EQ(ran.value("exitCode", -1), 0) << "sandbox " << made + 1 << " after lowering the limit to " << limit
                                            << ": " << ran;
  }
  ASSERT_GT(made, 0u) << "no sandbox fit in 100 descriptors: " << refused.body;
  ASSERT_LT(made, 40u) << "40 sandboxes fit in 100 descriptors";
  EXPECT_EQ(refused.status, 503) << refused.body;
  json e = json::parse(refused.body, nullptr, false);
  EXPECT_EQ(e.value("code", ""), "unavailable") << refused.body;
  const std::string message = e.value("message", "");
  EXPECT_NE(message.find("the daemon's descriptor limit is reached"), std::string::npos) << message;
  EXPECT_NE(message.find("of RLIMIT_NOFILE " + std::to_string(limit) + " open with " + std::to_string(made + 1) +
                         " sandboxes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("raise the limit (LimitNOFILE="), std::string::npos) << message;
  // The daemon still answers, and its sandboxes still run programs.
  EXPECT_EQ(c->request("GET", "/v1/health").status, 200);
  expectTheNeighbourRuns("at the descriptor limit");
}

// The spares share one descriptor of the daemon's mount table (host_pins.h),
// and poll() reports a change to a descriptor once: every spare built before
// the change must still learn of it, not only the first one asked.
TEST_F(DaemonDescriptorTest, AVolumeUnmountedOnTheHostIsServedByNoSandboxsOlderSpare) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs on the host needs root; the unprivileged run cannot set this up";
  TempDir volume;
  HostTmpfs mounted(volume.path());
  ASSERT_TRUE(mounted.mounted()) << std::strerror(errno);
  std::ofstream(volume.path() + "/data") << "ON-THE-VOLUME\n";
  const json cat = {"/bin/sh", "-c", "cat " + volume.path() + "/data 2>/dev/null; echo rc=$?"};
  std::vector<std::string> sandboxes = {neighbour, create(daemonTestPolicy()), create(daemonTestPolicy())};
  for (const auto& s : sandboxes) EXPECT_EQ(runIn(s, cat).value("stdout", ""), "ON-THE-VOLUME\nrc=0\n");
  ASSERT_TRUE(sparesSettle(sandboxes.size()));
  ASSERT_TRUE(mounted.detach()) << std::strerror(errno);
  for (const auto& s : sandboxes)
    EXPECT_EQ(runIn(s, cat).value("stdout", ""), "rc=1\n") << "sandbox " << s << " still showed an unmounted volume";
}

}  // namespace
}  // namespace stockade::testing
