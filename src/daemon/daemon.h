// stockaded as a value: its options, and the object that owns the server,
// the routes' implementation, the sandboxes and the ledger.
// src/cli/stockaded_main.cc parses flags into DaemonOptions and runs a Daemon
// until SIGTERM.
//
// Start-up, in order: the state dir (created 0700) is locked (one daemon per
// state dir); the ledger is opened; every process group a previous run left
// recorded as running is killed (if its pid still names it) and marked lost;
// the socket is bound; sandboxes are loaded (their rules derived against
// the socket just bound) and unfinished closes retried; then it is served.
// Checkpoints (persist) and snapshots live in the state dir too
// (checkpoints/, snapshots/); snapshots are recorded in the ledger under
// their operation keys.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/daemon/sandboxes.h"
#include "src/daemon/server.h"
#include "stockade/policy.h"

namespace stockade::daemon {

struct DaemonOptions {
  ListenAddress listen;
  std::optional<std::string> token;     // read from --token-file
  std::optional<std::string> tokenFile; // its path: no sandbox may read it
  std::string stateDir;                 // created 0700 if missing
  std::optional<SandboxPolicy> baseline;  // --policy: the widest any sandbox may be; none: the bundled default
  std::vector<std::string> allowedOrigins;
  ServerLimits limits;
  SandboxLimits sandboxLimits;
  std::chrono::milliseconds gcInterval{60'000};  // the collection pass that retries failed closes
  std::uint64_t maxPersistBytes = std::uint64_t{25} << 20;  // a persist's archive (SANDBOX_LIMIT_EXCEEDED beyond)
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
  // Re-reads --token-file and serves the token it holds now (stockaded does
  // on SIGHUP). On any problem with the file the old token stays and
  // `error` names the file and the problem; without --token-file there is
  // nothing to re-read (an error saying so). `warning`: the file is another
  // file than the one read before (renamed over it): every sandbox admitted
  // the old one's identity as a denyRead entry and now refuses new processes
  // as drift, naming it, until it is created again -- rotate by rewriting
  // the file in place.
  struct TokenReload {
    std::string error, warning;
  };
  TokenReload reloadToken();
  // What start-up recovery found.
  const ledger::RecoveryReport& recovery() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One JSON object per line for the access log: {"ts", "event":"request",
// "method", "path", "status", "durationUs", "sandboxId"?, "bytes"}.
std::string accessLogLine(const AccessRecord& r);

}  // namespace stockade::daemon
