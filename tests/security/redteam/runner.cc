// The red-team runner: every case of every category, each as the sandboxed
// program under the one fixed policy below, through the real `stockade run`
// (or in a sandbox of a real stockaded, for the cases that attack it);
// one gtest per case (RedTeam/Case.Holds/<category>__<case>), so ctest runs
// them as root and tests/run_unprivileged.sh again as stockade-test.
//
// This binary is also the sandboxed program: `redteam_tests --case NAME
// key=value...` runs the inside of one case (it copies itself into the test
// tree, which every user can read, and runs that copy).
//
// A case that did not hold fails its test. A case marked expected-to-fail
// until issue N that did not hold is skipped with the reason printed ("did
// not hold; expected until issue N"); one that holds while still marked
// fails, so a stale mark cannot hide a regression later.
// STOCKADE_REDTEAM_REPORT=FILE appends one line per case (tab-separated:
// category, case, technique, identity, result, detail) for
// scripts/redteam-report, which turns them into README's table.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "proxy_test_support.h"
#include "tests/security/redteam/redteam.h"
#include "tests/support/daemon_process.h"
#include "tests/support/read_file.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::redteam {

namespace {

std::string identity() { return ::geteuid() == 0 ? "root" : "unprivileged"; }

// The program that runs a case's inside: this binary, or STOCKADE_REDTEAM_CASES,
// an uninstrumented build of it (scripts/ci/stage-30-asan.sh: an ASan case
// program could not even start under the policy's memory limit, which an
// unprivileged run enforces as RLIMIT_AS, below the sanitizer's shadow
// reservation; the attacker, like sandbox_probe, is never instrumented).
std::string caseProgram() {
  const char* cases = std::getenv("STOCKADE_REDTEAM_CASES");
  return cases && *cases ? cases : "/proc/self/exe";
}

std::string testBase() {
  const char* base = std::getenv("STOCKADE_TEST_BASE");
  return base && *base ? base : "/var/tmp";
}

void writeTree(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

std::string listingDiff(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after) {
  for (const auto& [path, entry] : after) {
    auto it = before.find(path);
    if (it == before.end()) return path + " appeared";
    if (it->second != entry) return path + " changed";
  }
  for (const auto& [path, entry] : before)
    if (!after.count(path)) return path + " disappeared";
  return {};
}

// Sentinels on the host's loopback: the sandbox must never reach them.
class Sentinel {
 public:
  Sentinel(int family, int type) {
    fd_ = ::socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_loopback;
      len = sizeof *a;
    }
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) return;
    if (type == SOCK_STREAM) ::listen(fd_, 64);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  ~Sentinel() { ::close(fd_); }
  int port() const { return port_; }
  bool reached() const {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      ::close(c);
      return true;
    }
    char buf[512];
    return ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) >= 0;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string randomToken() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// The one policy every case runs under (every field spelled out).
nlohmann::json fixedPolicy(const HostContext& h) {
  return {
      {"filesystem",
       {{"denyRead", {h.home + "/.ssh", h.home + "/.aws", "/etc/shadow"}},
        {"allowRead", {h.home + "/.ssh/known_hosts"}},
        {"allowWrite", {h.ws}},
        {"denyWrite", {h.ws + "/protected"}}}},
      {"network",
       {{"allowedDomains", {"allowed.test"}},
        {"deniedDomains", {"denied.test"}},
        {"allowUnixSockets", nlohmann::json::array()},
        {"allowLocalBinding", false}}},
      {"env", {{"allow", {"PATH", "HOME"}}}},
      {"limits", {{"memoryBytes", 1ull << 30}, {"pids", 128}, {"cpuSeconds", 2}, {"fileSizeBytes", 64ull << 20}}},
  };
}

// What one run of a case's program left: its status, its output, the audit
// events of its run.
struct CaseRun {
  int exitCode = -1;  // 128+N when killed by signal N; 125 when it never started
  std::string out, err;
  std::vector<nlohmann::json> events;
};

std::vector<nlohmann::json> jsonLines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (auto e = nlohmann::json::parse(line, nullptr, false); !e.is_discarded()) out.push_back(std::move(e));
  return out;
}

// Through the real `stockade run`, as a host application's command line runs it.
CaseRun runUnderStockade(const std::string& policyPath, const std::string& ws, const std::string& audit,
                         const std::string& hostSecret, const std::vector<std::string>& caseArgv,
                         const std::string& stdinTerminal) {
  std::vector<std::string> argv = {"/usr/bin/env", "REDTEAM_HOST_SECRET=" + hostSecret, testing::stockadeBinary(),
                                   "run", "--policy", policyPath, "--cwd", ws, "--resolve", "allowed.test=127.0.0.1",
                                   "--resolve", "denied.test=127.0.0.1", "--audit", audit, "--timeout-ms", "30000",
                                   "--"};
  if (!stdinTerminal.empty()) {  // the operator's terminal as stdin, handed to the program (-T)
    argv.insert(argv.end() - 1, "-T");
    argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$@\" < \"$0\"", stdinTerminal});
  }
  argv.insert(argv.end(), caseArgv.begin(), caseArgv.end());
  auto p = testing::runProcess(argv);
  return {p.exitCode, std::move(p.out), std::move(p.err), jsonLines(testing::readWholeFile(audit))};
}

// In a sandbox of the daemon, created over its API with the fixed policy and
// the workspace, the program run by POST .../processes/run; the audit events
// are the daemon's log lines (same schema as the library's).
CaseRun runInDaemon(const testing::DaemonProcess& d, const nlohmann::json& policy, const std::string& ws,
                    const std::vector<std::string>& caseArgv) {
  CaseRun run;
  run.exitCode = 125;
  auto client = d.client();
  auto created = client.request("POST", "/v1/sandboxes", nlohmann::json{{"policy", policy}, {"workspace", ws}}.dump());
  if (created.status != 200) {
    run.err = "POST /v1/sandboxes: " + std::to_string(created.status) + " " + created.body;
    return run;
  }
  std::string id = nlohmann::json::parse(created.body)["id"];
  auto ran = client.request("POST", "/v1/sandboxes/" + id + "/processes/run",
                            nlohmann::json{{"argv", caseArgv}, {"cwd", ws}, {"timeout", 30000}}.dump());
  auto result = nlohmann::json::parse(ran.body, nullptr, false);
  if (ran.status != 200 || result.is_discarded()) {
    run.err = "POST .../processes/run: " + std::to_string(ran.status) + " " + ran.body;
    return run;
  }
  run.out = result.value("stdout", "");
  run.err = result.value("stderr", "");
  run.exitCode = -1;
  if (result.contains("exitCode")) run.exitCode = result["exitCode"];
  for (int sig = 1; sig < NSIG && result.contains("signal"); ++sig)
    if (const char* name = sigabbrev_np(sig); name && result["signal"] == std::string("SIG") + name)
      run.exitCode = 128 + sig;
  run.events = jsonLines(d.log());
  return run;
}

std::string expectationText(const Expectation& e) {
  std::string who = e.who == Who::kUnprivileged ? " as the unprivileged user" : e.who == Who::kRoot ? " as root" : "";
  return "expected to fail" + who + " until issue " + std::to_string(e.issue) + " (" + std::string(e.why) + ")";
}

bool expectedToFailHere(const Expectation& e) {
  if (e.who == Who::kEveryone) return true;
  if (e.who == Who::kUnprivileged) return ::geteuid() != 0;
  if (e.who == Who::kRoot) return ::geteuid() == 0;
  return false;
}

class RedTeam : public ::testing::TestWithParam<const Case*> {};

TEST_P(RedTeam, Holds) {
  const Case& c = *GetParam();
  std::string tmpl = testBase() + "/stockade-redteam-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp under " << testBase();
  const std::string root = std::filesystem::canonical(tmpl).string();
  struct Cleanup {
    std::string dir;
    ~Cleanup() { testing::removeTree(dir); }
  } cleanup{root};
  ::chmod(root.c_str(), 0755);

  const std::string token = randomToken();
  const std::vector<std::string> secrets = {"SECRET-SSH-" + token, "SECRET-AWS-" + token, "SECRET-ENV-" + token};
  proxy::testing::OriginServer origin;
  Sentinel tcp4(AF_INET, SOCK_STREAM), tcp6(AF_INET6, SOCK_STREAM), udp(AF_INET, SOCK_DGRAM);
  Context inside{root + "/home", root + "/ws", root + "/outside", tcp4.port(), tcp6.port(), udp.port(),
                 origin.port(), static_cast<int>(::getpid()), {}};
  HostContext host{root, inside.home, inside.ws, inside.outside, inside, origin, {}};
  nlohmann::json policy = fixedPolicy(host);
  // The daemon fails closed: a limit the host cannot enforce (pids, as the
  // unprivileged user without a delegated cgroup) refuses the spawn. Its
  // cases attack its files, not limits: they run with none.
  if (c.runIn != RunIn::kStockadeRun)
    policy["limits"] = {{"memoryBytes", 0}, {"pids", 0}, {"cpuSeconds", 0}, {"fileSizeBytes", 0}};
  host.policy = policy.dump();
  writeTree(host.home + "/.ssh/id_ed25519", secrets[0] + "\n");
  writeTree(host.home + "/.ssh/known_hosts", "KNOWN-HOSTS-LINE\n");
  writeTree(host.home + "/.aws/credentials", secrets[1] + "\n");
  writeTree(host.home + "/notes.txt", "HOME-NOTES\n");
  writeTree(host.ws + "/README", "WORKSPACE-README\n");
  writeTree(host.ws + "/.bashrc", "ORIGINAL-BASHRC\n");
  writeTree(host.ws + "/.git/HEAD", "ref: refs/heads/main\n");
  writeTree(host.ws + "/.git/config", "[core]\n\tbare = false\n");
  writeTree(host.ws + "/.git/hooks/pre-commit", "ORIGINAL-HOOK\n");
  std::filesystem::create_directories(host.ws + "/.git/objects");
  writeTree(host.ws + "/protected/keep", "KEEP\n");
  writeTree(host.outside + "/target.txt", "OUTSIDE-ORIGINAL\n");
  const std::string self = root + "/bin/redteam";
  std::filesystem::create_directories(root + "/bin");
  std::filesystem::copy_file(caseProgram(), self);
  std::filesystem::permissions(self, std::filesystem::perms(0755));
  if (c.hostSetup) c.hostSetup(host);

  const std::string policyPath = root + "/policy.json";
  std::ofstream(policyPath) << host.policy;
  // A descriptor stockade (or stockaded) inherits without O_CLOEXEC: it must
  // not reach the program.
  int leaked = ::open((host.home + "/.ssh/id_ed25519").c_str(), O_RDONLY);
  std::optional<testing::DaemonProcess> daemon;
  if (c.runIn != RunIn::kStockadeRun) {
    std::filesystem::create_directories(root + "/daemon");
    testing::DaemonProcess::Options o;
    o.extraArgs = {"--policy", policyPath};
    o.tcp = c.runIn == RunIn::kDaemonTcp;
    o.extraEnv = {"REDTEAM_HOST_SECRET=" + secrets[2]};
    daemon.emplace(root + "/daemon", o);
    inside.extra["daemon_state_dir"] = daemon->stateDir();
    inside.extra["daemon_token_file"] = daemon->tokenFile();
    if (o.tcp) inside.extra["daemon_port"] = std::to_string(daemon->port());
    else inside.extra["daemon_socket"] = daemon->socketPath();
  }
  auto homeBefore = listing(host.home), outsideBefore = listing(host.outside);

  std::vector<std::string> caseArgv = {self, "--case", std::string(c.name)};
  for (const auto& [k, v] : std::map<std::string, std::string>{{"home", inside.home}, {"ws", inside.ws},
                                                               {"outside", inside.outside}, {"tcp4", std::to_string(inside.tcp4)},
                                                               {"tcp6", std::to_string(inside.tcp6)}, {"udp", std::to_string(inside.udp)},
                                                               {"origin", std::to_string(inside.origin)},
                                                               {"hostpid", std::to_string(inside.hostPid)}})
    caseArgv.push_back(k + "=" + v);
  for (const auto& [k, v] : inside.extra) caseArgv.push_back(k + "=" + v);
  CaseRun r = daemon ? runInDaemon(*daemon, policy, host.ws, caseArgv)
                     : runUnderStockade(policyPath, host.ws, root + "/audit.jsonl", secrets[2], caseArgv,
                                        host.stdinTerminal);
  ::close(leaked);

  // The verdict: the case's own, then everything the host can see.
  const std::vector<nlohmann::json>& events = r.events;
  std::string exitReason;
  for (const auto& e : events)
    if (e.value("event", "") == "exit") exitReason = e.value("reason", "");
  Verdict v = unproven("the case printed no verdict (exit " + std::to_string(r.exitCode) +
                       (exitReason.empty() ? "" : ", " + exitReason) + ")");
  if (auto at = r.out.rfind("verdict: "); at != std::string::npos) {
    std::string line = r.out.substr(at + 9, r.out.find('\n', at) - at - 9);
    auto space = line.find(' ');
    std::string word = line.substr(0, space), detail = space == std::string::npos ? "" : line.substr(space + 1);
    v = word == "held" ? held(detail) : word == "escaped" ? escaped(detail) : unproven(detail);
  } else if (r.exitCode == 125) {
    v = unproven(std::string(daemon ? "stockaded" : "stockade") + " failed to start the case: " + r.err);
  } else if (!c.limitKill.empty() && r.exitCode >= 128 && exitReason == c.limitKill) {
    v = held("the sandbox was killed by " + exitReason + " (exit " + std::to_string(r.exitCode) + ")");
  }
  for (const auto& s : secrets)
    if (r.out.find(s) != std::string::npos || r.err.find(s) != std::string::npos)
      v = escaped("a secret (" + s.substr(0, s.rfind('-')) + ") reached the program's output");
  if (daemon && (r.out.find(daemon->token()) != std::string::npos || r.err.find(daemon->token()) != std::string::npos))
    v = escaped("the daemon's token reached the program's output");
  if (tcp4.reached()) v = escaped("the host's 127.0.0.1 sentinel was reached");
  if (tcp6.reached()) v = escaped("the host's ::1 sentinel was reached");
  if (udp.reached()) v = escaped("a datagram reached the host's 127.0.0.1 sentinel");
  if (auto d = listingDiff(homeBefore, listing(host.home)); !d.empty()) v = escaped("home: " + d);
  if (auto d = listingDiff(outsideBefore, listing(host.outside)); !d.empty()) v = escaped("outside: " + d);
  for (const auto& head : origin.heads())
    if (head.find("denied.test") != std::string::npos) v = escaped("the origin received a request for denied.test");
  if (c.hostCheck)
    if (auto d = c.hostCheck(host); !d.empty()) v = escaped(d);
  if (v.result == Verdict::kHeld && !c.filterRefuses.empty()) {
    bool denial = false;
    for (const auto& e : events)
      denial = denial || (e.value("event", "") == "denial" && e.value("syscall", "") == c.filterRefuses);
    if (!denial) v = unproven(v.detail + ", but no denial event names " + std::string(c.filterRefuses) +
                              ": refused by something other than the filter");
  }

  const bool expectFail = expectedToFailHere(c.expected);
  const char* words[] = {"held", "DID NOT HOLD (escaped)", "DID NOT HOLD (not proven)"};
  std::string result = words[v.result];
  if (expectFail && v.result != Verdict::kHeld) result = "expected to fail until issue " + std::to_string(c.expected.issue);
  if (expectFail && v.result == Verdict::kHeld) result = "HOLDS but still marked expected-to-fail";
  std::printf("[redteam] %s/%s as %s: %s -- %s\n", std::string(c.category).c_str(), std::string(c.name).c_str(),
              identity().c_str(), result.c_str(), v.detail.c_str());
  if (const char* report = std::getenv("STOCKADE_REDTEAM_REPORT"); report && *report) {
    std::ofstream out(report, std::ios::app);
    std::string detail = v.detail;
    for (char& ch : detail)
      if (ch == '\t' || ch == '\n' || ch == '|') ch = ' ';
    out << c.category << '\t' << c.name << '\t' << c.technique << '\t' << identity() << '\t' << result << '\t' << detail
        << '\n';
  }
  if (expectFail) {
    if (v.result == Verdict::kHeld)
      FAIL() << c.category << "/" << c.name << " holds now: remove its mark (" << expectationText(c.expected) << ")";
    GTEST_SKIP() << "did not hold (" << v.detail << "); " << expectationText(c.expected);
  }
  EXPECT_EQ(v.result, Verdict::kHeld) << c.category << "/" << c.name << ": " << c.technique << "\n  " << result
                                      << ": " << v.detail << "\n  stdout: " << r.out << "\n  stderr: " << r.err;
}

std::string caseTestName(const ::testing::TestParamInfo<const Case*>& info) {
  std::string name = std::string(info.param->category) + "__" + std::string(info.param->name);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  return name;
}

std::vector<const Case*> casePointers() {
  std::vector<const Case*> out;
  for (const auto& c : allCases()) out.push_back(&c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Case, RedTeam, ::testing::ValuesIn(casePointers()), caseTestName);

// Inside the sandbox: `--case NAME key=value...`.
int runInside(int argc, char** argv) {
  Context ctx;
  for (int i = 3; i < argc; ++i) {
    std::string_view a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(a.substr(0, eq)), value(a.substr(eq + 1));
    if (key == "home") ctx.home = value;
    else if (key == "ws") ctx.ws = value;
    else if (key == "outside") ctx.outside = value;
    else if (key == "tcp4") ctx.tcp4 = std::atoi(value.c_str());
    else if (key == "tcp6") ctx.tcp6 = std::atoi(value.c_str());
    else if (key == "udp") ctx.udp = std::atoi(value.c_str());
    else if (key == "origin") ctx.origin = std::atoi(value.c_str());
    else if (key == "hostpid") ctx.hostPid = std::atoi(value.c_str());
    else ctx.extra[key] = value;
  }
  for (const auto& c : allCases()) {
    if (c.name != argv[2]) continue;
    Verdict v = c.inside(ctx);
    const char* words[] = {"held", "escaped", "unproven"};
    std::printf("verdict: %s %s\n", words[v.result], v.detail.c_str());
    std::fflush(stdout);
    return 0;
  }
  std::fprintf(stderr, "redteam: no case named %s\n", argv[2]);
  return 2;
}

}  // namespace
}  // namespace stockade::redteam

int main(int argc, char** argv) {
  if (argc >= 3 && std::string_view(argv[1]) == "--case") return stockade::redteam::runInside(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
