// Snapshots (shared/seeds/000_*): the whole workspace captured while every
// process of the sandbox is frozen, durable before the call returns, found
// again by the caller's operation key if the response was lost, and a new
// sandbox's workspace created from it.
//
// snapshot(request):
//   1. the ledger records {operationKey, snapshotId, state: capturing}
//      durably, before anything is captured; a key already complete answers
//      with that snapshot (the call is idempotent per key);
//   2. the sandbox's processes are frozen (the cgroup v1 freezer where usable,
//      else SIGSTOP of each: SnapshotInfo::freezeMethod says which);
//   3. /workspace is exported (tar, as exportTree) into <stateDir>/snapshots
//      with its SHA-256; the processes are thawed as soon as the tree is read;
//   4. the archive, its record and their directory are fsync()ed, and the
//      ledger records the snapshot complete.
// Errors: not_quiescent (a process did not stop within quiesceTimeout;
// everything is thawed), timeout (the request's; everything is undone and
// thawed), stale_epoch, unavailable; restoreInto() adds
// SANDBOX_DATA_CORRUPTED (the archive does not match its SHA-256: nothing
// is placed) and invalid_archive (a name the new sandbox's policy refuses).
// Caller bugs (an empty or over-long operation key, a non-positive timeout)
// throw std::invalid_argument.
//
// Thread-safety: a SnapshotStore may be used from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/workspace.h"

namespace stockade {

struct SnapshotInfo {
  std::string id;            // "snap_<32 hex digits>"
  std::string sandboxId;
  std::string operationKey;
  std::string sha256;        // of the archive
  std::uint64_t size = 0;    // bytes of the archive
  std::string createdAt;     // ISO 8601 UTC
  std::string freezeMethod;  // "cgroup-v1-freezer" or "sigstop"
  std::uint64_t frozenProcesses = 0;
  bool operator==(const SnapshotInfo&) const = default;
};

// What the ledger keeps per operation key.
struct SnapshotRecord {
  enum class State { kCapturing, kComplete, kFailed };
  std::string operationKey;
  std::string snapshotId;
  std::string sandboxId;
  State state = State::kCapturing;
  std::optional<SnapshotInfo> info;  // kComplete
  std::string failure;               // kFailed: why
};

// Where snapshots are recorded under their operation keys: the daemon's
// ledger, or fileSnapshotLedger(). record() is durable when it returns.
class SnapshotLedger {
 public:
  virtual ~SnapshotLedger() = default;
  virtual WorkspaceResult<std::optional<SnapshotRecord>> find(std::string_view operationKey) = 0;
  virtual WorkspaceStatus record(const SnapshotRecord& record) = 0;
};
// A ledger of one fsync()ed JSON file per key in `dir` (created 0700).
std::shared_ptr<SnapshotLedger> fileSnapshotLedger(std::string dir);

struct SnapshotRequest {
  std::string sandboxId;
  std::string operationKey;  // 1-256 bytes
  // The host pids of the roots of the sandbox's process trees (the init of
  // each of its sandboxes); asked again on every pass of the freeze.
  std::function<std::vector<int>()> processRoots;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// How snapshots freeze processes.
enum class SnapshotFreezing {
  kBest,         // the cgroup freezer where usable, else SIGSTOP
  kSigstopOnly,  // SIGSTOP even where the freezer is usable
};

class SnapshotStore {
 public:
  struct Options {
    std::string stateDir;                      // snapshots live in <stateDir>/snapshots (created 0700)
    std::shared_ptr<SnapshotLedger> ledger;    // default: fileSnapshotLedger(<stateDir>/snapshots/keys)
    // How long every process may take to stop; one in uninterruptible sleep
    // (disk I/O under load) stops once it leaves it.
    std::chrono::milliseconds quiesceTimeout{30000};
    SnapshotFreezing freezing = SnapshotFreezing::kBest;
  };
  static WorkspaceResult<SnapshotStore> open(Options options);

  WorkspaceResult<SnapshotInfo> snapshot(Workspace& workspace, const SnapshotRequest& request);
  // lookupSnapshot(operationKey): the snapshot taken under the key, or
  // not_found (none, or one that never completed).
  WorkspaceResult<SnapshotInfo> lookup(std::string_view operationKey);
  WorkspaceResult<SnapshotInfo> get(std::string_view snapshotId);
  // Fills a new sandbox's workspace from a snapshot, after checking the
  // archive's size and SHA-256. Links are restored as the sandbox made them.
  WorkspaceStatus restoreInto(std::string_view snapshotId, Workspace& workspace);

  struct Impl;  // opaque (src/workspace)

 private:
  explicit SnapshotStore(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace stockade
