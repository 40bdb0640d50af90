// One program in the foreground (`stockade run`): launched through the
// launcher with the caller's stdio, supervised by the loop, ended by a
// signal the caller forwards or by its deadline. The CLI parses arguments
// into a ForegroundRequest and maps the outcome to an exit code.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "platform/linux/spawn.h"
#include "src/process/runtime.h"
#include "stockade/rules.h"

namespace stockade::process {

struct ForegroundRequest {
  const DerivedRules& rules;
  platform::ProgramRequest program;  // env is final (childEnvironment())
  std::optional<std::chrono::milliseconds> timeout;
  std::map<std::string, std::string> resolve;  // checked with resolveProblem()
  std::string sandboxId;
  // Read (signalfd_siginfo records) when readable: the signal ends the
  // sandbox (SIGKILL) and the outcome names it -- except SIGWINCH, which
  // resizes the PTY to the caller's terminal. -1: none.
  int signalFd = -1;
  // Set: the child gets a fresh PTY of this size, relayed to the caller's
  // fds 0 and 1 (a terminal on fd 0 is put in raw mode meanwhile and
  // restored). Unset: the child gets fds 0-2 as they are, and whichever of
  // them is a terminal has its attributes restored at the end.
  std::optional<platform::WindowSize> pty;
  // A layer the kernel lacks: run and report it (the CLI's default), or
  // refuse to spawn (`stockade run --strict`).
  platform::OnMissingLayer onMissingLayer = platform::OnMissingLayer::kRunAndReport;
  std::string workspace;  // a real host path shown at /workspace (LaunchRequest); empty: none
};

struct ForegroundOutcome {
  Ending ending;
  std::optional<int> signal;  // the signal read from signalFd that ended it
};

struct ForegroundStarted {
  platform::EnforcementReport enforcement;
};

// Spawns, calls `started` once the child runs, and waits for its end.
std::variant<ForegroundOutcome, platform::SpawnError> runForeground(
    Runtime& runtime, ForegroundRequest request, const std::function<void(const ForegroundStarted&)>& started);

// Why NAME -> ADDRESS cannot be a proxy resolve override, or nullopt.
// ADDRESS may be an IPv6 literal in brackets.
std::optional<std::string> resolveProblem(const std::string& name, const std::string& address);
// A `--resolve HOST=ADDR` flag's value added to `into`, or what is wrong with
// it, naming the flag and its value (stockade run and stockaded).
std::optional<std::string> addResolveFlag(const std::string& value, std::map<std::string, std::string>& into);

}  // namespace stockade::process
