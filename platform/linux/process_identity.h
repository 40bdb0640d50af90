// Which process a pid names, beyond the pid: a pid is reused once its
// process is gone, so a record written by a daemon that crashed must never
// be trusted to name the same process after a restart. A process is its pid,
// its start time (field 22 of /proc/<pid>/stat, clock ticks after boot) and
// the boot it started in.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace stockade::platform {

struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t startTime = 0;  // /proc/<pid>/stat field 22
  std::string bootId;           // /proc/sys/kernel/random/boot_id
  bool operator==(const ProcessIdentity&) const = default;
};

// The text of a small /proc or /sys file (the first 16 KiB or so); "" when
// it cannot be read.
std::string readSmallFile(const std::string& path);

// This boot's id; "" when it cannot be read.
std::string currentBootId();

// The identity of the live process `pid`; nullopt when there is none.
std::optional<ProcessIdentity> identifyProcess(pid_t pid);

enum class KillOutcome {
  kKilled,       // it was that very process, it got SIGKILL and is gone
  kAlreadyGone,  // no process with that pid, start time and boot is alive
  kFailed,       // it is alive and could not be killed (or did not die in time): see `error`
};
struct KillResult {
  KillOutcome outcome = KillOutcome::kFailed;
  std::string error;
};

// Kills the process `identity` names, and only that one: pidfd_open(pid)
// first, then its start time and boot compared; a pid now naming another
// process is never signalled. SIGKILL goes through the pidfd, then waits up
// to `wait` for the process to be gone. Killing a sandbox's init ends its
// whole pid namespace.
KillResult killIdentified(const ProcessIdentity& identity, std::chrono::milliseconds wait);

}  // namespace stockade::platform
