// The launcher: rules + program -> a spawned, proxied, audited sandbox under
// the supervisor. The one path by which the library's run(), the process
// service and `stockade run` start a child:
//   spawn (on the spawner thread, or in a prepared spare) -> the proxy's
//   listeners -> "spawn" (or "spawn_failed") audited -> the supervisor takes
//   the pidfd, the seccomp listener and the outputs -> at the end the
//   listeners are released and "exit" is audited, then the caller's onEnd.
// Every denial the supervisor answers is audited as a "denial" decision.
//
// Thread-safety: launch() may be called from any thread but the loop's.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "platform/linux/pty.h"
#include "platform/linux/spawn.h"
#include "proxy/proxy.h"
#include "src/audit/log.h"
#include "src/process/egress.h"
#include "src/process/spawner.h"
#include "src/process/supervisor.h"
#include "stockade/rules.h"

namespace stockade::process {

enum class Output {
  kCaller,      // the pipes go back to the caller in Launched (the library's Run)
  kSupervisor,  // the supervisor drains stdout/stderr into Watch::onOutput
  kInherit,     // the caller's own fds 0-2 (Stdio::kInherit)
  kPty,         // a fresh pseudo-terminal: its master drained as Channel::kPty, stdin written to it
};

struct LaunchRequest {
  const DerivedRules& rules;
  std::string fingerprint;  // of `rules`, for the audit events (empty when the audit log wants none)
  platform::ProgramRequest program;
  Output output = Output::kSupervisor;
  StdinMode stdin = StdinMode::kClosed;  // kSupervisor: kOpen keeps the pipe for writeStdin()
  platform::OnMissingLayer onMissingLayer = platform::OnMissingLayer::kRefuse;
  platform::WindowSize terminalSize;  // Output::kPty
  std::optional<platform::PreparedSandbox> spare;  // built under `rules` (same Output); else a fresh spawn
  // Identity, in every audit event of the child: "sandboxId", and the id
  // under `idField` ("runId" for the library's run(), "processId" otherwise).
  std::string sandboxId;
  std::string id;
  std::string idField = "processId";
  nlohmann::json auditFields = nlohmann::json::object();  // added to spawn, spawn_failed and exit
  // The rules every connection of the child is decided by, read per request;
  // empty: the child has no network at all.
  proxy::RulesProvider network;
  std::map<std::string, std::string> resolve;
  // The sandbox's workspace (a real host path), shown at /workspace; empty:
  // none. A spare must have been prepared with the same.
  std::string workspace;
};

struct Launched {
  std::shared_ptr<Supervised> supervised;
  pid_t pid = -1;
  platform::EnforcementReport enforcement;
  platform::UniqueFd stdinPipe, stdoutPipe, stderrPipe;  // Output::kCaller only
  platform::UniqueFd terminal;  // Output::kPty: the master, for setWindowSize()
};

class Launcher {
 public:
  Launcher(Supervisor& supervisor, audit::Log& audit, Spawner& spawner, Egress& egress)
      : supervisor_(supervisor), audit_(audit), spawner_(spawner), egress_(egress) {}

  // `watch`'s outputs and stdin are filled here for Output::kSupervisor. A
  // SpawnError was audited ("spawn_failed") and nothing runs.
  std::variant<Launched, platform::SpawnError> launch(LaunchRequest request, Watch watch);

  // The sandbox request for `rules` as launch() builds it (the spare is
  // prepared from the same).
  static platform::SandboxRequest sandboxRequest(const DerivedRules& rules, Output output,
                                                 platform::OnMissingLayer onMissingLayer, bool network,
                                                 platform::WindowSize terminalSize = {},
                                                 std::string workspace = {});

 private:
  Supervisor& supervisor_;
  audit::Log& audit_;
  Spawner& spawner_;
  Egress& egress_;
};

// "SIGKILL" for 9.
std::string signalName(int signal);

}  // namespace stockade::process
