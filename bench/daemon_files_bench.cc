// daemon_files_bench: a large file's upload and download through stockaded
// (PUT and GET /v1/sandboxes/{id}/files over its unix socket, the client the
// CLI's `stockade cp` uses) against cp of the same bytes on the same disk, in
// one run (not a test; issue 13's target: >= 70% of cp's throughput). Runs
// are interleaved, each starting at another column, so the dirty pages one
// write leaves behind hit every column alike. Prints the load average beside
// the medians and the ratios, and the daemon's peak RSS growth.
//
// usage: build/bench/daemon_files_bench [RUNS] [FILE_MIB]   (defaults 5 and 1024; under /var/tmp)
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "src/cli/http_client.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds(const std::function<void()>& f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "daemon_files_bench: %s failed\n", what.c_str());
    std::exit(1);
  }
}

void sh(const std::string& command) { check(std::system(command.c_str()) == 0, command); }

std::string load() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::size_t statusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line, name = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return std::stoul(line.substr(name.size()));
  return 0;
}

// A policy with every field spelled out: the workspace writable, nothing else.
const char* kPolicy = R"({
  "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."], "denyWrite": []},
  "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [], "allowLocalBinding": false},
  "env": {"allow": ["PATH"]},
  "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}})";

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  long fileMiB = argc > 2 ? std::atol(argv[2]) : 1024;
  std::string dir = "/var/tmp/stockade-files-bench-" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::printf("daemon_files_bench: %d runs of %ld MiB; load average before: %s\n", runs, fileMiB, load().c_str());

  std::string sock = dir + "/d.sock", token = "files-bench-token-0123456789", tokenFile = dir + "/token";
  { std::ofstream(tokenFile) << token << "\n"; }
  ::chmod(tokenFile.c_str(), 0600);
  { std::ofstream(dir + "/baseline.json") << kPolicy; }
  std::vector<std::string> args = {STOCKADED_PATH, "--listen", "unix:" + sock, "--state-dir", dir + "/state",
                                   "--token-file", tokenFile, "--policy", dir + "/baseline.json"};
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const pid_t bench = ::getpid();
  pid_t daemon = ::fork();
  check(daemon >= 0, "fork");
  if (daemon == 0) {
    int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != bench || out < 0 || ::dup2(out, 1) < 0 ||
        ::dup2(out, 2) < 0)
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
  auto created = http.request("POST", "/v1/sandboxes", std::string(R"({"policy":)") + kPolicy + "}");
  check(created.status == 200, "create: " + created.body);
  const std::string id = json::parse(created.body)["id"];
  const std::string workspace = json::parse(created.body)["workspace"];
  const std::string files = "/v1/sandboxes/" + id + "/files?path=/workspace/big.bin";

  // The source: random bytes, on the same disk as the workspace.
  const std::string big = dir + "/big.bin";
  {
    std::mt19937_64 rng(42);
    int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string chunk(1 << 20, '\0');
    for (std::size_t i = 0; i + 8 <= chunk.size(); i += 8) {
      std::uint64_t v = rng();
      std::memcpy(&chunk[i], &v, 8);
    }
    for (long i = 0; i < fileMiB; ++i) check(::write(fd, chunk.data(), chunk.size()) == (1 << 20), "write big");
    ::close(fd);
  }
  const std::uint64_t size = static_cast<std::uint64_t>(fileMiB) << 20;
  const std::size_t rssBefore = statusKiB(daemon, "VmRSS");

  auto upload = [&] {
    int fd = ::open(big.c_str(), O_RDONLY | O_CLOEXEC);
    auto r = http.upload("PUT", files, "application/octet-stream", size, [&](char* buf, std::size_t n) {
      ssize_t got = ::read(fd, buf, n);
      return got > 0 ? static_cast<std::size_t>(got) : 0;
    });
    ::close(fd);
    check(r.status == 204, "upload: " + r.body);
  };
  auto download = [&] {
    int fd = ::open((dir + "/down.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::uint64_t got = 0;
    auto r = http.stream("GET", files, {}, [&](std::string_view piece) {
      got += piece.size();
      return ::write(fd, piece.data(), piece.size()) == static_cast<ssize_t>(piece.size());
    });
    ::close(fd);
    check(r.status == 200 && got == size, "download");
  };
  std::vector<double> oursUp, cpUp, oursDown, cpDown;
  for (int i = 0; i < runs; ++i) {
    auto rotated = [&](std::vector<std::pair<std::vector<double>*, std::function<void()>>> steps) {
      for (std::size_t k = 0; k < steps.size(); ++k) {
        auto& [out, step] = steps[(k + static_cast<std::size_t>(i)) % steps.size()];
        out->push_back(seconds(step));
      }
    };
    rotated({{&oursUp, upload}, {&cpUp, [&] { sh("cp " + big + " " + workspace + "/cp.bin"); }}});
    rotated({{&oursDown, download}, {&cpDown, [&] { sh("cp " + workspace + "/cp.bin " + dir + "/cpdown.bin"); }}});
  }
  const std::size_t hwm = statusKiB(daemon, "VmHWM");

  double mib = static_cast<double>(fileMiB);
  std::printf("  upload   via stockaded %.0f MiB/s   cp %.0f MiB/s   %.0f%% of cp (target >= 70%%)\n",
              mib / median(oursUp), mib / median(cpUp), 100 * median(cpUp) / median(oursUp));
  std::printf("  download via stockaded %.0f MiB/s   cp %.0f MiB/s   %.0f%% of cp (target >= 70%%)\n",
              mib / median(oursDown), mib / median(cpDown), 100 * median(cpDown) / median(oursDown));
  std::printf("  daemon VmRSS before %zu KiB, VmHWM after %zu KiB (+%zu KiB)\n", rssBefore, hwm,
              hwm > rssBefore ? hwm - rssBefore : 0);
  std::printf("  load average after: %s\n", load().c_str());
  ::kill(daemon, SIGTERM);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
