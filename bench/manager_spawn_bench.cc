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

#include "stockade/stockade.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double median, p10, p90;
};

Stats measure(int runs, const std::function<void()>& once, std::chrono::milliseconds gap = {}) {
  std::vector<double> us;
  for (int i = 0; i < 10; ++i) once();  // warm-up
  for (int i = 0; i < runs; ++i) {
    std::this_thread::sleep_for(gap);
    auto t0 = Clock::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

void bare() {
  pid_t pid;
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) std::abort();
  int status;
  waitpid(pid, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  std::chrono::milliseconds gap(argc > 2 ? std::atoi(argv[2]) : 10);
  // A small working directory, as an agent's fresh workspace would be.
  std::string dir = "/var/tmp/stockade-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (::chdir(dir.c_str()) != 0) return 1;

  auto& manager = stockade::SandboxManager::instance();
  manager.setAuditSink([](const std::string&) {});
  auto handle = manager.createSandbox(stockade::SandboxPolicy::defaults());
  auto viaManager = [&] {
    auto out = handle.run({.argv = {"/bin/true"}, .correlationId = "bench", .cwd = dir}).collect();
    if (out.completion.exitCode != 0) std::abort();
  };

  Stats b = measure(runs, bare);
  Stats m = measure(runs, viaManager);
  Stats bg = measure(runs, bare, gap);
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
