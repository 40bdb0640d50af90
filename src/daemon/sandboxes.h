// The daemon's sandboxes (shared/API.md, "Sandboxes"): each one a row of the
// ledger with its own policy, which must narrow the daemon's baseline
// (--policy, or the bundled default) and becomes that sandbox's live policy,
// its relative paths resolved against its workspace; its own epoch; narrowed
// only by its own `narrow`; closed by DELETE, which kills its processes,
// removes the workspace the daemon created for it and makes its epoch stale.
//
// The baseline's own relative paths resolve against the workspaces root
// (<state-dir>/workspaces): "." in the baseline means "the workspaces".
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/daemon/api_error.h"
#include "src/daemon/live_sandbox.h"
#include "src/daemon/requests.h"
#include "src/ledger/ledger.h"
#include "src/ledger/recovery.h"
#include "src/process/code_kernel.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"

namespace stockade::daemon {

// What no sandbox may read: the daemon's own files (the ledger and its WAL,
// the lock, the checkpoints and snapshots of every sandbox, the token file,
// the socket) are read-denied to every sandbox.
// The workspaces root is mode 0300: a sandbox (the daemon's uid, without
// capabilities) cannot list it to find another sandbox's workspace, whose
// name holds 128 random bits. (Denying the whole state dir and carving the
// sandbox's own workspace back out would be tighter, but the mount layer
// leaves a write-allowed tree inside a read-denied one read-only.)
struct DaemonFiles {
  std::string stateDir;
  std::optional<std::string> tokenFile;
  std::optional<std::string> socket;
};

struct SandboxLimits {
  std::size_t maxSandboxes = 256;             // not yet released: 503 beyond
  std::size_t maxProcessesPerSandbox = 1024;  // running at once: 503 beyond
  ProcessOptions processes;
  std::uint64_t maxFileBytes = std::uint64_t{8} << 30;  // one uploaded or downloaded file (too_large beyond)
};

// What GET /v1/sandboxes/{id} shows.
struct SandboxView {
  ledger::SandboxRecord record;
  std::optional<DerivedRules> rules;  // the live derived rules (nullopt when they could not be derived at load)
  std::string problem;                // why there are no rules
};

class Sandboxes {
 public:
  // Derives the baseline against `workspacesRoot` (created if missing);
  // throws std::runtime_error naming the policy entry that fails.
  // Every sandbox's processes run on `runtime` (one supervisor loop).
  Sandboxes(ledger::Ledger& ledger, process::Runtime& runtime, const SandboxPolicy& baseline,
            std::string workspacesRoot, SandboxLimits limits, DaemonFiles files);
  ~Sandboxes();

  // The rows a previous run left: live rules re-derived for each active one;
  // closes left unfinished are retried.
  void load();

  std::variant<SandboxView, ApiError> create(const CreateSandboxRequest& request);
  std::vector<ledger::SandboxRecord> list();
  // 404 for an unknown id, 409 stale_epoch for a released one.
  std::variant<SandboxView, ApiError> get(std::string_view id);
  // Narrows this sandbox's live policy (422 E_SANDBOX_POLICY_CONFLICT naming
  // the widening entry); no other sandbox changes.
  std::variant<SandboxView, ApiError> narrow(std::string_view id, const SandboxPolicy& policy);
  // Closes it; released already is fine. A failure leaves release_failed
  // (500 release_failed), retried by collect().
  std::optional<ApiError> close(std::string_view id);
  // A live sandbox and its process service (404, 409 stale_epoch otherwise).
  struct LiveHandle {
    std::string id;
    std::shared_ptr<LiveSandbox> sandbox;
    std::shared_ptr<process::ServiceCore> core;
    std::shared_ptr<process::CodeKernel> code;  // its code kernel (POST .../code)
  };
  std::variant<LiveHandle, ApiError> live(std::string_view id);
  // A live sandbox's workspace (stockade/workspace.h): its directory pinned
  // when the sandbox started, every operation judged by the sandbox's live
  // rules, stale_epoch once it is closed. 404, 409 as live().
  struct WorkspaceHandle {
    LiveHandle live;
    Workspace workspace;
  };
  std::variant<WorkspaceHandle, ApiError> workspace(std::string_view id);
  std::size_t maxProcesses() const { return limits_.maxProcessesPerSandbox; }
  std::uint64_t maxFileBytes() const { return limits_.maxFileBytes; }

  // Writes the end of every process the ledger still has running whose
  // record has ended (periodically, and after a close).
  void syncEnded();

  // terminate(processKey) for this sandbox: a running group is killed and
  // its end confirmed; an ended or recovered one is answered from the ledger.
  std::variant<ledger::TerminateAnswer, ApiError> terminate(std::string_view id, const std::string& processKey);
  // The collection pass (periodic): retries failed closes.
  int collect();

  const DerivedRules& baseline() const { return baseline_; }

 private:
  struct Entry {
    ledger::SandboxRecord record;
    std::optional<DerivedRules> rules;
    std::string problem;
    std::shared_ptr<LiveSandbox> live;  // its processes; null unless active
    std::shared_ptr<process::ServiceCore> core;
    std::uint64_t order = 0;  // creation order (timestamps can tie)
    std::optional<Workspace> workspace;  // set with `live`, unless it could not be opened:
    std::string workspaceProblem;        // why not
    std::shared_ptr<process::CodeKernel> code;  // set with `live`; its kernel's starts recorded in the ledger
  };
  void startLive(Entry& e, const SandboxPolicy& policy);
  DeriveContext contextFor(const std::string& workspace) const;
  // `policy` with the daemon's files denied (DaemonFiles): what a sandbox's
  // rules are derived from. Only narrower than `policy`.
  SandboxPolicy confined(const SandboxPolicy& policy, const std::string& workspace) const;
  std::optional<std::string> release(const ledger::SandboxRecord& record);
  // The entry for `id`, or the error for a missing or closed one; mu_ held.
  std::variant<Entry*, ApiError> liveEntry(std::string_view id);

  ledger::Ledger& ledger_;
  process::Runtime& runtime_;
  std::string workspacesRoot_;
  SandboxLimits limits_;
  DaemonFiles files_;
  DerivedRules baseline_;
  std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;  // every sandbox not yet released
  std::uint64_t nextOrder_ = 0;
};

}  // namespace stockade::daemon
