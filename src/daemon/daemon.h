// stockaded as a value: its options, and the object that owns the server,
// the routes' implementation and (later) the ledger. src/cli/stockaded_main.cc
// parses flags into DaemonOptions and runs a Daemon until SIGTERM.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/daemon/server.h"

namespace stockade::daemon {

struct DaemonOptions {
  ListenAddress listen;
  std::optional<std::string> token;     // read from --token-file
  std::string stateDir;                 // created 0700 if missing
  std::optional<std::string> policyFile;  // the manager's baseline; none: the bundled default
  std::vector<std::string> allowedOrigins;
  ServerLimits limits;
  int ioThreads = 2;
  int workerThreads = 8;
};

class Daemon {
 public:
  // Prepares the state dir and binds the listener; throws std::runtime_error
  // naming what failed (a flag, a path, a call and errno).
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  void start();
  void stop();
  ListenAddress address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One JSON object per line for the access log: {"ts", "event":"request",
// "method", "path", "status", "durationUs", "sandboxId"?, "bytes"}.
std::string accessLogLine(const AccessRecord& r);

}  // namespace stockade::daemon
