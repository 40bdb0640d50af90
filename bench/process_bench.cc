// The process service against the library's run() and bare posix_spawn, in
// one run (issue 11's targets: warm start()+wait() <= 1.1x warm run(), <=
// 2.5x bare), plus the time from start() to the first log frame of echo, the
// supervisor's CPU per 100 MB of output, and its memory per idle process and
// per finished record.
//   build/bench/process_bench [RUNS] [GAP_MS]   (defaults 200, 10)
// The three spawn series are interleaved (one of each per round, GAP_MS
// apart, outside the measured interval) so that load on a shared machine
// falls on all of them alike.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "stockade/stockade.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;

using namespace stockade::bench;

// CPU time (seconds, nanosecond resolution: schedstat's first field) of this
// process's thread named `name`.
double threadCpuSeconds(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string n;
    std::getline(comm, n);
    if (n != name) continue;
    std::ifstream schedstat(task.path() / "schedstat");
    double ns = 0;
    schedstat >> ns;
    return ns / 1e9;
  }
  return -1;
}

long rssKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

template <typename T>
T must(stockade::ProcessResult<T> r) {
  if (auto* e = std::get_if<stockade::ProcessError>(&r)) {
    std::fprintf(stderr, "%s: %s\n", std::string(e->codeName()).c_str(), e->message.c_str());
    std::abort();
  }
  return std::get<T>(std::move(r));
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  const std::chrono::milliseconds gap(argc > 2 ? std::atoi(argv[2]) : 10);
  std::string dir = enterWorkDirectory("stockade-bench");

  auto& manager = stockade::SandboxManager::instance();
  manager.setAuditSink([](const std::string&) {});
  auto handle = manager.createSandbox(stockade::SandboxPolicy::defaults());
  auto service = handle.processes();
  stockade::ProcessStartOptions inDir;
  inDir.cwd = dir;
  auto viaRun = [&] {
    auto out = handle.run({.argv = {"/bin/true"}, .correlationId = "bench", .cwd = dir}).collect();
    if (out.completion.exitCode != 0) std::abort();
  };
  auto viaStart = [&] {
    auto h = must(service.start(stockade::ProcessCommand::exec({"/bin/true"}), inDir));
    if (!std::holds_alternative<stockade::Exited>(must(h.wait()))) std::abort();
    (void)h.remove();
  };

  std::vector<double> b, r, s;
  for (int i = 0; i < 10; ++i) viaRun(), viaStart();  // warm-up
  for (int i = 0; i < runs; ++i) {
    std::this_thread::sleep_for(gap);
    b.push_back(microseconds(bareTrue));
    std::this_thread::sleep_for(gap);
    r.push_back(microseconds(viaRun));
    std::this_thread::sleep_for(gap);
    s.push_back(microseconds(viaStart));
  }
  Stats sb = stats(b), sr = stats(r), ss = stats(s);
  std::printf("spawn latency of /bin/true, %d runs each, %lld ms apart (microseconds: median [p10, p90])\n", runs,
              static_cast<long long>(gap.count()));
  std::printf("  bare posix_spawn+waitpid        %8.1f [%.1f, %.1f]\n", sb.median, sb.p10, sb.p90);
  std::printf("  warm SandboxHandle::run()       %8.1f [%.1f, %.1f]\n", sr.median, sr.p10, sr.p90);
  std::printf("  warm start()+wait()             %8.1f [%.1f, %.1f]\n", ss.median, ss.p10, ss.p90);
  std::printf("  start+wait / run()              %8.2fx   (target <= 1.1x)\n", ss.median / sr.median);
  std::printf("  start+wait / bare               %8.2fx   (target <= 2.5x)\n", ss.median / sb.median);

  // start() to the first frame of echo, through a stream.
  std::vector<double> first;
  for (int i = 0; i < std::min(runs, 100); ++i) {
    std::this_thread::sleep_for(gap);
    auto t0 = Clock::now();
    auto h = must(service.start(stockade::ProcessCommand::exec({"/bin/echo", "hi"}), inDir));
    auto stream = must(h.streamLogs());
    auto event = stream.next();
    if (!event || !std::holds_alternative<stockade::LogEvent>(event->event)) std::abort();
    first.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    (void)h.wait();
    (void)h.remove();
  }
  Stats sf = stats(first);
  std::printf("start() to the first log frame of echo: %.1f us [%.1f, %.1f]\n", sf.median, sf.p10, sf.p90);

  // Supervisor CPU per 100 MB of output (read into a 1 MiB ring).
  const double cpu0 = threadCpuSeconds("stockade-loop");
  auto t0 = Clock::now();
  auto flood = must(service.start(stockade::ProcessCommand::exec({"/usr/bin/head", "-c", "100000000", "/dev/zero"}), inDir));
  (void)must(flood.wait());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = threadCpuSeconds("stockade-loop") - cpu0;
  std::printf("100 MB of output: supervisor thread CPU %.3f s (wall %.3f s, %.0f MB/s)\n", cpu, wall, 100 / wall);
  (void)flood.remove();

  // Memory per idle process and per finished record.
  constexpr int kIdle = 50;
  std::this_thread::sleep_for(200ms);
  const long rss0 = rssKiB();
  std::vector<stockade::ProcessHandle> idle;
  for (int i = 0; i < kIdle; ++i)
    idle.push_back(must(service.start(stockade::ProcessCommand::exec({"/bin/sleep", "1000"}), inDir)));
  std::this_thread::sleep_for(200ms);
  const long rssIdle = rssKiB();
  for (auto& h : idle) (void)h.kill({.signal = stockade::ProcessSignal::kKill});
  for (auto& h : idle) (void)h.wait();
  std::this_thread::sleep_for(200ms);
  const long rssDone = rssKiB();
  std::printf("supervisor memory (RSS of this process): %.1f KiB per idle process, %.1f KiB per finished record "
              "(%d processes)\n",
              static_cast<double>(rssIdle - rss0) / kIdle, static_cast<double>(rssDone - rss0) / kIdle, kIdle);
  handle.dispose();
  std::filesystem::remove_all(dir);
  return 0;
}
