// Stopping every process of a set of process trees (a sandbox's) for the
// length of a capture, and resuming them: seed 000's snapshot "freeze or stop
// tracked processes, capture, thaw".
//
// Mechanisms, in order of preference:
//   cgroup-v1-freezer  the processes are moved into a freezer cgroup of our
//                      own (beneath ours in the v1 freezer hierarchy) and it is
//                      set FROZEN; the kernel stops them where they cannot
//                      notice. Thawing moves each back to the cgroup it came
//                      from, which thaws it on arrival (freezer_attach), so
//                      none can fork into ours meanwhile. Needs write access
//                      to the hierarchy (root).
//   sigstop            SIGSTOP to every process (through a pidfd opened and
//                      checked against the process's start time, so a reused
//                      pid is never signalled), SIGCONT after; processes that
//                      were already stopped stay stopped. A vfork() parent
//                      whose child is stopped before its exec cannot stop
//                      itself, nor run: it counts as stopped. A process sees
//                      this (its parent gets SIGCHLD with CLD_STOPPED): the
//                      fallback, reported as such.
// Processes are found from the roots through /proc/<pid>/stat parent links,
// again and again until a pass finds none that is not yet frozen: a process
// forked meanwhile is either seen by the next pass or the child of one
// already frozen (which can no longer fork), so the set converges.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "platform/sys_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

enum class FreezeMethod { kCgroupV1Freezer, kSigstop };
// "cgroup-v1-freezer", "sigstop".
const char* freezeMethodName(FreezeMethod method) noexcept;

// Which mechanisms a freeze may use.
enum class FreezePreference {
  kBest,         // the cgroup freezer where usable, else SIGSTOP
  kSigstopOnly,  // SIGSTOP even where the freezer is usable (tests; hosts whose freezer is shared)
};

// One line of /proc/<pid>/stat, the parts a freeze needs.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';               // R S D T t Z X ...
  unsigned long long starttime = 0;  // clock ticks after boot: with pid, the process's identity
  bool operator==(const ProcStat&) const = default;
};
// Pure: parses the text of /proc/<pid>/stat (the command may hold spaces and
// parentheses: fields are counted after the last ')').
std::optional<ProcStat> parseProcStat(std::string_view text);
// Pure: the processes of `all` in the trees rooted at `roots` (roots included).
std::vector<ProcStat> descendantsOf(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots);
// Every process of the host, from /proc.
std::vector<ProcStat> listProcesses();

struct FreezeFailure {
  enum class Kind {
    kNotQuiescent,  // some process did not stop in time (uninterruptible sleep, ...)
    kTimeout,       // the caller's deadline passed
    kError,         // a call failed (the message names it)
  };
  Kind kind = Kind::kError;
  std::string message;
};

// Frozen processes; thawed on destruction if not before. Move-only.
class FrozenProcesses {
 public:
  FrozenProcesses() = default;
  FrozenProcesses(FrozenProcesses&& other) noexcept;
  FrozenProcesses& operator=(FrozenProcesses&& other) noexcept;
  FrozenProcesses(const FrozenProcesses&) = delete;
  FrozenProcesses& operator=(const FrozenProcesses&) = delete;
  ~FrozenProcesses();

  FreezeMethod method() const noexcept { return method_; }
  std::size_t count() const noexcept { return processes_.size(); }
  // Resumes every process; idempotent. Returns the first failure (and goes on
  // with the rest).
  std::optional<SysError> thaw();

 private:
  friend std::variant<FrozenProcesses, FreezeFailure> freezeProcessTrees(
      const std::function<std::vector<pid_t>()>&, FreezePreference, std::chrono::steady_clock::time_point,
      std::chrono::steady_clock::time_point);
  struct Process {
    ProcStat stat;
    UniqueFd pidfd;             // sigstop: to signal exactly this process
    std::string originalCgroup; // freezer: the cgroup to move it back to
    bool wasStopped = false;    // sigstop: stopped before we came; left stopped
  };
  FreezeMethod method_ = FreezeMethod::kSigstop;
  std::vector<Process> processes_;
  std::string cgroupDir_;  // freezer: ours, removed on thaw
  bool thawed_ = true;
};

// Freezes every process of the trees `roots()` names (called on every pass:
// the set of roots may change), all stopped by `quiescentBy` or kNotQuiescent,
// everything undone past `deadline` (kTimeout). Nothing stays frozen on failure.
std::variant<FrozenProcesses, FreezeFailure> freezeProcessTrees(const std::function<std::vector<pid_t>()>& roots,
                                                                FreezePreference preference,
                                                                std::chrono::steady_clock::time_point quiescentBy,
                                                                std::chrono::steady_clock::time_point deadline);

}  // namespace stockade::platform
