// The daemon's durable state: SQLite in WAL mode, one file in --state-dir.
// Sandboxes are rows that survive a restart; every effect that starts or
// stops a process is written before it is dispatched, under its processKey,
// with what identifies the process beyond its pid, and updated when it ends.
//
// Durability: WAL with synchronous=NORMAL. A commit survives a crash of the
// daemon (kill -9) at once; after a power loss the last commits may be
// gone, but so are the processes they describe (boot ids differ).
//
// Thread-safety: every member function may be called from any thread (one
// connection behind a mutex). SQLite failures throw LedgerError naming the
// statement and SQLite's message; they are I/O failures, never bad input.
// Snapshots are kept under their operation keys (a SnapshotLedger).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "platform/linux/process_identity.h"
#include "stockade/snapshot.h"

struct sqlite3;
struct sqlite3_stmt;

namespace stockade::ledger {

// Statements prepared once per connection, by their SQL.
using StatementCache = std::unordered_map<std::string, sqlite3_stmt*>;

class LedgerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "2026-05-01T12:00:00.123Z"
std::string utcTimestamp(std::chrono::system_clock::time_point t = std::chrono::system_clock::now());

enum class SandboxState {
  kActive,
  kReleasing,      // a close is under way (or was, when the daemon died)
  kReleaseFailed,  // a close failed; the collection pass retries it
  kReleased,       // closed: its epoch is stale
};
std::string_view sandboxStateName(SandboxState s) noexcept;  // "active", "releasing", "release_failed", "released"

struct SandboxRecord {
  std::string id;
  std::string policyJson;   // the live policy as admitted or last narrowed
  std::string fingerprint;  // of its derived rules
  std::string workspace;    // host directory
  bool workspaceOwned = false;  // created by the daemon, removed at release
  std::string epoch;
  SandboxState state = SandboxState::kActive;
  std::string createdAt;
  std::string updatedAt;
  std::string releaseError;  // the last failure, for release_failed
  int releaseAttempts = 0;
};

enum class ProcessState {
  kDispatching,  // written before the spawn; the spawn may or may not have happened
  kRunning,      // spawned: `identity` names it
  kExited,       // ended on its own (exit code or signal)
  kKilled,       // ended by a kill, a delete, a terminate or its sandbox's close
  kLost,         // its daemon died while it ran; see `termination`
  kFailed,       // the spawn failed: it never ran
};
std::string_view processStateName(ProcessState s) noexcept;

// How a lost process ended, as the restarted daemon found it.
enum class Termination {
  kNone,
  kTerminated,     // alive at the restart: killed, confirmed gone
  kAlreadyExited,  // gone before the restart looked
  kUnconfirmed,    // it could not be identified (no identity recorded) or not killed
};
std::string_view terminationName(Termination t) noexcept;

struct ProcessRecord {
  std::string processKey;
  std::string sandboxId;
  std::string processId;
  ProcessState state = ProcessState::kDispatching;
  std::optional<platform::ProcessIdentity> identity;  // the group's leader (the sandbox's init)
  std::string cgroup;  // its own cgroup, if any
  std::optional<int> exitCode;
  std::optional<int> signal;
  Termination termination = Termination::kNone;
  std::string detail;
  std::string createdAt, startedAt, endedAt;
};

class Ledger {
 public:
  // Opens (creating) the ledger file, in WAL mode, and brings its schema up
  // to date. The error names the file and SQLite's message.
  static std::variant<std::unique_ptr<Ledger>, std::string> open(const std::string& path);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // ---- sandboxes
  void insertSandbox(const SandboxRecord& r);
  std::optional<SandboxRecord> sandbox(std::string_view id);
  // Every sandbox not yet released, in the order they were created.
  std::vector<SandboxRecord> liveSandboxes();
  std::vector<SandboxRecord> sandboxesIn(SandboxState state);
  std::size_t liveSandboxCount();
  void updatePolicy(std::string_view id, const std::string& policyJson, const std::string& fingerprint);
  void setSandboxState(std::string_view id, SandboxState state, const std::string& releaseError = "");

  // ---- processes: the start effect
  // Written before the spawn. False when the key is already recorded.
  bool beginStart(const std::string& processKey, const std::string& sandboxId, const std::string& processId);
  // `processId` is the id the process service gave it (known once it started).
  void markStarted(std::string_view processKey, const std::string& processId,
                   const platform::ProcessIdentity& identity, const std::string& cgroup);
  // state is kExited, kKilled or kFailed.
  void markEnded(std::string_view processKey, ProcessState state, std::optional<int> exitCode,
                 std::optional<int> signal, const std::string& detail = "");
  void markLost(std::string_view processKey, Termination termination, const std::string& detail);
  std::optional<ProcessRecord> process(std::string_view processKey);
  // Dispatching or running: what a restart must look after. Empty id: all.
  std::vector<ProcessRecord> unfinished(std::string_view sandboxId = {});
  std::vector<ProcessRecord> processesOf(std::string_view sandboxId);

  // ---- stop effects (signal, terminate, release), written before dispatch
  std::int64_t beginEffect(std::string_view processKey, std::string_view op, std::string_view detail);
  void endEffect(std::int64_t seq, bool ok, std::string_view detail = {});
  struct Effect {
    std::int64_t seq = 0;
    std::string processKey, op, detail, state, beganAt, endedAt;
  };
  std::vector<Effect> effectsOf(std::string_view processKey);

  // ---- snapshots, by operation key (stockade/snapshot.h): a record is
  // fsync()ed before recordSnapshot() returns (synchronous=FULL for it).
  void recordSnapshot(const SnapshotRecord& record);
  std::optional<SnapshotRecord> findSnapshot(std::string_view operationKey);

 private:
  explicit Ledger(sqlite3* db) : db_(db) {}
  std::mutex mu_;
  sqlite3* db_;
  // Under mu_.
  StatementCache statements_;
};

// The ledger as a SnapshotStore's ledger: its failures are unavailable.
class LedgerSnapshots final : public SnapshotLedger {
 public:
  explicit LedgerSnapshots(Ledger& ledger) : ledger_(ledger) {}
  WorkspaceResult<std::optional<SnapshotRecord>> find(std::string_view operationKey) override;
  WorkspaceStatus record(const SnapshotRecord& record) override;

 private:
  Ledger& ledger_;
};

}  // namespace stockade::ledger
