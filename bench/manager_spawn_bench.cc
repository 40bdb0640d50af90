// Warm-manager spawn latency: run() of /bin/true through a live SandboxManager
// (drift check, derive, spawn with every enforcement layer, wait), against a
// bare posix_spawn()+waitpid() of /bin/true measured in the same run.
// Target (issue 5): median under 2 ms and within 4x of bare.
//   build/bench/manager_spawn_bench [RUNS] [GAP_MS]   (defaults 200, 10)
//
// Two cadences: back to back (each run() starts the moment the previous one
// is collected, so the spare built after it is rarely complete and run()
// waits for the rest of its build), and with GAP_MS between calls, as an
// agent issuing commands does (the spare is ready; run() sends the program).
// The gap is outside the measured interval; both series are printed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "stockade/stockade.h"

extern char** environ;

namespace {

using namespace stockade::bench;

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  std::chrono::milliseconds gap(argc > 2 ? std::atoi(argv[2]) : 10);
  std::string dir = enterWorkDirectory("stockade-bench");

  auto& manager = stockade::SandboxManager::instance();
  manager.setAuditSink([](const std::string&) {});
  auto handle = manager.createSandbox(stockade::SandboxPolicy::defaults());
  auto viaManager = [&] {
    auto out = handle.run({.argv = {"/bin/true"}, .correlationId = "bench", .cwd = dir}).collect();
    if (out.completion.exitCode != 0) std::abort();
  };

  Stats b = measure(runs, bareTrue);
  Stats m = measure(runs, viaManager);
  Stats bg = measure(runs, bareTrue, gap);
  Stats mg = measure(runs, viaManager, gap);
  std::printf("spawn latency of /bin/true, %d runs each (microseconds: median [p10, p90])\n", runs);
  std::printf("back to back:\n");
  std::printf("  bare posix_spawn+waitpid      %8.1f [%.1f, %.1f]\n", b.median, b.p10, b.p90);
  std::printf("  warm SandboxHandle::run()     %8.1f [%.1f, %.1f]\n", m.median, m.p10, m.p90);
  std::printf("  ratio run()/bare              %8.2fx\n", m.median / b.median);
  std::printf("%lld ms between calls:\n", static_cast<long long>(gap.count()));
  std::printf("  bare posix_spawn+waitpid      %8.1f [%.1f, %.1f]\n", bg.median, bg.p10, bg.p90);
  std::printf("  warm SandboxHandle::run()     %8.1f [%.1f, %.1f]\n", mg.median, mg.p10, mg.p90);
  std::printf("  ratio run()/bare              %8.2fx   (target: < 4x, and run() < 2000 us)\n", mg.median / bg.median);
  handle.dispose();
  std::filesystem::remove_all(dir);
  return 0;
}
