// SandboxManager / SandboxHandle (shared/seeds/001_*): the process-global
// sandbox capability that host applications link against.
//
// THIS IS A PROCESS-GLOBAL CAPABILITY WEARING A PER-HANDLE API. The first
// createSandbox() in a process admits a policy (the admission baseline); every
// later createSandbox() or narrow() may only narrow it, and narrowing through
// any handle narrows the live rules for every handle and every running child
// (its proxy reads the live network rules per connection). One policy per
// process is the safe deployment: tenants with different policies want
// separate processes.
//
// Thread-safety: every member function may be called from any thread,
// concurrently with any other (run() beside narrow() beside dispose()).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/error.h"
#include "stockade/policy.h"
#include "stockade/process.h"
#include "stockade/rules.h"

namespace stockade {

// Opaque token issued with a handle and invalidated by dispose(). Readers that
// outlive a turn hold it instead of a filesystem reference.
class Epoch {
 public:
  Epoch() = default;
  bool operator==(const Epoch&) const = default;
  std::string text() const;  // for logs: "g3.e7"

 private:
  friend class SandboxManager;
  friend class SandboxHandle;
  Epoch(std::uint64_t generation, std::uint64_t serial) : generation_(generation), serial_(serial) {}
  std::uint64_t generation_ = 0;  // 0: never issued
  std::uint64_t serial_ = 0;
};

struct Completion {
  int exitCode = 0;                        // the exit code, or 128 + signal
  bool failed = false;                     // exitCode != 0
  std::optional<std::string> signalCode;   // "SIGKILL" when a signal ended it
  // The whole-sandbox limit the child reached: "limits.memoryBytes" or
  // "limits.cpuSeconds" (the sandbox was killed for it: exitCode 137),
  // "limits.pids" (a fork failed with EAGAIN; the exit is the program's own).
  std::optional<std::string> limit;
};

// How the sandbox is made (createSandbox()).
struct SandboxOptions {
  // An existing host directory the sandbox's children see at /workspace
  // (and at its own path, under the same rules), their default cwd; relative
  // policy paths resolve against it. Unset: no workspace -- children see the
  // host's paths only, and relative policy paths resolve against this
  // process's cwd.
  std::optional<std::string> workspace;
};

struct RunOptions {
  std::vector<std::string> argv;           // non-empty; run directly, not through a shell
  std::string correlationId;               // non-empty; appears in audit events
  std::string cwd;                         // absolute, in the sandbox's view (/workspace... with a workspace)
  // An ADDITIVE overlay on the child's environment, applied last. It never
  // widens what the deployment allowed: the proxy variables stay stockade's,
  // and names are [A-Za-z_][A-Za-z0-9_]* not starting with "_t".
  std::map<std::string, std::string> env;
  // Per-call policy: its filesystem part REPLACES the session's for this one
  // child and must be a narrowing of it; its network part must equal the
  // session's (as a set) or strictly narrow it, honoured for this child alone.
  // Like every policy it is complete: a field it leaves out takes the bundled
  // default's value (policy.h), never the session's.
  std::optional<SandboxPolicy> policy;
  std::stop_token stop;                    // stop: kill the child's process group, settle `completed`
  // NAME -> IP literal, used by the proxy instead of DNS for this child (the
  // CLI's --resolve). Trusted operator configuration: the address counts as
  // explicitly allowed, but a name the policy does not allow stays denied.
  std::map<std::string, std::string> resolve;
};

struct RunOutput {
  std::string out;
  std::string err;
  Completion completion;
};

// A spawned child. Move-only. Destroying a Run does not kill the child; stop
// its token or dispose() the sandbox for that.
class Run {
 public:
  Run(Run&&) noexcept;
  Run& operator=(Run&&) noexcept;
  ~Run();

  // Read ends of the child's stdout and stderr, owned by the Run. Drain BOTH
  // concurrently (collect() does): pipe buffers are per-fd, so draining one
  // to completion first can block the other and hang the child.
  int stdoutFd() const noexcept;
  int stderrFd() const noexcept;
  // Write end of the child's stdin; closeStdin() sends EOF.
  int stdinFd() const noexcept;
  void closeStdin() noexcept;

  const std::string& runId() const noexcept;

  // Settles when the child has exited; a non-zero exit is data, never an exception.
  std::shared_future<Completion> completed;

  // Closes stdin, drains stdout and stderr concurrently to EOF, then waits
  // for `completed`.
  RunOutput collect();

 private:
  friend class SandboxHandle;
  struct State;
  explicit Run(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class SandboxManager;
namespace detail {
struct ManagerState;
}

// A view of the process-global sandbox. Copyable: copies share the epoch.
class SandboxHandle {
 public:
  // The live DERIVED rules, never the requested policy. An owned handle
  // returns the rules cached at the last admission or narrowing; an ADOPTED
  // handle re-derives them from the live manager on every call.
  // Throws E_SANDBOX_NOT_INITIALIZED after dispose().
  DerivedRules effectivePolicy() const;

  Epoch epoch() const noexcept { return epoch_; }
  bool isEpochLive(const Epoch& epoch) const noexcept;
  bool isAdopted() const noexcept { return adopted_; }

  // Narrows the process-global live policy for every handle and every running
  // child (network rules apply at a child's next connection; a running child's
  // filesystem view is fixed at its spawn). Waits for spawns in flight, so
  // every run() that starts after narrow() returns gets the narrowed rules. Throws
  // E_SANDBOX_POLICY_CONFLICT naming the widening axis and entry, or
  // E_SANDBOX_NARROWING_UNSUPPORTED naming an axis this host cannot narrow.
  void narrow(const SandboxPolicy& policy);

  // Spawns under the live policy (or a per-call one) after re-deriving the
  // rules from their live sources: if anything widened since admission, the
  // spawn is refused with E_SANDBOX_POLICY_DRIFT naming the entry. Returns as
  // soon as the child is spawned. Caller bugs (empty argv, relative cwd, bad
  // env names, empty correlationId) throw std::invalid_argument.
  Run run(RunOptions options);

  // Quiesces the sandbox: rejects new work with E_SANDBOX_NOT_INITIALIZED,
  // kills in-flight children's process groups and settles their `completed`,
  // releases proxy listeners, and kills the epoch. On an ADOPTED handle this
  // is a reported no-op: returns false and changes nothing. True otherwise.
  bool dispose();

  // The process service of this sandbox (process.h): detached processes,
  // logs with cursors, sessions, PTYs. After dispose() its calls answer stale_epoch.
  ProcessService processes() const;

 private:
  friend class SandboxManager;
  SandboxHandle(std::shared_ptr<detail::ManagerState> state, Epoch epoch, bool adopted)
      : state_(std::move(state)), epoch_(epoch), adopted_(adopted) {}
  void requireLive(std::string_view what) const;  // caller holds the state's lock
  std::shared_ptr<detail::ManagerState> state_;
  Epoch epoch_;
  bool adopted_ = false;
};

class SandboxManager {
 public:
  static SandboxManager& instance();

  // The first call admits `policy` (derived against the workspace, else this
  // process's cwd, and HOME) as the baseline, with `options`' workspace
  // (std::invalid_argument naming it when it is not an existing directory).
  // A later call must be a narrowing of the live policy, which it then
  // narrows for every handle, and name no other workspace; otherwise it
  // throws E_SANDBOX_POLICY_CONFLICT naming both policies by fingerprint and
  // the widening entry (or both workspaces).
  SandboxHandle createSandbox(const SandboxPolicy& policy, const SandboxOptions& options = {});

  // A handle over the sandbox someone else in this process created.
  // Throws E_SANDBOX_NOT_INITIALIZED when there is none.
  SandboxHandle adopt();

  bool initialized() const;

  // Receives one JSON object per line for every audit event (admit, narrow,
  // spawn, spawn_failed, drift, denial, proxy, exit, dispose, ...), from any
  // thread, one at a time. Every event has "time" (ISO 8601 UTC with
  // milliseconds: "2025-01-02T03:04:05.678Z"), "event" and "sandboxId"; a
  // child's events name it by "runId" or "processId". Strings are escaped so
  // that no control or non-ASCII byte appears raw. Repeats of one decision
  // (the same proxy verdict for the same destination, the same denied
  // syscall) are written once and then counted: one later event with
  // "repeated": true, "count", "firstTime" and "lastTime". Without a sink
  // events go to stderr through spdlog's "stockade" logger. A sink only
  // records: it runs on threads that run() and dispose() wait for, so calling
  // createSandbox/narrow/run/dispose from it throws std::logic_error, and an
  // exception thrown by the sink is logged and otherwise ignored.
  void setAuditSink(std::function<void(const std::string& jsonLine)> sink);
  // At most `maxEventsPerSandbox` decisions (denials, proxy verdicts) are
  // written per sandbox (0: no cap; default 10000); past it they are
  // counted, and the sandbox's end writes one "audit_dropped" event with the
  // count. The one-off events (admit, spawn, exit, ...) are always written.
  void setAuditLimits(std::size_t maxEventsPerSandbox);
  // Output retained per process-service process (default 1 MiB) and for all
  // of them together (default 256 MiB); the oldest output goes first, and
  // what went is reported (ProcessDto::truncatedHead, LogsPage). Applies to
  // sandboxes created afterwards.
  void setProcessLogLimits(std::size_t bytesPerProcess, std::size_t bytesTotal);

  // Tests only: disposes whatever is live. Never call it on a production path.
  void resetForTesting();

  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;

 private:
  SandboxManager();
  ~SandboxManager();
  std::shared_ptr<detail::ManagerState> state_;
};

}  // namespace stockade
