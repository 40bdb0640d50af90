#include "tests/support/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace stockade::testing {

std::string stockadedBinary() {
  const char* staged = std::getenv("STOCKADED");
  return staged && *staged ? staged : STOCKADED_PATH;
}

DaemonProcess::DaemonProcess(const TempDir& dir, Options options) {
  socket_ = dir / "d.sock";
  stateDir_ = dir / "state";
  tokenFile_ = dir / "token";
  logFile_ = dir / "stockaded.log";
  token_ = "daemon-test-token-0123456789abcdef";
  std::vector<std::string> argv = {stockadedBinary(), "--listen", "unix:" + socket_, "--state-dir", stateDir_};
  if (options.withToken) {
    {
      std::ofstream(tokenFile_) << token_ << "\n";
    }
    ::chmod(tokenFile_.c_str(), 0600);
    argv.insert(argv.end(), {"--token-file", tokenFile_});
  }
  argv.insert(argv.end(), options.extraArgs.begin(), options.extraArgs.end());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, logFile_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, logFile_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = ::posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn(" + argv[0] + ") failed");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("stockaded exited at start-up: " + log());
    }
    struct stat st{};
    if (::lstat(socket_.c_str(), &st) == 0) {
      try {
        HttpTestClient c(socket_);
        if (c.request("GET", "/v1/health").status == 200) return;
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

HttpTestClient DaemonProcess::client() const {
  HttpTestClient c(socket_);
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
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string DaemonProcess::log() const {
  std::ifstream in(logFile_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace stockade::testing
