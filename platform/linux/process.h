// Waiting for and signalling a spawned child through its pidfd, so a reused
// pid is never signalled.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>

#include "platform/unique_fd.h"

namespace stockade::platform {

// What a child and the descendants it reaped used (waitid's rusage; for a
// sandbox's init that is every process of the sandbox: init reaps orphans,
// and the kernel reaps the rest into it when it exits).
struct ResourceUsage {
  std::chrono::microseconds cpuTime{0};  // user + system
  long peakRssBytes = 0;                 // the largest resident set of any one of them
};

struct ExitStatus {
  enum class Kind { kExited, kSignaled };
  Kind kind = Kind::kExited;
  int value = 0;  // exit code or signal number
  ResourceUsage usage;  // waitid()'s rusage
  // Sandbox waits only (spawn.h): the limit the sandbox reached --
  // "limits.memoryBytes" or "limits.cpuSeconds" (it was killed for it),
  // "limits.fileSizeBytes" (the program was ended by its SIGXFSZ),
  // "limits.pids" (a fork was refused) -- or nullptr; and its CPU time, when
  // its cgroup accounted for it.
  const char* limit = nullptr;
  std::optional<std::chrono::nanoseconds> cpuTime;
  // The shell convention: the code, or 128 + signal.
  int shellCode() const noexcept { return kind == Kind::kExited ? value : 128 + value; }
};

// Blocks until the child exits and reaps it. The error names waitid().
std::variant<ExitStatus, std::string> waitExit(const UniqueFd& pidfd);

// As waitExit(), but gives up after `timeout` (nullopt: still running).
// Signals interrupting the wait are retried.
std::variant<std::optional<ExitStatus>, std::string> waitExitFor(const UniqueFd& pidfd,
                                                                 std::chrono::milliseconds timeout);

// pidfd_send_signal(). Signalling a child that already exited is not an error.
std::optional<std::string> signalChild(const UniqueFd& pidfd, int signal);

}  // namespace stockade::platform
