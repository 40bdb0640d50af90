// stockaded over its unix socket, beside the library in the same run (not a
// test; issue 12's targets):
//   - exec round trip of /bin/true in a warm sandbox (POST .../processes/run)
//     vs the library's warm SandboxHandle::run()    target <= 2.5 ms and <= 1.5x
//   - create a sandbox + its first exec             target <= 10 ms
//   - the daemon's memory with 100 idle sandboxes   target <= 200 KiB each,
//     beyond the spares' own processes (reported apart)
// Usage: build/bench/daemon_bench [RUNS] [GAP_MS]   (defaults 200, 10)
//
//   daemon_bench --scale 1,10,100,500 [--runs N] [--json FILE]
// Scale (issue 15): with L sandboxes alive in one daemon, for each L, N
// interleaved rounds of: bare posix_spawn of /bin/true (the baseline), an
// exec of /bin/true in one of the L warm sandboxes (round robin), and the
// create + first exec (+ close, not timed) of one more sandbox; then the
// daemon's RSS and its children's PSS (each sandbox's init and spare).
//
//   daemon_bench --abuse [--runs N] [--json FILE]
// Abuse (issue 15): one daemon, a victim sandbox under the default policy and,
// per attack, an attacker sandbox under the one limit that attack meets (pids
// 64, memoryBytes 256 MiB, cpuSeconds 2 or fileSizeBytes 64 MiB; the output
// flood none: its execution timeout ends it), so that its record names that
// limit and no other one stops it first. For each attack (fork bomb,
// anonymous-memory, tmpfs and memfd balloons, a CPU hog with 8 children, a
// disk filler, an output flood): N execs of /bin/true in the victim with no
// attack, then N while the attack runs in the attacker (restarted, untimed,
// whenever it has ended, so that every sample is taken under attack); the
// ratio of the medians, the load, the daemon's RSS and the attack's first
// exit record (reason, exit code or signal, killedByLimit, limitReached). A
// process the daemon refuses to start (no usable cgroup for this user) is
// reported as such.
//
// The daemon is build/stockaded, started here on a temporary socket
// (bench/bench_support.h).
#include <spawn.h>
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
json defaultPolicy() { return json::parse(stockade::SandboxPolicy::defaults().toJson()); }

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double bareTrueMs() {
  auto t0 = Clock::now();
  bareTrue();
  return msSince(t0);
}

json summary(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)]; };
  return {{"median", at(0.5)}, {"p10", at(0.1)}, {"p90", at(0.9)}, {"p99", at(0.99)}, {"n", v.size()}};
}

void writeJson(const std::string& path, const json& j) {
  if (path.empty()) return;
  std::ofstream(path) << j.dump(1) << "\n";
}

std::size_t fdCount(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// The daemon's own RSS and its children's PSS (sandbox inits, spares), KiB.
std::pair<std::size_t, std::size_t> daemonMemoryKiB(pid_t daemon) {
  std::size_t children = 0;
  for (pid_t c : childrenOf(daemon)) children += pssKiB(c);
  return {statusKiB(daemon, "VmRSS"), children};
}

// Issue 12's figures: exec beside the library, create + first exec, memory
// per idle sandbox.
int classic(int runs, std::chrono::milliseconds gap) {
  std::string dir = "/var/tmp/stockade-daemon-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (::chdir(dir.c_str()) != 0) return 1;
  std::printf("load average before: %s\n", load().c_str());
  stockade::bench::LocalDaemon daemon(dir + "/daemon");
  std::string lastProcess;
  auto exec = [&](const std::string& sandbox) { lastProcess = daemon.runTrue(sandbox); };
  auto forget = [&](const std::string& sandbox) { daemon.forget(sandbox, lastProcess); };

  // 1. exec round trip in a warm sandbox, and the library's warm run().
  std::string warm = daemon.create(defaultPolicy());
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
    made.push_back(daemon.create(defaultPolicy()));
    exec(made.back());
  }, gap, [&] { daemon.close(made.back()); });

  // 3. memory: 100 idle sandboxes, each with one ended child and its spare.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::size_t rssBefore = statusKiB(daemon.pid(), "VmRSS");
  std::vector<std::string> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(daemon.create(defaultPolicy()));
    exec(idle.back());
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // spares built, caches settled
  std::size_t rssAfter = statusKiB(daemon.pid(), "VmRSS");
  std::size_t spareKiB = 0;
  auto spares = childrenOf(daemon.pid());
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
  std::filesystem::remove_all(dir);
  return 0;
}

int scale(const std::vector<int>& levels, int runs, const std::string& jsonPath) {
  std::string dir = "/var/tmp/stockade-daemon-scale-" + std::to_string(::getpid());
  std::printf("load average before: %s\n", load().c_str());
  json out = {{"load_before", load()}, {"runs", runs}, {"levels", json::array()}};
  {
    stockade::bench::LocalDaemon daemon(dir);
    std::vector<std::string> alive;
    for (int level : levels) try {
      while (static_cast<int>(alive.size()) < level) {
        alive.push_back(daemon.create(defaultPolicy()));
        daemon.forget(alive.back(), daemon.runTrue(alive.back()));
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));  // spares built
      std::vector<double> bare, exec, create;
      for (int round = -2; round < runs; ++round) {  // two rounds of warm-up
        std::vector<std::function<void()>> steps = {
            [&] { bare.push_back(bareTrueMs()); },
            [&] {
              const std::string& sandbox = alive[static_cast<std::size_t>(round + 2) % alive.size()];
              auto t0 = Clock::now();
              std::string process = daemon.runTrue(sandbox);
              exec.push_back(msSince(t0));
              daemon.forget(sandbox, process);
            },
            [&] {
              auto t0 = Clock::now();
              std::string sandbox = daemon.create(defaultPolicy());
              std::string process = daemon.runTrue(sandbox);
              create.push_back(msSince(t0));
              daemon.close(sandbox);
            },
        };
        for (std::size_t k = 0; k < steps.size(); ++k) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the spare gets built (not measured)
          steps[(static_cast<std::size_t>(round + 2) + k) % steps.size()]();
        }
        if (round < 0) bare.clear(), exec.clear(), create.clear();
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto [rss, children] = daemonMemoryKiB(daemon.pid());
      json row = {{"sandboxes", level},        {"bare_ms", summary(bare)},     {"exec_ms", summary(exec)},
                  {"create_first_exec_ms", summary(create)},                   {"daemon_rss_kib", rss},
                  {"children_pss_kib", children}, {"children", childrenOf(daemon.pid()).size()},
                  {"daemon_fds", fdCount(daemon.pid())}, {"load", load()}};
      std::printf("%4d sandboxes alive: exec %.2f ms, create+first exec %.2f ms, bare %.2f ms (medians of %d); "
                  "daemon RSS %zu KiB, %zu fds, its %zu children %zu KiB PSS; load %s\n",
                  level, row["exec_ms"]["median"].get<double>(), row["create_first_exec_ms"]["median"].get<double>(),
                  row["bare_ms"]["median"].get<double>(), runs, rss, row["daemon_fds"].get<std::size_t>(),
                  row["children"].get<std::size_t>(), children, load().c_str());
      std::fflush(stdout);
      out["levels"].push_back(row);
    } catch (const std::runtime_error& e) {
      // Reported, not hidden: the levels reached so far stand.
      out["failed_at"] = {{"sandboxes", level}, {"alive", alive.size()}, {"daemon_fds", fdCount(daemon.pid())},
                          {"error", e.what()}};
      std::printf("%4d sandboxes: failed with %zu alive and %zu daemon fds: %s\n", level, alive.size(),
                  fdCount(daemon.pid()), e.what());
      break;
    }
  }
  out["load_after"] = load();
  writeJson(jsonPath, out);
  return 0;
}

struct Attack {
  const char* name;
  const char* what;
  std::vector<std::string> argv;
  json limits;            // the attacker sandbox's, every limit spelled out
  int timeoutMs = 20000;  // its executionTimeout
};

json limits(std::uint64_t memoryBytes, std::uint64_t pids, std::uint64_t cpuSeconds, std::uint64_t fileSizeBytes) {
  return {{"memoryBytes", memoryBytes}, {"pids", pids}, {"cpuSeconds", cpuSeconds}, {"fileSizeBytes", fileSizeBytes}};
}

// Every attack is bounded (an execution timeout, a count) so that one the
// limits do not stop still ends; the exit record says which it was.
std::vector<Attack> attacks() {
  const json pids = limits(0, 64, 0, 0), memory = limits(256 << 20, 0, 0, 0), cpu = limits(0, 0, 2, 0),
             fileSize = limits(0, 0, 0, 64 << 20), none = limits(0, 0, 0, 0);
  return {
      {"fork bomb", "a shell function forking itself twice, forever", {"/bin/sh", "-c", "b() { b & b & wait; }; b"}, pids,
       5000},
      {"memory balloon", "tail buffering /dev/zero (one endless line) in anonymous memory", {"/usr/bin/tail", "/dev/zero"},
       memory},
      {"tmpfs balloon", "2 GiB of zeros into the private /tmp",
       {"/usr/bin/dd", "if=/dev/zero", "of=/tmp/balloon", "bs=1M", "count=2048"}, memory},
      {"memfd balloon", "memfd pages, 1 MiB at a time, up to 2 GiB",
       {"/usr/bin/python3", "-c",
        "import os\nfd = os.memfd_create('balloon')\nblock = b'x' * (1 << 20)\nfor _ in range(2048): os.write(fd, block)"},
       memory},
      {"cpu hog, 8 children", "8 busy loops in children of one shell",
       {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait"}, cpu},
      {"disk filler", "1 GiB into one workspace file",
       {"/usr/bin/dd", "if=/dev/zero", "of=/workspace/filler", "bs=1M", "count=1024"}, fileSize},
      {"output flood", "yes(1) on stdout until its 3 s timeout", {"/usr/bin/yes"}, none, 3000},
  };
}

int abuse(int runs, const std::string& jsonPath) {
  std::string dir = "/var/tmp/stockade-daemon-abuse-" + std::to_string(::getpid());
  std::printf("load average before: %s\n", load().c_str());
  json out = {{"load_before", load()}, {"runs", runs}, {"attacks", json::array()}};
  {
    stockade::bench::LocalDaemon daemon(dir);
    const std::string victim = daemon.create(defaultPolicy());
    auto victimExec = [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the spare gets built (not measured)
      auto t0 = Clock::now();
      std::string process = daemon.runTrue(victim);
      double ms = msSince(t0);
      daemon.forget(victim, process);
      return ms;
    };
    for (int i = 0; i < 5; ++i) victimExec();
    for (const Attack& a : attacks()) try {
      json limited = defaultPolicy();
      limited["limits"] = a.limits;
      const std::string attacker = daemon.create(limited);
      std::vector<double> quiet, attacked;
      for (int i = 0; i < runs; ++i) quiet.push_back(victimExec());
      const std::string quietLoad = load();
      auto [rssQuiet, childrenQuiet] = daemonMemoryKiB(daemon.pid());
      json start = {{"argv", a.argv}, {"executionTimeout", a.timeoutMs}, {"keepLogs", "until_cleanup"}};
      std::string process;
      json firstEnd;
      int started = 0;
      std::size_t rssPeak = 0;
      auto launch = [&] {
        process = daemon.expect(200, "POST", "/v1/sandboxes/" + attacker + "/processes", start.dump())["id"];
        ++started;
      };
      auto ended = [&] {
        auto p = daemon.expect(200, "GET", "/v1/sandboxes/" + attacker + "/processes/" + process);
        if (p["state"] != "terminal") return false;
        if (firstEnd.is_null()) firstEnd = p;
        daemon.forget(attacker, process);
        return true;
      };
      launch();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // under way
      for (int i = 0; i < runs; ++i) {
        if (ended()) launch();
        attacked.push_back(victimExec());
        rssPeak = std::max(rssPeak, statusKiB(daemon.pid(), "VmRSS"));
      }
      const std::string attackLoad = load();
      // The last run ends by itself (its limit, or its execution timeout):
      // the first run's end is the record reported.
      daemon.expect(200, "POST", "/v1/sandboxes/" + attacker + "/processes/" + process + "/wait",
                    json{{"timeout", a.timeoutMs + 30000}}.dump());
      ended();
      daemon.close(attacker);
      json record = {{"reason", firstEnd.value("reason", json())},
                     {"exitCode", firstEnd.value("exitCode", json())},
                     {"signal", firstEnd.value("signal", json())},
                     {"killedByLimit", firstEnd["metrics"].value("killedByLimit", json())},
                     {"limitReached", firstEnd["metrics"].value("limitReached", json())},
                     {"stdoutBytes", firstEnd["metrics"].value("stdoutBytes", json())}};
      json row = {{"attack", a.name},         {"what", a.what},       {"limits", a.limits},
                  {"quiet_ms", summary(quiet)}, {"attacked_ms", summary(attacked)},
                  {"ratio", summary(attacked)["median"].get<double>() / summary(quiet)["median"].get<double>()},
                  {"load_quiet", quietLoad},  {"load_attacked", attackLoad},
                  {"daemon_rss_kib_quiet", rssQuiet}, {"daemon_rss_kib_peak", rssPeak},
                  {"attack_runs", started},   {"first_exit_record", record}};
      std::printf("%-22s victim exec %.2f ms quiet (load %s), %.2f ms attacked (load %s): %.2fx; daemon RSS %zu -> "
                  "%zu KiB; %d attack runs, the first ended: %s\n",
                  a.name, row["quiet_ms"]["median"].get<double>(), quietLoad.c_str(),
                  row["attacked_ms"]["median"].get<double>(), attackLoad.c_str(), row["ratio"].get<double>(), rssQuiet,
                  rssPeak, started, record.dump().c_str());
      std::fflush(stdout);
      out["attacks"].push_back(row);
    } catch (const std::runtime_error& e) {
      // A refusal (no usable cgroup for this user: the daemon refuses to run
      // a process under a limit it cannot enforce) is a result, not a crash.
      std::printf("%-22s not run: %s\n", a.name, e.what());
      out["attacks"].push_back({{"attack", a.name}, {"what", a.what}, {"limits", a.limits}, {"error", e.what()}});
    }
  }
  out["load_after"] = load();
  writeJson(jsonPath, out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string mode, jsonPath;
  std::vector<int> levels;
  int runs = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool hasValue = i + 1 < args.size();
    if (args[i] == "--abuse") {
      mode = "abuse";
    } else if (args[i] == "--scale" && hasValue) {
      mode = "scale";
      std::stringstream list(args[++i]);
      for (std::string level; std::getline(list, level, ',');) levels.push_back(std::atoi(level.c_str()));
    } else if (args[i] == "--runs" && hasValue) {
      runs = std::atoi(args[++i].c_str());
    } else if (args[i] == "--json" && hasValue) {
      jsonPath = args[++i];
    } else if (mode.empty() && i < 2 && std::isdigit(static_cast<unsigned char>(args[i][0]))) {
      continue;  // the classic mode's RUNS [GAP_MS]
    } else {
      std::fprintf(stderr,
                   "daemon_bench: unknown argument \"%s\"; usage: daemon_bench [RUNS] [GAP_MS] | --scale L1,L2,... "
                   "[--runs N] [--json FILE] | --abuse [--runs N] [--json FILE]\n",
                   args[i].c_str());
      return 2;
    }
  }
  if (mode == "scale") return scale(levels, runs > 0 ? runs : 20, jsonPath);
  if (mode == "abuse") return abuse(runs > 0 ? runs : 50, jsonPath);
  return classic(argc > 1 ? std::atoi(argv[1]) : 200, std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 10));
}
