// compare_spawn: wall-clock latency of running /bin/true to completion under
// each of several columns, measured in ONE run, round-robin (each round runs
// every column once, starting at a different column), so load that comes and
// goes on the machine falls on every column alike. Driven by bench/compare,
// which writes the column list; prints nothing but errors, writes JSON.
//
//   compare_spawn --columns FILE.json --runs N --out FILE.json
//
// FILE.json: [{"name": "...", "argv": ["...", ...], "cwd": "/..."}, ...]
// Two built-in columns are named by "builtin" instead of "argv":
//   "bare"      posix_spawn("/bin/true") + waitpid (the baseline)
//   "warm-run"  the library: SandboxHandle::run() + collect() of /bin/true in
//               a live manager under the default policy, 10 ms after the
//               previous call (outside the measured interval) so its spare
//               sandbox is ready, as bench/manager_spawn_bench measures it
//   "daemon-exec" stockaded (build/stockaded, started here on a temporary
//               unix socket): POST .../processes/run of /bin/true in a warm
//               sandbox under the default policy, 10 ms after the previous
//               call, its record deleted afterwards (neither measured), as
//               bench/daemon_bench measures it
// Output: {"runs": N, "columns": [{"name", "samples_ms": [...], "failed"}]}.
//
//   compare_spawn --serve PORTFILE
// is the HTTP origin of bench/compare's curl downloads instead: it listens on
// 127.0.0.1 (port 0, written to PORTFILE), answers GET /N with N bytes from
// memory (keep-alive), one thread per connection, until killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "stockade/stockade.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Column {
  std::string name;
  std::vector<std::string> argv;  // empty: built-in
  std::string builtin;
  std::string cwd;
  std::vector<double> ms;
  long failed = 0;
  std::string lastError;
};

// Runs argv in cwd with stdio on /dev/null; the time to its exit, or nullopt
// when it did not exit 0.
std::optional<double> runOnce(const Column& c) {
  std::vector<char*> args;
  for (const auto& a : c.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  if (!c.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, c.cwd.c_str());
  auto start = Clock::now();
  pid_t pid;
  int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return std::nullopt;
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto end = Clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return std::chrono::duration<double, std::milli>(end - start).count();
}

class WarmRun {
 public:
  explicit WarmRun(std::string cwd) : cwd_(std::move(cwd)) {
    auto& manager = stockade::SandboxManager::instance();
    manager.setAuditSink([](const std::string&) {});
    handle_.emplace(manager.createSandbox(stockade::SandboxPolicy::defaults()));
  }
  ~WarmRun() { handle_->dispose(); }
  std::optional<double> once() {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the spare gets built (not measured)
    auto start = Clock::now();
    auto out = handle_->run({.argv = {"/bin/true"}, .correlationId = "bench", .cwd = cwd_}).collect();
    auto end = Clock::now();
    if (out.completion.exitCode != 0) return std::nullopt;
    return std::chrono::duration<double, std::milli>(end - start).count();
  }

 private:
  std::string cwd_;
  std::optional<stockade::SandboxHandle> handle_;
};

class DaemonExec {
 public:
  DaemonExec() : daemon_("/var/tmp/stockade-compare-daemon-" + std::to_string(::getpid())) {
    sandbox_ = daemon_.create(nlohmann::json::parse(stockade::SandboxPolicy::defaults().toJson()));
  }
  std::optional<double> once() {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the spare gets built (not measured)
    auto start = Clock::now();
    std::string process = daemon_.runTrue(sandbox_);
    auto end = Clock::now();
    daemon_.forget(sandbox_, process);
    return std::chrono::duration<double, std::milli>(end - start).count();
  }

 private:
  stockade::bench::LocalDaemon daemon_;
  std::string sandbox_;
};

void serveConnection(int fd) {
  static const std::string block(1 << 20, 'x');
  std::string buf;
  char tmp[4096];
  for (;;) {
    std::size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buf.append(tmp, static_cast<std::size_t>(n));
    }
    // "GET /N HTTP/1.1" or an absolute-form "GET http://host:port/N ..."
    std::string line = buf.substr(0, buf.find("\r\n"));
    std::string target = line.substr(line.find(' ') + 1);
    target = target.substr(0, target.find(' '));
    std::size_t size = std::strtoull(target.substr(target.rfind('/') + 1).c_str(), nullptr, 10);
    buf.erase(0, end + 4);
    std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) break;
    while (size > 0) {
      ssize_t sent = ::send(fd, block.data(), std::min(size, block.size()), MSG_NOSIGNAL);
      if (sent <= 0) {
        ::close(fd);
        return;
      }
      size -= static_cast<std::size_t>(sent);
    }
  }
  ::close(fd);
}

int serve(const char* portFile) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 128) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return 1;
  std::ofstream(portFile) << ntohs(a.sin_port) << "\n";
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) std::thread(serveConnection, fd).detach();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--serve") return serve(argv[2]);
  std::string columnsPath, outPath;
  int runs = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--columns") columnsPath = argv[i + 1];
    else if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--out") outPath = argv[i + 1];
  }
  if (columnsPath.empty() || outPath.empty() || runs < 1) {
    std::fprintf(stderr, "usage: compare_spawn --columns FILE.json --runs N --out FILE.json\n");
    return 2;
  }
  std::vector<Column> columns;
  for (const auto& j : nlohmann::json::parse(std::ifstream(columnsPath))) {
    Column c;
    c.name = j.at("name");
    c.builtin = j.value("builtin", "");
    if (j.contains("argv")) c.argv = j.at("argv").get<std::vector<std::string>>();
    c.cwd = j.value("cwd", "");
    columns.push_back(std::move(c));
  }
  std::unique_ptr<WarmRun> warm;
  for (const auto& c : columns)
    if (c.builtin == "warm-run") {
      if (::chdir(c.cwd.c_str()) != 0) return 1;  // the default policy writes to "."
      warm = std::make_unique<WarmRun>(c.cwd);
    }
  std::unique_ptr<DaemonExec> daemonExec;
  for (const auto& c : columns)
    if (c.builtin == "daemon-exec") daemonExec = std::make_unique<DaemonExec>();
  auto measure = [&](Column& c) -> std::optional<double> {
    if (c.builtin == "bare") {
      Column bare = c;
      bare.argv = {"/bin/true"};
      return runOnce(bare);
    }
    if (c.builtin == "warm-run") return warm->once();
    if (c.builtin == "daemon-exec") return daemonExec->once();
    return runOnce(c);
  };
  // Warm-up: two rounds, not recorded (page cache, the manager's first spare).
  for (int w = 0; w < 2; ++w)
    for (auto& c : columns) (void)measure(c);
  for (int round = 0; round < runs; ++round) {
    for (std::size_t k = 0; k < columns.size(); ++k) {
      Column& c = columns[(round + k) % columns.size()];
      if (auto t = measure(c)) c.ms.push_back(*t);
      else ++c.failed;
    }
  }
  nlohmann::json out = {{"runs", runs}, {"columns", nlohmann::json::array()}};
  for (const auto& c : columns) out["columns"].push_back({{"name", c.name}, {"samples_ms", c.ms}, {"failed", c.failed}});
  std::ofstream(outPath) << out.dump(1);
  return 0;
}
