// A stockaded of the benchmarks' own (bench/daemon_bench, bench/compare_spawn):
// build/stockaded on a unix socket in a temporary directory, forked so that it
// dies with the benchmark (PR_SET_PDEATHSIG) even when the benchmark aborts or
// is interrupted, and the few requests the benchmarks make. Not a test fixture:
// a failed request throws std::runtime_error naming it and its reply.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/http_client.h"

namespace stockade::bench {

class LocalDaemon {
 public:
  // `dir` is created and removed with the daemon; it holds the socket, the
  // token, the state directory and the daemon's stderr (daemon.log). The
  // daemon gets packaging/stockaded.service's LimitNOFILE=65536 when the
  // benchmark may raise it (CAP_SYS_RESOURCE), else its hard limit: each idle
  // sandbox holds about 50 of the daemon's descriptors (bench/daemon_bench
  // --scale prints them), so 500 sandboxes need more than 20,000.
  explicit LocalDaemon(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    const std::string sock = dir_ + "/d.sock", token = "daemon-bench-token-0123456789", tokenFile = dir_ + "/token";
    { std::ofstream(tokenFile) << token << "\n"; }
    ::chmod(tokenFile.c_str(), 0600);
    std::vector<std::string> args = {STOCKADED_PATH, "--listen", "unix:" + sock, "--state-dir", dir_ + "/state",
                                     "--token-file", tokenFile, "--max-sandboxes", "1000"};
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    const std::string log = dir_ + "/daemon.log";
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC), err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      rlimit files{65536, 65536};
      if (::setrlimit(RLIMIT_NOFILE, &files) != 0 && ::getrlimit(RLIMIT_NOFILE, &files) == 0) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
      }
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent || out < 0 || err < 0 ||
          ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
        ::_exit(127);
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    http_ = std::make_unique<cli::HttpClient>(cli::Endpoint{sock, "", 0, "unix:" + sock}, token);
    for (int i = 0; i < 500; ++i) {
      try {
        if (http_->request("GET", "/v1/health").status == 200) return;
      } catch (const cli::ClientError&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::fprintf(stderr, "stockaded did not answer /v1/health within 5 s (see %s)\n", log.c_str());
    std::abort();
  }
  ~LocalDaemon() {
    http_.reset();
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  LocalDaemon(const LocalDaemon&) = delete;
  LocalDaemon& operator=(const LocalDaemon&) = delete;

  pid_t pid() const { return pid_; }
  cli::HttpClient& http() { return *http_; }

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
  // POST .../processes/run of /bin/true, which must exit 0; the record is
  // forgotten afterwards (outside the caller's measured interval when
  // `forget` is left to the caller: see the returned process id).
  std::string runTrue(const std::string& sandbox) {
    auto j = expect(200, "POST", "/v1/sandboxes/" + sandbox + "/processes/run", R"({"argv":["/bin/true"]})");
    if (j["exitCode"] != 0) throw std::runtime_error("run /bin/true: " + j.dump());
    return j["processId"];
  }
  void forget(const std::string& sandbox, const std::string& process) {
    expect(204, "DELETE", "/v1/sandboxes/" + sandbox + "/processes/" + process);
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  std::unique_ptr<cli::HttpClient> http_;
};

}  // namespace stockade::bench
