// Landlock's rules, each tested where no other layer could pass the test for
// it: with Landlock off, every refusal below would have succeeded.
//   - scopes (signals, abstract unix sockets) and TCP connect: the target is
//     an "outsider", a process that joined the sandbox's user, pid and
//     network namespaces from outside, so the namespaces do not separate it
//     from the program; only the program's Landlock domain does;
//   - TCP bind: inside the sandbox's own network namespace a bind needs no
//     privilege;
//   - filesystem writes: /proc is a writable mount (the mount layer leaves
//     it so), and Landlock grants no write right there.
// Each beside the allowed neighbour, in the same run.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <sstream>

#include "platform/linux/landlock.h"
#include "platform/linux/spawn.h"
#include "stockade/policy.h"
#include "stockade/rules.h"
#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

constexpr std::uint16_t kProxyPort = 3128;     // the port Landlock lets the program connect to
constexpr std::uint16_t kOutsiderPort = 3129;  // where the outsider listens, in the same namespace
constexpr const char* kOutsiderSocket = "stockade-outsider";  // its abstract unix socket

// The outsider's body, after fork() from a threaded test process: raw calls
// only, no allocation. It joins the namespaces of the sandbox whose init is
// `init`, then forks the process that lives in them (setns(CLONE_NEWPID)
// applies to children only). That process listens on 127.0.0.1:3129 and on
// the abstract socket, checks its own TCP listener answers, names itself
// "outsider", and reports "ns <pid in the sandbox>\n" on `report`, beside
// the helper's "host <its pid here>\n" (the two lines in either order).
[[noreturn]] void outsiderMain(pid_t init, int report) {
  char path[64];
  auto nsPath = [&](const char* ns) {
    char digits[16];
    int n = 0;
    for (pid_t v = init; v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    char* p = path;
    for (const char* s = "/proc/"; *s;) *p++ = *s++;
    while (n > 0) *p++ = digits[--n];
    *p++ = '/';
    for (const char* s = "ns/"; *s;) *p++ = *s++;
    while (*ns) *p++ = *ns++;
    *p = '\0';
    return path;
  };
  int user = ::open(nsPath("user"), O_RDONLY | O_CLOEXEC);
  int net = ::open(nsPath("net"), O_RDONLY | O_CLOEXEC);
  int pid = ::open(nsPath("pid"), O_RDONLY | O_CLOEXEC);
  if (user < 0 || net < 0 || pid < 0) ::_exit(10);
  // Into the user namespace first: its owner (this uid) gets every
  // capability there, which joining the others needs.
  if (::setns(user, CLONE_NEWUSER) != 0) ::_exit(11);
  if (::setns(net, CLONE_NEWNET) != 0) ::_exit(12);
  if (::setns(pid, CLONE_NEWPID) != 0) ::_exit(13);
  pid_t inside = ::fork();
  if (inside < 0) ::_exit(14);
  if (inside > 0) {
    // Report the host pid; the process itself reports its pid inside.
    char line[16];
    int n = 0;
    for (pid_t v = inside; v > 0; v /= 10) line[n++] = static_cast<char>('0' + v % 10);
    char out[24] = "host ";
    int m = 5;
    while (n > 0) out[m++] = line[--n];
    out[m++] = '\n';
    if (::write(report, out, static_cast<std::size_t>(m)) != m) ::_exit(15);
    ::_exit(0);
  }
  // No parent-death signal: its parent (the helper) exits at once. It dies
  // with the sandbox's pid namespace, or by TearDown().
  ::prctl(PR_SET_NAME, "outsider", 0, 0, 0);
  int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(kOutsiderPort);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(tcp, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(tcp, 16) != 0) ::_exit(16);
  int self = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(self, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) ::_exit(17);  // the port is live
  ::close(self);
  int abstract = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un = {};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, kOutsiderSocket, std::strlen(kOutsiderSocket));
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(kOutsiderSocket));
  if (::bind(abstract, reinterpret_cast<sockaddr*>(&un), len) != 0 || ::listen(abstract, 16) != 0) ::_exit(18);
  char digits[16];
  int n = 0;
  for (pid_t v = ::getpid(); v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  char out[24] = "ns ";
  int m = 3;
  while (n > 0) out[m++] = digits[--n];
  out[m++] = '\n';
  if (::write(report, out, static_cast<std::size_t>(m)) != m) ::_exit(19);
  ::close(report);
  for (;;) ::pause();  // connections wait in the backlogs; the sandbox's end kills it
}

// The pid (here) of `parent`'s child, waiting up to 10 s for it to appear.
pid_t childOf(pid_t parent) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::string name = e.path().filename().string();
      if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
      std::string stat = readWholeFile(e.path().string() + "/stat");
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream fields(stat.substr(close + 2));
      std::string state;
      pid_t ppid = 0;
      fields >> state >> ppid;
      if (ppid == parent) return std::stoi(name);
    }
    ::usleep(10'000);
  }
  return -1;
}

class LandlockLayerTest : public SandboxTest {
 protected:
  void TearDown() override {
    if (outsiderHostPid_ > 0) ::kill(outsiderHostPid_, SIGKILL);
    SandboxTest::TearDown();
  }

  platform::SpawnRequest request(const DerivedRules& rules, const std::vector<std::string>& probeArgs) {
    // The program waits for the outsider's pid on stdin, then runs the probe.
    std::string script = "read pid; exec " + probe_;
    for (const auto& a : probeArgs) script += " " + a;
    platform::SpawnRequest r{rules, {"/bin/sh", "-c", script}, ws, {"PATH=/usr/bin:/bin"}};
    r.stdio = platform::Stdio::kPipe;
    r.onMissingLayer = platform::OnMissingLayer::kRunAndReport;  // allowUnixSockets is a degradation
    r.proxyPort = kProxyPort;
    return r;
  }

  DerivedRules derived() {
    DeriveContext ctx = currentContext();
    ctx.cwd = ws;
    auto d = derive(SandboxPolicy::fromJson(policy.dump()), ctx);
    if (auto* e = std::get_if<PolicyError>(&d)) throw std::runtime_error(e->text());
    return std::get<DerivedRules>(std::move(d));
  }

  // Spawns the probe with `args` ("$pid" in them is the outsider's pid in the
  // sandbox), places the outsider, lets the program go; returns its stdout.
  std::string runWithOutsider(const std::vector<std::string>& args) {
    auto rules = derived();
    auto spawned = platform::spawn(request(rules, args));
    if (auto* e = std::get_if<platform::SpawnError>(&spawned)) {
      ADD_FAILURE() << e->message();
      return {};
    }
    auto& child = std::get<platform::Child>(spawned);
    // Join through the program's namespaces, not init's: init is not
    // dumpable, so an unprivileged caller may not open its /proc/<pid>/ns.
    const pid_t program = childOf(child.pid);
    int report[2];
    EXPECT_EQ(::pipe2(report, O_CLOEXEC), 0);
    pid_t helper = ::fork();
    if (helper == 0) {
      ::close(report[0]);
      outsiderMain(program, report[1]);
    }
    ::close(report[1]);
    int status = 0;
    ::waitpid(helper, &status, 0);
    std::string text, hostPid, nsPid;
    char c;
    pollfd p = {report[0], POLLIN, 0};
    while ((hostPid.empty() || nsPid.empty()) && ::poll(&p, 1, 10'000) == 1 && ::read(report[0], &c, 1) == 1) {
      if (c != '\n') {
        text += c;
        continue;
      }
      if (text.starts_with("host ")) hostPid = text.substr(5);
      if (text.starts_with("ns ")) nsPid = text.substr(3);
      text.clear();
    }
    ::close(report[0]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || hostPid.empty() || nsPid.empty()) {
      ADD_FAILURE() << "the outsider did not join the sandbox (helper status " << status << ", host pid \"" << hostPid
                    << "\", pid inside \"" << nsPid << "\")";
      (void)platform::signalChild(child.pidfd, SIGKILL);
      (void)platform::waitExit(child);
      return {};
    }
    outsiderHostPid_ = std::stoi(hostPid);
    nsPid += "\n";
    EXPECT_EQ(::write(child.stdinPipe.get(), nsPid.data(), nsPid.size()), static_cast<ssize_t>(nsPid.size()));
    child.stdinPipe.reset();
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(child.stdoutPipe.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    (void)platform::waitExit(child);
    return out;
  }

  pid_t outsiderHostPid_ = -1;
};

TEST_F(LandlockLayerTest, ASignalToAProcessOutsideTheDomainIsRefusedWhileOwnChildrenCanBeSignalled) {
  if (platform::landlockAbi() < 6) GTEST_SKIP() << "Landlock ABI < 6: signals are not scoped";
  // The outsider is visible (same pid namespace, same uid): only the scope refuses.
  auto out = runWithOutsider({"cat", "/proc/$pid/comm", "+", "kill-own-child", "+", "kill", "$pid", "0"});
  EXPECT_EQ(out, "outsider\nstep-exit=0\nstep-exit=0\nerrno=EPERM\nstep-exit=1\n");
}

TEST_F(LandlockLayerTest, AnAbstractSocketOutsideTheDomainIsRefusedWhileOneOfItsOwnWorks) {
  if (platform::landlockAbi() < 6) GTEST_SKIP() << "Landlock ABI < 6: abstract unix sockets are not scoped";
  // seccomp refuses every AF_UNIX socket unless unix sockets are allowed:
  // allow them, so that the scope is the only layer left.
  policy["network"] = {{"allowUnixSockets", {ws + "/any.sock"}}, {"allowedDomains", nlohmann::json::array()}};
  auto out = runWithOutsider({"abstract-self", "stockade-inside", "+", "abstract-connect", kOutsiderSocket});
  EXPECT_EQ(out, "step-exit=0\nerrno=EPERM\nstep-exit=1\n");
}

TEST_F(LandlockLayerTest, TcpConnectReachesTheProxyPortButNotAListenerOnAnotherPort) {
  if (platform::landlockAbi() < 4) GTEST_SKIP() << "Landlock ABI < 4: TCP connect is not restricted";
  auto out = runWithOutsider({"tcp", "127.0.0.1", std::to_string(kProxyPort), "+", "tcp", "127.0.0.1",
                              std::to_string(kOutsiderPort)});
  EXPECT_EQ(out, "step-exit=0\nerrno=EACCES\nstep-exit=1\n");
}

TEST_F(LandlockLayerTest, TcpBindIsRefusedUnlessThePolicyAllowsLocalBinding) {
  if (platform::landlockAbi() < 4) GTEST_SKIP() << "Landlock ABI < 4: TCP bind is not restricted";
  policy["network"] = {{"allowLocalBinding", false}, {"allowedDomains", nlohmann::json::array()}};
  auto refused = probe({"udp-self", "+", "bind-tcp", "3130"});
  EXPECT_EQ(refused.out, "step-exit=0\nerrno=EACCES\nstep-exit=1\n") << refused.err;
  policy["network"]["allowLocalBinding"] = true;
  auto allowed = probe({"bind-tcp", "3130"});
  EXPECT_EQ(allowed.exitCode, 0) << allowed.out << allowed.err;
}

TEST_F(LandlockLayerTest, AWriteTheMountsLeaveOpenIsRefusedWhileTheWorkspaceIsWritable) {
  if (platform::landlockAbi() < 1) GTEST_SKIP() << "no Landlock on this kernel";
  auto r = probe({"write", ws + "/allowed.txt", "+", "write-text", "/proc/self/comm", "renamed"});
  EXPECT_EQ(r.out, "step-exit=0\nerrno=EACCES\nstep-exit=1\n") << r.err;
  EXPECT_EQ(slurp(ws + "/allowed.txt"), "probe\n");
}

}  // namespace
}  // namespace stockade::testing
