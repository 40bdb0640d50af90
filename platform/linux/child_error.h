// ChildError: how the child reports a failed setup step to the parent,
// between clone and exec. ASYNC-SIGNAL-SAFE: fixed-size, no allocation; the
// child fills one and writes it whole to the error pipe, then _exit()s.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stockade::platform {

// The child's setup steps, in the order they run (spawn.cc).
enum class SetupStep : std::int32_t {
  kNone = 0,
  kPrepare,   // parent side, before clone
  kCoverage,  // parent side: the plan does not enforce every rule (coverage.h)
  kClone,     // parent side: clone3 itself
  kStdio,
  kSignals,
  kCloseFds,
  kSession,
  kParentDeath,
  kIdMaps,
  kHostname,
  kLoopback,
  kProxyListeners,
  kMounts,
  kUserCounters,  // per-user kernel counters capped in the sandbox's user namespace (user_counters.h)
  kTerminal,  // Stdio::kTerminal: the PTY, made in the sandbox's own devpts
  kLimits,
  kCapabilities,
  kNoNewPrivs,
  kLandlock,
  kSeccomp,
  kCgroup,    // limits.pids/memoryBytes/cpuSeconds: the sandbox cgroup (made by the parent, joined by the child)
  kProgram,   // receiving argv, env and cwd from the supervisor
  kWorkingDir,
  kExec,
};

// "mounts", "landlock", ...: the name used in messages.
const char* setupStepName(SetupStep step) noexcept;

// The child writes whole ChildError records to the error pipe. A record whose
// step is kNone is not a failure: it says the sandbox is built and waits for
// its program (spawn.cc, prepare()). EOF means the program was exec'd.
struct ChildError {
  std::int32_t step = 0;   // SetupStep
  std::int32_t error = 0;  // errno
  char call[1000] = {};    // `mount("tmpfs", "/home/u/.ssh", MS_NOSUID)`, NUL-terminated

  // Formatting helpers: append to `call`, truncating silently (the message
  // stays NUL-terminated). Async-signal-safe.
  ChildError& add(const char* text) noexcept;
  ChildError& quoted(const char* text) noexcept;  // "text", each byte outside printable ASCII as \xNN
  ChildError& number(long long value) noexcept;
  ChildError& hex(unsigned long long value) noexcept;
  void clear() noexcept;
  // Records errno as the failure of `failed`; returns false, for
  // `return error.fail(SetupStep::kMounts);`. Async-signal-safe.
  bool fail(SetupStep failed) noexcept;

 private:
  std::size_t length() const noexcept;
};

}  // namespace stockade::platform
