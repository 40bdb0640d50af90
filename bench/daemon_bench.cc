// stockaded over its unix socket, beside the library in the same run (not a
// test; issue 12's targets):
//   - exec round trip of /bin/true in a warm sandbox (POST .../processes/run)
//     vs the library's warm SandboxHandle::run()    target <= 2.5 ms and <= 1.5x
//   - create a sandbox + its first exec             target <= 10 ms
//   - the daemon's memory with 100 idle sandboxes   target <= 200 KiB each,
//     beyond the spares' own processes (reported apart)
// Usage: build/bench/daemon_bench [RUNS] [GAP_MS]   (defaults 200, 10)
// The daemon is build/stockaded, started here on a temporary socket.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "src/cli/http_client.h"
#include "stockade/stockade.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Stats {
  double median, p10, p90;
};

Stats measure(int runs, const std::function<void()>& once, std::chrono::milliseconds gap,
              const std::function<void()>& after = {}) {
  std::vector<double> us;
  for (int i = 0; i < 10; ++i) {
    once();
    if (after) after();
  }
  for (int i = 0; i < runs; ++i) {
    std::this_thread::sleep_for(gap);
    auto t0 = Clock::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (after) after();
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

std::size_t statusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line, name = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return std::stoul(line.substr(name.size()));
  return 0;
}

// Proportional set size: shared pages divided among their sharers.
std::size_t pssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pss:", 0) == 0) return std::stoul(line.substr(4));
  return 0;
}

std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t c; in >> c;) out.push_back(c);
  }
  return out;
}

std::string load() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// The bundled default policy: every sandbox and the library use it.
std::string policyBody() { return json{{"policy", json::parse(stockade::SandboxPolicy::defaults().toJson())}}.dump(); }

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  std::chrono::milliseconds gap(argc > 2 ? std::atoi(argv[2]) : 10);
  std::string dir = "/var/tmp/stockade-daemon-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (::chdir(dir.c_str()) != 0) return 1;
  std::printf("load average before: %s\n", load().c_str());

  // The daemon.
  std::string sock = dir + "/d.sock", token = "daemon-bench-token-0123456789", tokenFile = dir + "/token";
  { std::ofstream(tokenFile) << token << "\n"; }
  ::chmod(tokenFile.c_str(), 0600);
  std::vector<std::string> args = {STOCKADED_PATH, "--listen", "unix:" + sock, "--state-dir", dir + "/state",
                                   "--token-file", tokenFile, "--max-sandboxes", "1000"};
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  // Forked, not posix_spawn'd: it dies with the bench (PR_SET_PDEATHSIG),
  // even when the bench aborts or is interrupted.
  std::string log = dir + "/daemon.log";
  const pid_t bench = ::getpid();
  pid_t daemon = ::fork();
  if (daemon < 0) return 1;
  if (daemon == 0) {
    int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC), err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != bench || out < 0 || err < 0 ||
        ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
      ::_exit(127);
    ::execve(cargs[0], cargs.data(), environ);
    ::_exit(127);
  }
  stockade::cli::Endpoint ep{sock, "", 0, "unix:" + sock};
  stockade::cli::HttpClient http(ep, token);
  for (int i = 0; i < 500; ++i) {
    try {
      if (http.request("GET", "/v1/health").status == 200) break;
    } catch (const stockade::cli::ClientError&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto create = [&] {
    auto r = http.request("POST", "/v1/sandboxes", policyBody());
    if (r.status != 200) {
      std::fprintf(stderr, "create: %s\n", r.body.c_str());
      std::abort();
    }
    return json::parse(r.body)["id"].get<std::string>();
  };
  std::string lastProcess;
  auto exec = [&](const std::string& sandbox) {
    auto r = http.request("POST", "/v1/sandboxes/" + sandbox + "/processes/run", R"({"argv":["/bin/true"]})");
    json j = json::parse(r.body);
    if (r.status != 200 || j["exitCode"] != 0) {
      std::fprintf(stderr, "run: %s\n", r.body.c_str());
      std::abort();
    }
    lastProcess = j["processId"];
  };
  auto forget = [&](const std::string& sandbox) {
    http.request("DELETE", "/v1/sandboxes/" + sandbox + "/processes/" + lastProcess);
  };

  // 1. exec round trip in a warm sandbox, and the library's warm run().
  std::string warm = create();
  Stats d = measure(runs, [&] { exec(warm); }, gap, [&] { forget(warm); });
  auto& manager = stockade::SandboxManager::instance();
  manager.setAuditSink([](const std::string&) {});
  // With a workspace, as every sandbox of the daemon has (shown at /workspace, the rebuilt root).
  const std::string libraryWorkspace = dir + "/library-workspace";
  std::filesystem::create_directories(libraryWorkspace);
  auto handle = manager.createSandbox(stockade::SandboxPolicy::defaults(), {.workspace = libraryWorkspace});
  Stats lib = measure(runs, [&] {
    auto out = handle.run({.argv = {"/bin/true"}, .correlationId = "bench", .cwd = "/workspace"}).collect();
    if (out.completion.exitCode != 0) std::abort();
  }, gap);
  handle.dispose();

  // 2. create + first exec.
  std::vector<std::string> made;
  int creates = std::min(runs, 50);
  Stats cf = measure(creates, [&] {
    made.push_back(create());
    exec(made.back());
  }, gap, [&] { http.request("DELETE", "/v1/sandboxes/" + made.back()); });

  // 3. memory: 100 idle sandboxes, each with one ended child and its spare.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::size_t rssBefore = statusKiB(daemon, "VmRSS");
  std::vector<std::string> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(create());
    exec(idle.back());
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // spares built, caches settled
  std::size_t rssAfter = statusKiB(daemon, "VmRSS");
  std::size_t spareKiB = 0;
  auto spares = childrenOf(daemon);
  for (pid_t c : spares) spareKiB += pssKiB(c);

  std::printf("stockaded over a unix socket vs the library, %d runs each, %lld ms between calls\n", runs,
              static_cast<long long>(gap.count()));
  std::printf("(microseconds: median [p10, p90])\n");
  std::printf("  exec /bin/true, warm sandbox (POST .../processes/run)  %8.1f [%.1f, %.1f]\n", d.median, d.p10, d.p90);
  std::printf("  library warm SandboxHandle::run(), with a workspace    %8.1f [%.1f, %.1f]\n", lib.median, lib.p10,
              lib.p90);
  std::printf("  ratio daemon/library                                   %8.2fx  (target <= 1.5x and <= 2500 us)\n",
              d.median / lib.median);
  std::printf("  create sandbox + first exec (%d runs)                  %8.1f [%.1f, %.1f]  (target <= 10000 us)\n",
              creates, cf.median, cf.p10, cf.p90);
  std::printf("daemon RSS: %zu KiB before, %zu KiB with 100 idle sandboxes: %.1f KiB each (target <= 200)\n",
              rssBefore, rssAfter, (static_cast<double>(rssAfter) - static_cast<double>(rssBefore)) / 100.0);
  std::printf("spares: %zu processes, %zu KiB PSS together (%.1f KiB each)\n",
              spares.size(), spareKiB, spares.empty() ? 0.0 : static_cast<double>(spareKiB) / spares.size());
  std::printf("load average after: %s\n", load().c_str());

  ::kill(daemon, SIGTERM);
  ::waitpid(daemon, nullptr, 0);
  std::filesystem::remove_all(dir);
  return 0;
}
