// spawn_latency: wall-clock latency of running /bin/true to completion, four
// ways, interleaved round-robin in one run so machine drift hits all alike:
//   bare      posix_spawn("/bin/true") + waitpid
//   bwrap     bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true
//             ... and with --new-session, the terminal isolation stockade's
//             init always has (setsid(); the fix of CVE-2017-5226): a new
//             session is a new scheduler autogroup, which a loaded machine
//             schedules later than the caller's
//   stockade  build/stockade run -- /bin/true   (default policy; whole CLI)
//             ... and with --workspace (the current directory at /workspace)
//   spawn()   platform::spawn() + waitExit() in-process (default policy)
// and the last two again under every limit (memoryBytes, pids, cpuSeconds,
// fileSizeBytes: the sandbox cgroup, the fallocate filter variant).
// Prints the median (and p10/p90) of each and the ratios the issue asks for.
//
// usage: spawn_latency [RUNS]   (default 200; at least 50)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "platform/linux/spawn.h"
#include "stockade/rules.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double runExternal(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto start = Clock::now();
  pid_t pid;
  if (::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto end = Clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::chrono::duration<double, std::milli>(end - start).count();
}

double runLibrary(const stockade::DerivedRules& rules, const std::string& cwd, const std::string& workspace = "") {
  auto start = Clock::now();
  stockade::platform::SpawnRequest request{rules, {"/bin/true"}, cwd, {"PATH=/usr/bin:/bin", "TMPDIR=/tmp"}};
  request.onMissingLayer = stockade::platform::OnMissingLayer::kRunAndReport;
  request.workspace = workspace;
  auto spawned = stockade::platform::spawn(request);
  if (!std::holds_alternative<stockade::platform::Child>(spawned)) {
    std::fprintf(stderr, "spawn: %s\n", std::get<stockade::platform::SpawnError>(spawned).message().c_str());
    return -1;
  }
  auto status = stockade::platform::waitExit(std::get<stockade::platform::Child>(spawned));
  auto end = Clock::now();
  if (!std::holds_alternative<stockade::platform::ExitStatus>(status) ||
      std::get<stockade::platform::ExitStatus>(status).shellCode() != 0)
    return -1;
  return std::chrono::duration<double, std::milli>(end - start).count();
}

struct Series {
  const char* name;
  std::vector<double> ms;
  double pct(double p) {
    std::sort(ms.begin(), ms.end());
    return ms[static_cast<std::size_t>(p * static_cast<double>(ms.size() - 1) + 0.5)];
  }
};

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  if (runs < 50) runs = 50;
  char cwdBuf[4096];
  std::string cwd = ::getcwd(cwdBuf, sizeof cwdBuf) ? cwdBuf : "/";
  stockade::DeriveContext ctx = stockade::currentContext();
  ctx.cwd = cwd;
  ctx.tmpdir = "/tmp";
  // The default policy, and the same with every limit (policy/examples/locked-down-runner.json's).
  const char* kLimits = R"({"limits": {"memoryBytes": 536870912, "pids": 64, "cpuSeconds": 10, "fileSizeBytes": 16777216}})";
  auto derived = stockade::derive(stockade::SandboxPolicy::defaults(), ctx);
  auto limitedDerived = stockade::derive(stockade::SandboxPolicy::fromJson(kLimits), ctx);
  for (const auto* d : {&derived, &limitedDerived})
    if (!std::holds_alternative<stockade::DerivedRules>(*d)) {
      std::fprintf(stderr, "derive: %s\n", std::get<stockade::PolicyError>(*d).text().c_str());
      return 1;
    }
  const auto& rules = std::get<stockade::DerivedRules>(derived);
  const auto& limitedRules = std::get<stockade::DerivedRules>(limitedDerived);
  char policyPath[] = "/tmp/spawn-latency-limits-XXXXXX";
  int policyFd = ::mkstemp(policyPath);
  if (policyFd < 0) return 1;
  ::close(policyFd);
  std::ofstream(policyPath) << kLimits;
  const std::vector<std::string> bare = {"/bin/true"};
  const std::vector<std::string> bwrap = {"/usr/bin/bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
                                          "--proc", "/proc", "true"};
  std::vector<std::string> bwrapSession = bwrap;
  bwrapSession.insert(bwrapSession.begin() + 1, "--new-session");
  const std::vector<std::string> cli = {STOCKADE_CLI_PATH, "run", "--", "/bin/true"};
  const std::vector<std::string> limitedCli = {STOCKADE_CLI_PATH, "run", "--policy", policyPath, "--", "/bin/true"};
  // The current directory shown at /workspace (the root rebuilt around it).
  const std::vector<std::string> workspaceCli = {STOCKADE_CLI_PATH, "run", "--workspace", cwd, "--", "/bin/true"};
  Series series[9] = {{"bare /bin/true", {}},     {"bwrap --unshare-all", {}},
                      {"stockade run (CLI)", {}}, {"platform::spawn()", {}},
                      {"  ... CLI, all limits", {}}, {"  ... spawn(), all limits", {}},
                      {"  ... CLI, --workspace", {}}, {"  ... spawn(), workspace", {}},
                      {"  ... bwrap --new-session", {}}};
  bool haveBwrap = ::access(bwrap[0].c_str(), X_OK) == 0;
  for (int warm = 0; warm < 5; ++warm) {
    runExternal(bare);
    if (haveBwrap) runExternal(bwrap);
    if (haveBwrap) runExternal(bwrapSession);
    runExternal(cli);
    runLibrary(rules, cwd);
    runExternal(limitedCli);
    runLibrary(limitedRules, cwd);
    runExternal(workspaceCli);
    runLibrary(rules, "/workspace", cwd);
  }
  for (int i = 0; i < runs; ++i) {
    double t;
    if ((t = runExternal(bare)) >= 0) series[0].ms.push_back(t);
    if (haveBwrap && (t = runExternal(bwrap)) >= 0) series[1].ms.push_back(t);
    if ((t = runExternal(cli)) >= 0) series[2].ms.push_back(t);
    if ((t = runLibrary(rules, cwd)) >= 0) series[3].ms.push_back(t);
    if ((t = runExternal(limitedCli)) >= 0) series[4].ms.push_back(t);
    if ((t = runLibrary(limitedRules, cwd)) >= 0) series[5].ms.push_back(t);
    if ((t = runExternal(workspaceCli)) >= 0) series[6].ms.push_back(t);
    if ((t = runLibrary(rules, "/workspace", cwd)) >= 0) series[7].ms.push_back(t);
    if (haveBwrap && (t = runExternal(bwrapSession)) >= 0) series[8].ms.push_back(t);
  }
  ::unlink(policyPath);
  std::printf("spawn latency of /bin/true, %d interleaved runs each (ms)\n", runs);
  std::printf("%-22s %8s %8s %8s %6s\n", "", "median", "p10", "p90", "ok");
  for (auto& s : series) {
    if (s.ms.empty()) {
      std::printf("%-22s %8s\n", s.name, "n/a");
      continue;
    }
    std::printf("%-22s %8.3f %8.3f %8.3f %6zu\n", s.name, s.pct(0.5), s.pct(0.1), s.pct(0.9), s.ms.size());
  }
  if (series[0].ms.empty() || series[2].ms.empty()) return 1;
  double bareMed = series[0].pct(0.5), cliMed = series[2].pct(0.5), libMed = series[3].pct(0.5);
  std::printf("\nstockade run / bare    = %.2fx   (target <= 4x)\n", cliMed / bareMed);
  std::printf("platform::spawn / bare = %.2fx\n", libMed / bareMed);
  if (!series[4].ms.empty() && !series[5].ms.empty()) {
    std::printf("CLI, all limits / CLI   = %.2fx   (%+.3f ms)\n", series[4].pct(0.5) / cliMed, series[4].pct(0.5) - cliMed);
    std::printf("spawn(), all limits / spawn() = %.2fx   (%+.3f ms)\n", series[5].pct(0.5) / libMed,
                series[5].pct(0.5) - libMed);
  }
  if (!series[6].ms.empty() && !series[7].ms.empty()) {
    std::printf("CLI, --workspace / CLI  = %.2fx   (%+.3f ms)\n", series[6].pct(0.5) / cliMed,
                series[6].pct(0.5) - cliMed);
    std::printf("spawn(), workspace / spawn() = %.2fx   (%+.3f ms)\n", series[7].pct(0.5) / libMed,
                series[7].pct(0.5) - libMed);
  }
  if (!series[1].ms.empty()) {
    double bwrapMed = series[1].pct(0.5);
    std::printf("stockade run / bwrap   = %.2fx   (target < 1x)\n", cliMed / bwrapMed);
    std::printf("platform::spawn / bwrap= %.2fx\n", libMed / bwrapMed);
  }
  if (!series[8].ms.empty())
    std::printf("stockade run / bwrap --new-session = %.2fx   (like for like: both start a session)\n",
                cliMed / series[8].pct(0.5));
  return 0;
}
