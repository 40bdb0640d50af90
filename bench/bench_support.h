// What the benchmarks share: timing and medians, interleaved columns, the
// load average, a process's memory, the files and trees they move, and a
// stockaded started for the run. Header-only; a bench that starts a daemon
// links stockade_http_client.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/cli/http_client.h"

extern char** environ;

namespace stockade::bench {

using Clock = std::chrono::steady_clock;

// Stops the bench, naming what failed.
inline void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s failed\n", program_invocation_short_name, what.c_str());
    std::exit(1);
  }
}

inline void sh(const std::string& command) { check(std::system(command.c_str()) == 0, command); }

inline double seconds(const std::function<void()>& f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Stats {
  double median, p10, p90;
};
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

inline double microseconds(const std::function<void()>& f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// `once` run `runs` times after 10 to warm up, `gap` before each, `after`
// (untimed) after each: microseconds.
inline Stats measure(int runs, const std::function<void()>& once, std::chrono::milliseconds gap = {},
                     const std::function<void()>& after = {}) {
  std::vector<double> us;
  for (int i = 0; i < 10; ++i) {
    once();
    if (after) after();
  }
  for (int i = 0; i < runs; ++i) {
    std::this_thread::sleep_for(gap);
    us.push_back(microseconds(once));
    if (after) after();
  }
  return stats(std::move(us));
}

// The baseline of the spawn benches: /bin/true by posix_spawn, waited for.
inline void bareTrue() {
  pid_t pid;
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  if (::posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) std::abort();
  int status;
  ::waitpid(pid, &status, 0);
}

// A fresh /var/tmp/NAME-PID, made the current directory (the default
// policy writes to "."; a small working directory, as an agent's fresh
// workspace would be).
inline std::string enterWorkDirectory(const std::string& name) {
  std::string dir = "/var/tmp/" + name + "-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  check(::chdir(dir.c_str()) == 0, "chdir " + dir);
  return dir;
}

// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
inline std::string load() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 when absent.
inline std::size_t statusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line, name = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return std::stoul(line.substr(name.size()));
  return 0;
}

// CPU seconds a process has spent, all its threads, user and system.
inline double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Columns measured in rounds: round `round` starts at another column, so
// drift, and the dirty pages one write leaves behind, hit every column alike.
struct Column {
  std::vector<double>* seconds;
  std::function<void()> run;
};
inline void rotated(int round, const std::vector<Column>& columns) {
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const Column& c = columns[(k + static_cast<std::size_t>(round)) % columns.size()];
    c.seconds->push_back(bench::seconds(c.run));
  }
}

// `mib` MiB of pseudo-random bytes (incompressible, the same for a seed).
inline void writeRandomFile(const std::string& path, long mib, std::uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::string chunk(1 << 20, '\0');
  for (std::size_t i = 0; i + 8 <= chunk.size(); i += 8) {
    std::uint64_t v = rng();
    std::memcpy(&chunk[i], &v, 8);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "open " + path);
  for (long i = 0; i < mib; ++i) {
    chunk[0] = static_cast<char>(i);  // no two MiB alike
    check(::write(fd, chunk.data(), chunk.size()) == (1 << 20), "write " + path);
  }
  ::close(fd);
}

// `dirs` directories of `filesPerDir` files of 1-8 KiB under `root`.
inline void writeSmallTree(const std::string& root, int dirs, int filesPerDir, std::uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::string data(8192, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (int d = 0; d < dirs; ++d) {
    std::string dir = root + "/d" + std::to_string(d);
    std::filesystem::create_directories(dir);
    for (int f = 0; f < filesPerDir; ++f) {
      std::string path = dir + "/f" + std::to_string(f);
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      std::size_t size = 1024 + rng() % 7168;
      check(fd >= 0 && ::write(fd, data.data(), size) == static_cast<ssize_t>(size), "write " + path);
      ::close(fd);
    }
  }
}

// A stockaded of its own on a unix socket under `dir` (its state, token
// and socket there), forked so that it dies with the bench
// (PR_SET_PDEATHSIG) even when the bench aborts; ready (GET /v1/health)
// when the constructor returns. Its stdout is dropped, stderr goes to
// `dir`/daemon.log. It gets packaging/stockaded.service's LimitNOFILE=65536
// when the bench may raise it (CAP_SYS_RESOURCE), else its hard limit: each
// idle sandbox holds about 12 of the daemon's descriptors (daemon_bench
// --scale prints them), and the daemon refuses a create with fewer than 32
// left. With
// `removeDirectory`, `dir` goes with the daemon. A request the helpers below
// make that fails throws std::runtime_error naming it and its reply.
class Daemon {
 public:
  Daemon(const std::string& binary, const std::string& dir, std::vector<std::string> extraArgs = {},
         bool removeDirectory = false)
      : dir_(removeDirectory ? dir : ""), socket_(dir + "/d.sock"), token_("bench-token-0123456789abcdef") {
    std::filesystem::create_directories(dir);
    const std::string tokenFile = dir + "/token", log = dir + "/daemon.log";
    { std::ofstream(tokenFile) << token_ << "\n"; }
    ::chmod(tokenFile.c_str(), 0600);
    std::vector<std::string> args = {binary,      "--listen",  "unix:" + socket_, "--state-dir",
                                     dir + "/state", "--token-file", tokenFile};
    for (auto& a : extraArgs) args.push_back(std::move(a));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t bench = ::getpid();
    pid_ = ::fork();
    check(pid_ >= 0, "fork");
    if (pid_ == 0) {
      int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      rlimit files{65536, 65536};
      if (::setrlimit(RLIMIT_NOFILE, &files) != 0 && ::getrlimit(RLIMIT_NOFILE, &files) == 0) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
      }
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != bench || out < 0 || err < 0 ||
          ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
        ::_exit(127);
      ::execve(argv[0], argv.data(), environ);
      ::_exit(127);
    }
    http_ = std::make_unique<cli::HttpClient>(cli::Endpoint{socket_, "", 0, "unix:" + socket_}, token_);
    for (int i = 0; i < 500; ++i) {
      try {
        if (http_->request("GET", "/v1/health").status == 200) return;
      } catch (const cli::ClientError&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    check(false, "starting " + binary + " (see " + log + ")");
  }
  ~Daemon() {
    http_.reset();
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  cli::HttpClient& http() { return *http_; }
  // POST /v1/sandboxes with `policy` (a JSON object): the reply's body ({id, workspace, ...}).
  std::string createSandbox(const std::string& policy) {
    auto r = http_->request("POST", "/v1/sandboxes", "{\"policy\":" + policy + "}");
    check(r.status == 200, "create sandbox: " + r.body);
    return r.body;
  }
  // A request whose reply must have `status`; its JSON body (null when empty).
  nlohmann::json expect(int status, std::string_view method, std::string_view target, std::string_view body = {}) {
    auto r = http_->request(method, target, body);
    if (r.status != status)
      throw std::runtime_error(std::string(method) + " " + std::string(target) + ": " + std::to_string(r.status) + " " +
                               r.body);
    return r.body.empty() ? nlohmann::json() : nlohmann::json::parse(r.body);
  }
  // A sandbox under `policy` (a whole policy document); its id.
  std::string create(const nlohmann::json& policy) {
    return expect(200, "POST", "/v1/sandboxes", nlohmann::json{{"policy", policy}}.dump())["id"];
  }
  void close(const std::string& sandbox) { expect(204, "DELETE", "/v1/sandboxes/" + sandbox); }
  // POST .../processes/run of /bin/true, which must exit 0: its process id,
  // for forget() (outside the caller's measured interval).
  std::string runTrue(const std::string& sandbox) {
    auto j = expect(200, "POST", "/v1/sandboxes/" + sandbox + "/processes/run", R"({"argv":["/bin/true"]})");
    if (j["exitCode"] != 0) throw std::runtime_error("run /bin/true: " + j.dump());
    return j["processId"];
  }
  void forget(const std::string& sandbox, const std::string& process) {
    expect(204, "DELETE", "/v1/sandboxes/" + sandbox + "/processes/" + process);
  }

 private:
  std::string dir_;  // removed with the daemon, when asked
  std::string socket_, token_;
  pid_t pid_ = -1;
  std::unique_ptr<cli::HttpClient> http_;
};

#ifdef STOCKADED_PATH
// The daemon of daemon_bench and compare_spawn: the build's stockaded with
// room for 1,000 sandboxes, `dir` removed with it.
class LocalDaemon : public Daemon {
 public:
  explicit LocalDaemon(const std::string& dir) : Daemon(STOCKADED_PATH, dir, {"--max-sandboxes", "1000"}, true) {}
};
#endif

}  // namespace stockade::bench
