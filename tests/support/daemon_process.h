// The real stockaded binary, started for one test on a temporary unix
// socket, with its own state dir and token file, and stopped (SIGTERM, or
// SIGKILL on request) at the end.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/support/http_test_client.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {

// The stockaded built beside the tests (STOCKADED overrides it).
std::string stockadedBinary();

class DaemonProcess {
 public:
  struct Options {
    std::vector<std::string> extraArgs;  // --policy, --max-..., ...
    bool withToken = true;
  };
  // Starts the daemon in `dir` (socket dir/d.sock, state dir/state, token
  // dir/token) and waits until it answers /v1/health. Throws
  // std::runtime_error with its stderr when it does not come up.
  DaemonProcess(const TempDir& dir, Options options);
  explicit DaemonProcess(const TempDir& dir) : DaemonProcess(dir, Options{}) {}
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::string& socketPath() const { return socket_; }
  const std::string& stateDir() const { return stateDir_; }
  const std::string& tokenFile() const { return tokenFile_; }
  const std::string& token() const { return token_; }
  pid_t pid() const { return pid_; }

  // A client with the token set.
  HttpTestClient client() const;
  Headers authHeaders() const;

  // SIGKILL, as a crash would; waits for it to be reaped.
  void kill9();
  // SIGTERM; waits; returns the exit status.
  int stop();
  // What the daemon wrote to stderr so far (the access log).
  std::string log() const;

 private:
  std::string socket_, stateDir_, tokenFile_, token_, logFile_;
  pid_t pid_ = -1;
};

}  // namespace stockade::testing
