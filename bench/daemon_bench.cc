// stockaded over its unix socket, beside the library in the same run (not a
// test; issue 12's targets):
//   - exec round trip of /bin/true in a warm sandbox (POST .../processes/run)
//     vs the library's warm SandboxHandle::run()    target <= 2.5 ms and <= 1.5x
//   - create a sandbox + its first exec             target <= 10 ms
//   - the daemon's memory with 100 idle sandboxes   target <= 200 KiB each,
//     beyond the spares' own processes (reported apart)
// Usage: build/bench/daemon_bench [RUNS] [GAP_MS]   (defaults 200, 10)
// The daemon is build/stockaded, started here on a temporary socket.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "stockade/stockade.h"

namespace {

using namespace stockade::bench;
using nlohmann::json;

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

// The bundled default policy: every sandbox and the library use it.
std::string defaultPolicy() { return stockade::SandboxPolicy::defaults().toJson(); }

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  std::chrono::milliseconds gap(argc > 2 ? std::atoi(argv[2]) : 10);
  std::string dir = enterWorkDirectory("stockade-daemon-bench");
  std::printf("load average before: %s\n", load().c_str());
  auto daemon = std::make_unique<Daemon>(STOCKADED_PATH, dir, std::vector<std::string>{"--max-sandboxes", "1000"});
  stockade::cli::HttpClient& http = daemon->http();
  auto create = [&] { return json::parse(daemon->createSandbox(defaultPolicy()))["id"].get<std::string>(); };
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
  std::size_t rssBefore = statusKiB(daemon->pid(), "VmRSS");
  std::vector<std::string> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(create());
    exec(idle.back());
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // spares built, caches settled
  std::size_t rssAfter = statusKiB(daemon->pid(), "VmRSS");
  std::size_t spareKiB = 0;
  auto spares = childrenOf(daemon->pid());
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

  daemon.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
