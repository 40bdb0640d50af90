// platform::spawn() through its API: pipes, the proxy listener hook, the
// enforcement report, setup errors naming the step and syscall.
#include "platform/linux/spawn.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "platform/linux/landlock.h"
#include "stockade/rules.h"
#include "tests/support/pids_cgroup.h"

namespace stockade::platform {
namespace {

DerivedRules rulesFor(const std::string& cwd) {
  DeriveContext ctx = currentContext();
  ctx.cwd = cwd;
  ctx.tmpdir = "/tmp";
  auto derived = derive(SandboxPolicy::defaults(), ctx);
  if (auto* e = std::get_if<PolicyError>(&derived)) throw std::runtime_error(e->text());
  return std::get<DerivedRules>(std::move(derived));
}

std::string readAll(const UniqueFd& fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

class SpawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/var/tmp/stockade-spawn-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = std::filesystem::canonical(tmpl).string();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SpawnRequest request(const DerivedRules& rules, std::vector<std::string> argv) {
    SpawnRequest r{rules, std::move(argv), dir_, {"PATH=/usr/bin:/bin"}};
    r.stdio = Stdio::kPipe;
    r.onMissingLayer = OnMissingLayer::kRunAndReport;
    return r;
  }
  std::string dir_;
};

TEST_F(SpawnTest, PipesCarryStdioAndWaitReturnsTheProgramsStatus) {
  auto rules = rulesFor(dir_);
  auto spawned = spawn(request(rules, {"/bin/sh", "-c", "read x; echo out:$x; echo err >&2; exit 5"}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  ASSERT_EQ(::write(child.stdinPipe.get(), "in\n", 3), 3);
  child.stdinPipe.reset();
  EXPECT_EQ(readAll(child.stdoutPipe), "out:in\n");
  EXPECT_EQ(readAll(child.stderrPipe), "err\n");
  auto status = waitExit(child);
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).kind, ExitStatus::Kind::kExited);
  EXPECT_EQ(std::get<ExitStatus>(status).value, 5);
}

TEST_F(SpawnTest, KillingThePidfdEndsTheSandboxAndReportsSigkill) {
  auto rules = rulesFor(dir_);
  auto spawned = spawn(request(rules, {"/bin/sleep", "60"}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  auto still = waitExitFor(child, std::chrono::milliseconds(0));
  ASSERT_TRUE(std::holds_alternative<std::optional<ExitStatus>>(still));
  EXPECT_FALSE(std::get<std::optional<ExitStatus>>(still).has_value());
  EXPECT_FALSE(signalChild(child.pidfd, SIGKILL).has_value());
  auto status = waitExit(child);
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).kind, ExitStatus::Kind::kSignaled);
  EXPECT_EQ(std::get<ExitStatus>(status).value, SIGKILL);
}

TEST_F(SpawnTest, SigtermOnThePidfdReachesTheProgram) {
  auto rules = rulesFor(dir_);
  auto spawned = spawn(request(rules, {"/bin/sh", "-c", "echo ready; exec sleep 60"}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  char buf[6];
  ASSERT_EQ(::read(child.stdoutPipe.get(), buf, 6), 6);
  // `exec sleep` has happened once sleep is running; signal until it ends.
  EXPECT_FALSE(signalChild(child.pidfd, SIGTERM).has_value());
  auto status = waitExitFor(child, std::chrono::seconds(30));
  ASSERT_TRUE(std::holds_alternative<std::optional<ExitStatus>>(status));
  auto& s = std::get<std::optional<ExitStatus>>(status);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->shellCode(), 128 + SIGTERM);
}

TEST_F(SpawnTest, ProxyListenersAcceptTheChildsConnectionsOnTheProxyPortOnly) {
  if (landlockAbi() < 4) GTEST_SKIP() << "Landlock ABI < 4: TCP connect is not restricted";
  auto rules = rulesFor(dir_);
  const std::uint16_t port = 3128;  // inside the child's own network namespace: no host port is used
  auto req = request(rules, {"/bin/sh", "-c",
                             "exec 3<>/dev/tcp/127.0.0.1/3128 2>/dev/null && echo proxy-ok; "
                             "{ exec 4<>/dev/tcp/127.0.0.1/3129; } 2>&1 && echo other-ok; true"});
  req.argv = {"/bin/bash", "-c", req.argv[2]};
  req.proxyPort = port;
  auto spawned = spawn(req);
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  ASSERT_EQ(child.proxyListeners.size(), 2u);
  // Meanwhile the child's denied calls (bash's NSS probes a unix socket) wait
  // for an answer: a caller that polls the child itself must answer them.
  bool connected = false;
  for (int i = 0; i < 300 && !connected; ++i) {
    pollfd p[2] = {{child.proxyListeners[0].get(), POLLIN, 0}, {child.seccompListener.get(), POLLIN, 0}};
    ASSERT_GE(::poll(p, 2, 100), 0);
    if (p[1].revents & POLLIN) (void)answerNotification(child.seccompListener.get(), *child.broker);
    connected = p[0].revents & POLLIN;
  }
  ASSERT_TRUE(connected);
  UniqueFd conn(::accept4(child.proxyListeners[0].get(), nullptr, nullptr, SOCK_CLOEXEC));
  EXPECT_TRUE(conn.valid());
  // Still answering (bash's "2>/dev/null" is an open for writing) until stdout ends.
  std::string out;
  for (bool open = true; open;) {
    pollfd p[2] = {{child.stdoutPipe.get(), POLLIN, 0}, {child.seccompListener.get(), POLLIN, 0}};
    ASSERT_GT(::poll(p, 2, 10000), 0) << "the child neither wrote nor called";
    if (p[1].revents & POLLIN) (void)answerNotification(child.seccompListener.get(), *child.broker);
    if (p[0].revents & (POLLIN | POLLHUP)) {
      char buf[256];
      ssize_t n = ::read(child.stdoutPipe.get(), buf, sizeof buf);
      if (n > 0) out.append(buf, static_cast<std::size_t>(n));
      open = n > 0;
    }
  }
  EXPECT_NE(out.find("proxy-ok"), std::string::npos) << out;
  EXPECT_EQ(out.find("other-ok"), std::string::npos) << out;
  // Landlock's answer, not an empty port's (ECONNREFUSED); that a listener on
  // the other port is refused too is tested in tests/security/landlock_test.cc.
  EXPECT_NE(out.find("connect: Permission denied"), std::string::npos) << out;
  (void)waitExit(child);
}

// The report of a real spawn against what the program measures from inside:
// namespaces by their inode numbers against this process's, no_new_privs and
// seccomp from /proc/self/status plus a call only the filter refuses (its
// denial reaches onDenial), Landlock's filesystem rules by a write the mounts
// leave open (/proc is a writable mount; Landlock grants no write there) and
// its network rules by the error of a TCP connect (EACCES, not ECONNREFUSED).
TEST_F(SpawnTest, TheEnforcementReportListsTheActiveLayers) {
  auto rules = rulesFor(dir_);
  const char* script =
      "for n in user mnt pid net ipc uts cgroup; do echo \"ns $n $(readlink /proc/self/ns/$n)\"; done; "
      "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; "
      "{ echo x > /proc/self/comm; } 2>/dev/null && echo landlock-fs-off || echo landlock-fs-on; "
      "{ exec 3<>/dev/tcp/127.0.0.1/1; } 2>&1; "
      "unshare -U true 2>/dev/null && echo nested-userns-made; true";
  auto spawned = spawn(request(rules, {"/bin/bash", "-c", script}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  bool unshareRefused = false;
  child.onDenial = [&](const SeccompDenial& d) { unshareRefused = unshareRefused || d.syscall == "unshare"; };
  // Wait first: it answers the denials the program waits on (its output fits the pipe).
  auto status = waitExit(child);
  auto out = readAll(child.stdoutPipe);
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  ASSERT_EQ(std::get<ExitStatus>(status).shellCode(), 0) << out << readAll(child.stderrPipe);
  const auto& report = child.enforcement;
  auto separate = [&](const char* ns) {
    auto at = out.find(std::string("ns ") + ns + " ");
    EXPECT_NE(at, std::string::npos) << out;
    std::string inside = out.substr(at + 4 + std::strlen(ns), out.find('\n', at) - at - 4 - std::strlen(ns));
    return inside != std::filesystem::read_symlink(std::string("/proc/self/ns/") + ns).string();
  };
  EXPECT_EQ(report.userNamespace, separate("user"));
  EXPECT_EQ(report.mountNamespace, separate("mnt"));
  EXPECT_EQ(report.pidNamespace, separate("pid"));
  EXPECT_EQ(report.networkNamespace, separate("net"));
  EXPECT_EQ(report.ipcNamespace, separate("ipc"));
  EXPECT_EQ(report.utsNamespace, separate("uts"));
  EXPECT_EQ(report.cgroupNamespace, separate("cgroup"));
  EXPECT_EQ(report.noNewPrivs, out.find("NoNewPrivs:\t1") != std::string::npos) << out;
  EXPECT_EQ(report.seccomp, out.find("Seccomp:\t2") != std::string::npos && unshareRefused) << out;
  EXPECT_EQ(out.find("nested-userns-made"), std::string::npos) << out;
  EXPECT_EQ(report.landlockAbi, landlockAbi());
  EXPECT_EQ(report.landlockFilesystem, out.find("landlock-fs-on") != std::string::npos) << out;
  EXPECT_EQ(report.landlockNetwork, out.find("connect: Permission denied") != std::string::npos) << out;
  // This kernel has every layer: a report of "off" would be a failure too.
  EXPECT_TRUE(report.userNamespace && report.mountNamespace && report.pidNamespace && report.networkNamespace &&
              report.ipcNamespace && report.utsNamespace && report.seccomp && report.noNewPrivs);
  EXPECT_EQ(report.landlockFilesystem, landlockAbi() > 0);
}

TEST_F(SpawnTest, ASetupFailureNamesTheStepTheSyscallAndErrno) {
  auto rules = rulesFor(dir_);
  auto req = request(rules, {"/bin/true"});
  req.cwd = dir_ + "/does-not-exist";
  auto spawned = spawn(req);
  ASSERT_TRUE(std::holds_alternative<SpawnError>(spawned));
  auto message = std::get<SpawnError>(spawned).message();
  EXPECT_NE(message.find("working-directory"), std::string::npos) << message;
  EXPECT_NE(message.find("chdir(\"" + req.cwd + "\")"), std::string::npos) << message;
  EXPECT_NE(message.find("ENOENT"), std::string::npos) << message;
}

TEST_F(SpawnTest, CallerBugsThrowInvalidArgument) {
  auto rules = rulesFor(dir_);
  EXPECT_THROW(spawn(request(rules, {})), std::invalid_argument);
  auto relative = request(rules, {"/bin/true"});
  relative.cwd = "relative";
  EXPECT_THROW(spawn(relative), std::invalid_argument);
  auto env = request(rules, {"/bin/true"});
  env.env = {"NOEQUALS"};
  EXPECT_THROW(spawn(env), std::invalid_argument);
}

}  // namespace
}  // namespace stockade::platform

namespace stockade::platform {
namespace {

TEST_F(SpawnTest, TheSandboxHoldsNoCopyOfTheSupervisorsOtherFds) {
  // A pipe the supervisor holds for something else (another sandbox's
  // stdout, say): once its write end is closed here, the reader must see EOF
  // even while this sandbox is still running.
  int other[2];
  ASSERT_EQ(::pipe(other), 0);  // deliberately without O_CLOEXEC
  auto rules = rulesFor(dir_);
  auto spawned = spawn(request(rules, {"/bin/sh", "-c", "echo ready; exec sleep 60"}));
  ::close(other[1]);
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  char buf[6];
  ASSERT_EQ(::read(child.stdoutPipe.get(), buf, 6), 6);
  char c;
  ASSERT_EQ(::fcntl(other[0], F_SETFL, O_NONBLOCK), 0);  // a held write end gives EAGAIN, not a hang
  EXPECT_EQ(::read(other[0], &c, 1), 0);  // EOF: no process in the sandbox holds the write end
  ::close(other[0]);
  (void)signalChild(child.pidfd, SIGKILL);
  (void)waitExit(child);
}

}  // namespace
}  // namespace stockade::platform

namespace stockade::platform {
namespace {

TEST_F(SpawnTest, ByDefaultAMissingLayerRefusesTheSpawnNamingIt) {
  DeriveContext ctx = currentContext();
  ctx.cwd = dir_;
  // Socket files cannot be allowed one by one: always a degradation.
  auto policy = SandboxPolicy::fromJson(R"({"network": {"allowUnixSockets": ["/run/stockade-test.sock"]}})");
  auto derived = derive(policy, ctx);
  ASSERT_TRUE(std::holds_alternative<DerivedRules>(derived));
  const auto& rules = std::get<DerivedRules>(derived);
  SpawnRequest req{rules, {"/bin/true"}, dir_, {}};
  auto refused = spawn(req);  // onMissingLayer defaults to kRefuse
  ASSERT_TRUE(std::holds_alternative<SpawnError>(refused));
  EXPECT_NE(std::get<SpawnError>(refused).message().find("network.allowUnixSockets"), std::string::npos)
      << std::get<SpawnError>(refused).message();
  req.onMissingLayer = OnMissingLayer::kRunAndReport;
  auto ran = spawn(req);
  ASSERT_TRUE(std::holds_alternative<Child>(ran)) << std::get<SpawnError>(ran).message();
  EXPECT_FALSE(std::get<Child>(ran).enforcement.degradations.empty());
  (void)waitExit(std::get<Child>(ran));
}

// The check runs while the sandbox's init builds the sandbox: a refusal must
// reach the caller before any program runs, and leave no process behind.
TEST_F(SpawnTest, ACoverageRefusalRunsNoProgramAndLeavesNoProcessWhileTheCoveredNeighbourRuns) {
  DeriveContext ctx = currentContext();
  ctx.cwd = dir_;
  auto rulesWith = [&](nlohmann::json denyRead) {
    nlohmann::json policy = {{"filesystem",
                              {{"denyRead", std::move(denyRead)},
                               {"allowRead", nlohmann::json::array()},
                               {"allowWrite", {dir_}},
                               {"denyWrite", nlohmann::json::array()}}}};
    auto derived = derive(SandboxPolicy::fromJson(policy.dump()), ctx);
    if (auto* e = std::get_if<PolicyError>(&derived)) throw std::runtime_error(e->text());
    return std::get<DerivedRules>(std::move(derived));
  };
  const std::string marker = dir_ + "/ran";
  // A mask over /dev hides /dev/null, a default write path: not enforceable.
  auto refused = spawn(request(rulesWith({"/dev"}), {"/bin/sh", "-c", "echo ran > " + marker}));
  ASSERT_TRUE(std::holds_alternative<SpawnError>(refused)) << "the uncovered plan ran";
  const SpawnError& e = std::get<SpawnError>(refused);
  EXPECT_EQ(e.step, SetupStep::kCoverage) << e.message();
  EXPECT_NE(e.message().find("filesystem.defaultWrite \"/dev/null\""), std::string::npos) << e.message();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran before the refusal";
  std::ifstream children("/proc/self/task/" + std::to_string(::gettid()) + "/children");
  std::string left((std::istreambuf_iterator<char>(children)), std::istreambuf_iterator<char>());
  EXPECT_EQ(left, "") << "the refused sandbox's init is still a child of this thread";
  // The neighbour: the same policy without the mask runs and writes.
  auto ran = spawn(request(rulesWith(nlohmann::json::array()), {"/bin/sh", "-c", "echo ran > " + marker}));
  ASSERT_TRUE(std::holds_alternative<Child>(ran)) << std::get<SpawnError>(ran).message();
  auto status = waitExit(std::get<Child>(ran));
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).value, 0);
  EXPECT_TRUE(std::filesystem::exists(marker));
}

// --- prepare() and launch(): the sandbox first, the program later ---

TEST_F(SpawnTest, APreparedSandboxRunsTheProgramItIsSentLater) {
  auto rules = rulesFor(dir_);
  auto prepared = prepare(request(rules, {"unused"}).sandbox());
  ASSERT_TRUE(std::holds_alternative<PreparedSandbox>(prepared)) << std::get<SpawnError>(prepared).message();
  EXPECT_TRUE(std::get<PreparedSandbox>(prepared).matchesHost());
  // More than a socket buffer of arguments (each under execve's 128 KiB per
  // string), so the program arrives in pieces.
  std::string big(100'000, 'a');
  auto launched = launch(std::move(std::get<PreparedSandbox>(prepared)),
                         {{"/bin/sh", "-c", "echo $((${#1} + ${#2} + ${#3})) $PWD $FOO", "sh", big, big, big},
                          dir_,
                          {"PATH=/usr/bin:/bin", "FOO=bar"}});
  ASSERT_TRUE(std::holds_alternative<Child>(launched)) << std::get<SpawnError>(launched).message();
  auto& child = std::get<Child>(launched);
  EXPECT_EQ(readAll(child.stdoutPipe), "300000 " + dir_ + " bar\n");
  auto status = waitExit(child);
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).value, 0);
}

TEST_F(SpawnTest, LaunchReportsAMissingWorkingDirectoryAndProgram) {
  auto rules = rulesFor(dir_);
  for (auto [program, step] : {std::pair<ProgramRequest, SetupStep>{{{"/bin/true"}, dir_ + "/missing", {}}, SetupStep::kWorkingDir},
                               {{{"/no/such/program"}, dir_, {}}, SetupStep::kExec}}) {
    auto prepared = prepare(request(rules, {"unused"}).sandbox());
    ASSERT_TRUE(std::holds_alternative<PreparedSandbox>(prepared)) << std::get<SpawnError>(prepared).message();
    auto launched = launch(std::move(std::get<PreparedSandbox>(prepared)), program);
    ASSERT_TRUE(std::holds_alternative<SpawnError>(launched));
    EXPECT_EQ(std::get<SpawnError>(launched).step, step) << std::get<SpawnError>(launched).message();
    EXPECT_EQ(std::get<SpawnError>(launched).error, ENOENT);
  }
}

TEST_F(SpawnTest, ASandboxDroppedBeforeLaunchIsKilledAndReaped) {
  auto rules = rulesFor(dir_);
  pid_t pid;
  {
    auto prepared = prepare(request(rules, {"unused"}).sandbox());
    ASSERT_TRUE(std::holds_alternative<PreparedSandbox>(prepared)) << std::get<SpawnError>(prepared).message();
    auto children = std::filesystem::path("/proc/self/task") / std::to_string(::gettid()) / "children";
    std::ifstream list(children);
    ASSERT_TRUE(list >> pid) << "the prepared sandbox's init is not a child of this thread";
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  // Reaped: the pid is gone (not even a zombie is left).
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace stockade::platform

namespace stockade::platform {
namespace {

using testing::pidsCgroupRequired;
using testing::readWholeFile;

// This process's sandbox cgroups still present in `dir`.
std::vector<std::string> ourCgroups(const std::string& dir) {
  std::vector<std::string> out;
  const std::string prefix = "stockade-" + std::to_string(::getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path().string());
  return out;
}

class PidsLimitTest : public SpawnTest {
 protected:
  DerivedRules rulesWithPids(std::uint64_t pids) {
    DeriveContext ctx = currentContext();
    ctx.cwd = dir_;
    auto derived = derive(SandboxPolicy::fromJson(R"({"limits": {"pids": )" + std::to_string(pids) + "}}"), ctx);
    if (auto* e = std::get_if<PolicyError>(&derived)) throw std::runtime_error(e->text());
    return std::get<DerivedRules>(std::move(derived));
  }
  // The usable hierarchy, or skips (as a user without one: the refusal test covers that).
  std::optional<CgroupHierarchy> controllerOrSkip() {
    auto found = findCgroupController(CgroupController::kPids);
    if (auto* h = std::get_if<CgroupHierarchy>(&found)) return *h;
    if (pidsCgroupRequired()) ADD_FAILURE() << "root on a host with a pids hierarchy: " << std::get<std::string>(found);
    return std::nullopt;
  }
};

TEST_F(PidsLimitTest, TheSandboxRunsInItsOwnPidsCgroupWhichIsRemovedWhenItExits) {
  auto controller = controllerOrSkip();
  if (!controller) GTEST_SKIP() << "no usable pids cgroup for this user";
  auto rules = rulesWithPids(5);
  auto spawned = spawn(request(rules, {"/bin/sh", "-c", "echo ready; read x"}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  EXPECT_EQ(child.enforcement.pidsLimit, controller->mechanism);
  EXPECT_TRUE(child.enforcement.degradations.empty());
  const std::string cgroup = child.enforcement.pidsCgroup;
  EXPECT_TRUE(cgroup.starts_with(controller->ownCgroupDir + "/stockade-" + std::to_string(::getpid()) + "-")) << cgroup;
  char buf[6];
  ASSERT_EQ(::read(child.stdoutPipe.get(), buf, 6), 6);
  EXPECT_EQ(readWholeFile(cgroup + "/pids.max"), "6\n");  // the program's 5, and the sandbox's init
  // init (pid 1 inside) and the shell: init was there before the shell forked.
  EXPECT_NE(readWholeFile(cgroup + "/cgroup.procs").find(std::to_string(child.pid) + "\n"), std::string::npos);
  EXPECT_EQ(readWholeFile(cgroup + "/pids.current"), "2\n");
  child.stdinPipe.reset();
  auto status = waitExit(child);
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).shellCode(), 1);  // `read` saw EOF
  EXPECT_FALSE(std::filesystem::exists(cgroup)) << cgroup << " left behind";
}

TEST_F(PidsLimitTest, ASpawnThatFailsInSetupLeavesNoCgroupBehind) {
  auto controller = controllerOrSkip();
  if (!controller) GTEST_SKIP() << "no usable pids cgroup for this user";
  auto rules = rulesWithPids(5);
  auto req = request(rules, {"/bin/true"});
  req.cwd = dir_ + "/does-not-exist";
  auto spawned = spawn(req);
  ASSERT_TRUE(std::holds_alternative<SpawnError>(spawned));
  EXPECT_EQ(std::get<SpawnError>(spawned).step, SetupStep::kWorkingDir) << std::get<SpawnError>(spawned).message();
  EXPECT_EQ(ourCgroups(controller->ownCgroupDir), std::vector<std::string>{});
  // The neighbour: the same rules in an existing directory run.
  auto ran = spawn(request(rules, {"/bin/true"}));
  ASSERT_TRUE(std::holds_alternative<Child>(ran)) << std::get<SpawnError>(ran).message();
  auto status = waitExit(std::get<Child>(ran));
  ASSERT_TRUE(std::holds_alternative<ExitStatus>(status));
  EXPECT_EQ(std::get<ExitStatus>(status).shellCode(), 0);
  EXPECT_EQ(ourCgroups(controller->ownCgroupDir), std::vector<std::string>{});
}

TEST_F(PidsLimitTest, WithoutAUsablePidsCgroupAPidsLimitIsRefusedOrReportedNeverSilentlyDropped) {
  auto found = findCgroupController(CgroupController::kPids);
  if (std::holds_alternative<CgroupHierarchy>(found))
    GTEST_SKIP() << "a pids cgroup is usable here (" << std::get<CgroupHierarchy>(found).ownCgroupDir
                 << "); the unprivileged re-run covers the refusal";
  ASSERT_FALSE(pidsCgroupRequired()) << std::get<std::string>(found);
  auto rules = rulesWithPids(64);
  SpawnRequest req{rules, {"/bin/true"}, dir_, {}};
  auto refused = spawn(req);
  ASSERT_TRUE(std::holds_alternative<SpawnError>(refused));
  EXPECT_NE(std::get<SpawnError>(refused).message().find("limits.pids: not enforced"), std::string::npos)
      << std::get<SpawnError>(refused).message();
  req.onMissingLayer = OnMissingLayer::kRunAndReport;
  auto ran = spawn(req);
  ASSERT_TRUE(std::holds_alternative<Child>(ran)) << std::get<SpawnError>(ran).message();
  const auto& report = std::get<Child>(ran).enforcement;
  EXPECT_EQ(report.pidsLimit, LimitMechanism::kNone);
  EXPECT_TRUE(report.pidsCgroup.empty());
  ASSERT_FALSE(report.degradations.empty());
  EXPECT_TRUE(report.degradations.front().starts_with("limits.pids: not enforced")) << report.degradations.front();
  (void)waitExit(std::get<Child>(ran));
}

// limits.memoryBytes and cpuSeconds beside pids: one cgroup concept.
class SandboxCgroupTest : public PidsLimitTest {};

TEST_F(SandboxCgroupTest, AllThreeLimitsShareTheSandboxCgroupsAndWaitExitForKillsAtTheCpuLimit) {
  DeriveContext ctx = currentContext();
  ctx.cwd = dir_;
  auto derived = derive(SandboxPolicy::fromJson(
                            R"({"limits": {"pids": 16, "memoryBytes": 268435456, "cpuSeconds": 1, "fileSizeBytes": 0}})"),
                        ctx);
  ASSERT_TRUE(std::holds_alternative<DerivedRules>(derived));
  const auto& rules = std::get<DerivedRules>(derived);
  auto spawned = spawn(request(rules, {"/bin/sh", "-c", "while :; do :; done & while :; do :; done"}));
  ASSERT_TRUE(std::holds_alternative<Child>(spawned)) << std::get<SpawnError>(spawned).message();
  auto& child = std::get<Child>(spawned);
  const auto& e = child.enforcement;
  if (!child.cgroup.valid()) {
    EXPECT_FALSE(pidsCgroupRequired()) << "root, yet no sandbox cgroup";
    // Each limit is named as weaker; nothing claims a cgroup.
    for (const char* field : {"limits.memoryBytes: enforced per process only", "limits.cpuSeconds: enforced per process only"})
      EXPECT_TRUE(std::any_of(e.degradations.begin(), e.degradations.end(),
                              [&](const std::string& d) { return d.starts_with(field); }))
          << field;
    EXPECT_EQ(e.memoryLimit, LimitMechanism::kRlimit);
    EXPECT_EQ(e.cpuLimit, LimitMechanism::kRlimit);
    (void)signalChild(child.pidfd, SIGKILL);
    (void)waitExit(child);
    GTEST_SKIP() << "no usable cgroup for this user: the degradations above are the report";
  }
  std::vector<std::string> dirs;
  for (const auto* d : {&e.pidsCgroup, &e.memoryCgroup, &e.cpuCgroup}) {
    ASSERT_FALSE(d->empty());
    EXPECT_NE(readWholeFile(*d + "/cgroup.procs").find(std::to_string(child.pid) + "\n"), std::string::npos) << *d;
    dirs.push_back(*d);
  }
  const bool v1 = e.memoryLimit == LimitMechanism::kCgroupV1;
  EXPECT_EQ(readWholeFile(e.memoryCgroup + (v1 ? "/memory.limit_in_bytes" : "/memory.max")), "268435456\n");
  // Waiting kills the sandbox once it has used its second.
  auto status = waitExitFor(child, std::chrono::seconds(60));
  ASSERT_TRUE(std::holds_alternative<std::optional<ExitStatus>>(status)) << std::get<std::string>(status);
  const auto& exited = std::get<std::optional<ExitStatus>>(status);
  ASSERT_TRUE(exited.has_value()) << "still running after 60 s";
  EXPECT_STREQ(exited->limit, "limits.cpuSeconds");
  ASSERT_TRUE(exited->cpuTime.has_value());
  EXPECT_GE(*exited->cpuTime, std::chrono::seconds(1));
  EXPECT_EQ(exited->shellCode(), 128 + SIGKILL);
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d << " left behind";
}

}  // namespace
}  // namespace stockade::platform
