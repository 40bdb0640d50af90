// The real stockaded binary, started for one test on a temporary unix
// socket (or loopback TCP), with its own state dir and token file, and
// stopped (SIGTERM, or SIGKILL on request) at the end. It dies with the
// test's thread that started it (PR_SET_PDEATHSIG): a test binary killed by
// a timeout or a crash leaves no daemon behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
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
    bool tcp = false;  // --listen 127.0.0.1:0 instead of the unix socket (needs the token)
    std::vector<std::string> extraEnv;  // NAME=VALUE added to this process's environment
  };
  // Starts the daemon in `dir` (socket dir/d.sock, state dir/state, token
  // dir/token, its log dir/stockaded.log) and waits until it answers
  // /v1/health. Throws std::runtime_error with its stderr when it does not
  // come up.
  DaemonProcess(const std::string& dir, Options options);
  DaemonProcess(const TempDir& dir, Options options) : DaemonProcess(dir.path(), std::move(options)) {}
  explicit DaemonProcess(const TempDir& dir) : DaemonProcess(dir.path(), Options{}) {}
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::string& socketPath() const { return socket_; }  // empty when on TCP
  std::uint16_t port() const { return port_; }               // the TCP port bound, or 0
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
  HttpTestClient unauthenticated() const;

  std::string socket_, stateDir_, tokenFile_, token_, logFile_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace stockade::testing
