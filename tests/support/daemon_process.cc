#include "tests/support/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/sanitizer.h"

extern char** environ;

namespace stockade::testing {

std::string stockadedBinary() {
  const char* staged = std::getenv("STOCKADED");
  return staged && *staged ? staged : STOCKADED_PATH;
}

namespace {

// The port of the daemon's "listening" line in its log, or 0 before it.
std::uint16_t listeningPort(const std::string& log) {
  auto at = log.find("\"event\":\"listening\"");
  if (at == std::string::npos) return 0;
  auto start = log.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  auto line = nlohmann::json::parse(log.substr(start, log.find('\n', at) - start), nullptr, false);
  if (line.is_discarded() || !line["address"].is_string()) return 0;
  std::string address = line["address"];
  return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

}  // namespace

DaemonProcess::DaemonProcess(const std::string& dir, Options options) {
  if (options.tcp && !options.withToken) throw std::invalid_argument("DaemonProcess: TCP needs the token");
  socket_ = options.tcp ? "" : dir + "/d.sock";
  stateDir_ = dir + "/state";
  tokenFile_ = dir + "/token";
  logFile_ = dir + "/stockaded.log";
  token_ = "daemon-test-token-0123456789abcdef";
  std::vector<std::string> argv = {stockadedBinary(), "--listen", options.tcp ? "127.0.0.1:0" : "unix:" + socket_,
                                   "--state-dir", stateDir_};
  if (options.withToken) {
    {
      std::ofstream(tokenFile_) << token_ << "\n";
    }
    ::chmod(tokenFile_.c_str(), 0600);
    argv.insert(argv.end(), {"--token-file", tokenFile_});
  }
  argv.insert(argv.end(), options.extraArgs.begin(), options.extraArgs.end());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  for (auto& e : options.extraEnv) env.push_back(e.data());
  env.push_back(nullptr);
  // fork, not posix_spawn: the child asks to be killed when this thread
  // ends, before it execs (only async-signal-safe calls in between).
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork() for " + argv[0] + " failed");
  if (pid_ == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int log = ::open(logFile_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (in < 0 || log < 0 || ::dup2(in, 0) < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) ::_exit(127);
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("stockaded exited at start-up: " + log());
    }
    struct stat st{};
    if (options.tcp ? (port_ = listeningPort(log())) != 0 : ::lstat(socket_.c_str(), &st) == 0) {
      try {
        if (unauthenticated().request("GET", "/v1/health").status == 200) return;
      } catch (const std::exception&) {
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill9();
  throw std::runtime_error("stockaded did not answer within 20 s: " + log());
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) stop();
}

HttpTestClient DaemonProcess::unauthenticated() const {
  return port_ ? HttpTestClient("127.0.0.1", port_) : HttpTestClient(socket_);
}

HttpTestClient DaemonProcess::client() const {
  HttpTestClient c = unauthenticated();
  c.setDefaultHeaders(authHeaders());
  return c;
}

Headers DaemonProcess::authHeaders() const { return {{"Authorization", "Bearer " + token_}}; }

void DaemonProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  forwardSanitizerReports(log(), "stockaded's log " + logFile_);
}

int DaemonProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (true) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  forwardSanitizerReports(log(), "stockaded's log " + logFile_);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string DaemonProcess::log() const {
  std::ifstream in(logFile_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace stockade::testing
