#include "src/ledger/ledger.h"

#include <sqlite3.h>

#include <ctime>

namespace stockade::ledger {

namespace {

// Version 1: sandboxes, processes, effects. Version 2 adds snapshots.
constexpr int kSchemaVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS sandboxes (
  id TEXT PRIMARY KEY,
  policy TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  workspace TEXT NOT NULL,
  workspace_owned INTEGER NOT NULL,
  epoch TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  release_error TEXT NOT NULL DEFAULT '',
  release_attempts INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS processes (
  process_key TEXT PRIMARY KEY,
  sandbox_id TEXT NOT NULL,
  process_id TEXT NOT NULL,
  state TEXT NOT NULL,
  pid INTEGER,
  start_time INTEGER,
  boot_id TEXT,
  cgroup TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  signal INTEGER,
  termination TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  started_at TEXT NOT NULL DEFAULT '',
  ended_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS processes_by_sandbox ON processes(sandbox_id);
CREATE INDEX IF NOT EXISTS processes_unfinished ON processes(state) WHERE state IN ('dispatching', 'running');
CREATE TABLE IF NOT EXISTS effects (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  process_key TEXT NOT NULL,
  op TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  began_at TEXT NOT NULL,
  ended_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS effects_by_key ON effects(process_key);
CREATE TABLE IF NOT EXISTS snapshots (
  operation_key TEXT PRIMARY KEY,
  snapshot_id TEXT NOT NULL,
  sandbox_id TEXT NOT NULL,
  state TEXT NOT NULL,
  sha256 TEXT NOT NULL DEFAULT '',
  size INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT '',
  freeze_method TEXT NOT NULL DEFAULT '',
  frozen_processes INTEGER NOT NULL DEFAULT 0,
  failure TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL
);
)sql";

// One prepared statement: from `cache` when given one (prepared once per
// connection, reset and unbound when this is done with it; callers hold the
// ledger's mutex and never nest, so one statement is borrowed at a time),
// else prepared here and finalized at the end. Every failure throws
// LedgerError naming the SQL.
class Stmt {
 public:
  Stmt(sqlite3* db, std::string sql) : Stmt(nullptr, db, std::move(sql)) {}
  Stmt(StatementCache* cache, sqlite3* db, std::string sql) : db_(db), sql_(std::move(sql)), cached_(cache) {
    if (cache) {
      sqlite3_stmt*& slot = (*cache)[sql_];
      if (!slot) prepare(&slot, SQLITE_PREPARE_PERSISTENT);
      s_ = slot;
    } else {
      prepare(&s_, 0);
    }
  }
  ~Stmt() {
    if (!cached_) {
      sqlite3_finalize(s_);
      return;
    }
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::string_view v) {
    // A null pointer would bind NULL, not "".
    check(sqlite3_bind_text(s_, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& bind(int i, std::optional<int> v) {
    check(v ? sqlite3_bind_int64(s_, i, *v) : sqlite3_bind_null(s_, i));
    return *this;
  }
  // True for a row, false when done.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("step");
  }
  void run() {
    while (step()) {
    }
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(s_, col); }
  bool isNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::optional<int> optInt(int col) const {
    return isNull(col) ? std::nullopt : std::optional<int>(static_cast<int>(integer(col)));
  }

 private:
  void prepare(sqlite3_stmt** out, unsigned flags) {
    if (sqlite3_prepare_v3(db_, sql_.c_str(), -1, flags, out, nullptr) == SQLITE_OK) return;
    sqlite3_finalize(*out);
    *out = nullptr;
    fail("prepare");
  }
  void check(int rc) {
    if (rc != SQLITE_OK) fail("bind");
  }
  [[noreturn]] void fail(const char* what) {
    std::string sql = sql_.size() > 60 ? sql_.substr(0, 60) + "..." : sql_;
    throw LedgerError(std::string("ledger: sqlite3_") + what + "(\"" + sql + "\") failed: " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  std::string sql_;
  bool cached_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw LedgerError(std::string("ledger: ") + msg);
  }
}

SandboxState sandboxStateFrom(const std::string& s) {
  if (s == "releasing") return SandboxState::kReleasing;
  if (s == "release_failed") return SandboxState::kReleaseFailed;
  if (s == "released") return SandboxState::kReleased;
  return SandboxState::kActive;
}

ProcessState processStateFrom(const std::string& s) {
  if (s == "running") return ProcessState::kRunning;
  if (s == "exited") return ProcessState::kExited;
  if (s == "killed") return ProcessState::kKilled;
  if (s == "lost") return ProcessState::kLost;
  if (s == "failed") return ProcessState::kFailed;
  return ProcessState::kDispatching;
}

Termination terminationFrom(const std::string& s) {
  if (s == "terminated") return Termination::kTerminated;
  if (s == "already_exited") return Termination::kAlreadyExited;
  if (s == "unconfirmed") return Termination::kUnconfirmed;
  return Termination::kNone;
}

constexpr const char* kSandboxColumns =
    "id, policy, fingerprint, workspace, workspace_owned, epoch, state, created_at, updated_at, release_error, "
    "release_attempts";

SandboxRecord sandboxFrom(const Stmt& s) {
  SandboxRecord r;
  r.id = s.text(0);
  r.policyJson = s.text(1);
  r.fingerprint = s.text(2);
  r.workspace = s.text(3);
  r.workspaceOwned = s.integer(4) != 0;
  r.epoch = s.text(5);
  r.state = sandboxStateFrom(s.text(6));
  r.createdAt = s.text(7);
  r.updatedAt = s.text(8);
  r.releaseError = s.text(9);
  r.releaseAttempts = static_cast<int>(s.integer(10));
  return r;
}

constexpr const char* kProcessColumns =
    "process_key, sandbox_id, process_id, state, pid, start_time, boot_id, cgroup, exit_code, signal, termination, "
    "detail, created_at, started_at, ended_at";

ProcessRecord processFrom(const Stmt& s) {
  ProcessRecord r;
  r.processKey = s.text(0);
  r.sandboxId = s.text(1);
  r.processId = s.text(2);
  r.state = processStateFrom(s.text(3));
  if (!s.isNull(4))
    r.identity = platform::ProcessIdentity{static_cast<pid_t>(s.integer(4)), static_cast<std::uint64_t>(s.integer(5)),
                                           s.text(6)};
  r.cgroup = s.text(7);
  r.exitCode = s.optInt(8);
  r.signal = s.optInt(9);
  r.termination = terminationFrom(s.text(10));
  r.detail = s.text(11);
  r.createdAt = s.text(12);
  r.startedAt = s.text(13);
  r.endedAt = s.text(14);
  return r;
}

}  // namespace

std::string utcTimestamp(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string_view sandboxStateName(SandboxState s) noexcept {
  switch (s) {
    case SandboxState::kActive: return "active";
    case SandboxState::kReleasing: return "releasing";
    case SandboxState::kReleaseFailed: return "release_failed";
    case SandboxState::kReleased: return "released";
  }
  return "active";
}

std::string_view processStateName(ProcessState s) noexcept {
  switch (s) {
    case ProcessState::kDispatching: return "dispatching";
    case ProcessState::kRunning: return "running";
    case ProcessState::kExited: return "exited";
    case ProcessState::kKilled: return "killed";
    case ProcessState::kLost: return "lost";
    case ProcessState::kFailed: return "failed";
  }
  return "dispatching";
}

std::string_view terminationName(Termination t) noexcept {
  switch (t) {
    case Termination::kNone: return "";
    case Termination::kTerminated: return "terminated";
    case Termination::kAlreadyExited: return "already_exited";
    case Termination::kUnconfirmed: return "unconfirmed";
  }
  return "";
}

std::variant<std::unique_ptr<Ledger>, std::string> Ledger::open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string err = path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return err;
  }
  std::unique_ptr<Ledger> ledger(new Ledger(db));
  try {
    sqlite3_busy_timeout(db, 5000);
    {
      // journal_mode answers with the mode it ended up in.
      Stmt wal(db, "PRAGMA journal_mode=WAL");
      if (!wal.step() || wal.text(0) != "wal") return path + ": SQLite would not switch to WAL mode";
    }
    exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
    int current = 0;
    {
      Stmt version(db, "PRAGMA user_version");
      if (version.step()) current = static_cast<int>(version.integer(0));
    }
    if (current > kSchemaVersion)
      return path + ": written by a newer stockaded (schema " + std::to_string(current) + ", this one knows " +
             std::to_string(kSchemaVersion) + ")";
    exec(db, "BEGIN IMMEDIATE");
    exec(db, kSchema);
    exec(db, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
    exec(db, "COMMIT");
  } catch (const LedgerError& e) {
    return path + ": " + e.what();
  }
  return ledger;
}

Ledger::~Ledger() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

void Ledger::insertSandbox(const SandboxRecord& r) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "INSERT INTO sandboxes (id, policy, fingerprint, workspace, workspace_owned, epoch, state, created_at, "
         "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)");
  s.bind(1, r.id).bind(2, r.policyJson).bind(3, r.fingerprint).bind(4, r.workspace);
  s.bind(5, std::int64_t{r.workspaceOwned ? 1 : 0}).bind(6, r.epoch).bind(7, sandboxStateName(r.state));
  s.bind(8, r.createdAt.empty() ? utcTimestamp() : r.createdAt);
  s.run();
}

std::optional<SandboxRecord> Ledger::sandbox(std::string_view id) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_, std::string("SELECT ") + kSandboxColumns + " FROM sandboxes WHERE id = ?1");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return sandboxFrom(s);
}

std::vector<SandboxRecord> Ledger::liveSandboxes() {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         std::string("SELECT ") + kSandboxColumns + " FROM sandboxes WHERE state != 'released' ORDER BY rowid");
  std::vector<SandboxRecord> out;
  while (s.step()) out.push_back(sandboxFrom(s));
  return out;
}

std::vector<SandboxRecord> Ledger::sandboxesIn(SandboxState state) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         std::string("SELECT ") + kSandboxColumns + " FROM sandboxes WHERE state = ?1 ORDER BY rowid");
  s.bind(1, sandboxStateName(state));
  std::vector<SandboxRecord> out;
  while (s.step()) out.push_back(sandboxFrom(s));
  return out;
}

std::size_t Ledger::liveSandboxCount() {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_, "SELECT COUNT(*) FROM sandboxes WHERE state != 'released'");
  return s.step() ? static_cast<std::size_t>(s.integer(0)) : 0;
}

void Ledger::updatePolicy(std::string_view id, const std::string& policyJson, const std::string& fingerprint) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_, "UPDATE sandboxes SET policy = ?2, fingerprint = ?3, updated_at = ?4 WHERE id = ?1");
  s.bind(1, id).bind(2, policyJson).bind(3, fingerprint).bind(4, utcTimestamp());
  s.run();
}

void Ledger::setSandboxState(std::string_view id, SandboxState state, const std::string& releaseError) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "UPDATE sandboxes SET state = ?2, release_error = ?3, updated_at = ?4, "
         "release_attempts = release_attempts + (CASE WHEN ?2 = 'release_failed' THEN 1 ELSE 0 END) WHERE id = ?1");
  s.bind(1, id).bind(2, sandboxStateName(state)).bind(3, releaseError).bind(4, utcTimestamp());
  s.run();
}

bool Ledger::beginStart(const std::string& processKey, const std::string& sandboxId, const std::string& processId) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "INSERT OR IGNORE INTO processes (process_key, sandbox_id, process_id, state, created_at) "
         "VALUES (?1, ?2, ?3, 'dispatching', ?4)");
  s.bind(1, processKey).bind(2, sandboxId).bind(3, processId).bind(4, utcTimestamp());
  s.run();
  return sqlite3_changes(db_) == 1;
}

void Ledger::markStarted(std::string_view processKey, const std::string& processId,
                         const platform::ProcessIdentity& identity, const std::string& cgroup) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "UPDATE processes SET state = 'running', pid = ?2, start_time = ?3, boot_id = ?4, cgroup = ?5, "
         "started_at = ?6, process_id = CASE WHEN ?7 = '' THEN process_id ELSE ?7 END WHERE process_key = ?1");
  s.bind(1, processKey).bind(2, std::int64_t{identity.pid}).bind(3, static_cast<std::int64_t>(identity.startTime));
  s.bind(4, identity.bootId).bind(5, cgroup).bind(6, utcTimestamp()).bind(7, processId);
  s.run();
}

void Ledger::markEnded(std::string_view processKey, ProcessState state, std::optional<int> exitCode,
                       std::optional<int> signal, const std::string& detail) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "UPDATE processes SET state = ?2, exit_code = ?3, signal = ?4, detail = ?5, ended_at = ?6 "
         "WHERE process_key = ?1");
  s.bind(1, processKey).bind(2, processStateName(state)).bind(3, exitCode).bind(4, signal).bind(5, detail);
  s.bind(6, utcTimestamp());
  s.run();
}

void Ledger::markLost(std::string_view processKey, Termination termination, const std::string& detail) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "UPDATE processes SET state = 'lost', termination = ?2, detail = ?3, ended_at = ?4 WHERE process_key = ?1");
  s.bind(1, processKey).bind(2, terminationName(termination)).bind(3, detail).bind(4, utcTimestamp());
  s.run();
}

std::optional<ProcessRecord> Ledger::process(std::string_view processKey) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_, std::string("SELECT ") + kProcessColumns + " FROM processes WHERE process_key = ?1");
  s.bind(1, processKey);
  if (!s.step()) return std::nullopt;
  return processFrom(s);
}

std::vector<ProcessRecord> Ledger::unfinished(std::string_view sandboxId) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         std::string("SELECT ") + kProcessColumns +
             " FROM processes WHERE state IN ('dispatching', 'running') AND (?1 = '' OR sandbox_id = ?1) "
             "ORDER BY created_at");
  s.bind(1, sandboxId);
  std::vector<ProcessRecord> out;
  while (s.step()) out.push_back(processFrom(s));
  return out;
}

std::vector<ProcessRecord> Ledger::processesOf(std::string_view sandboxId) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         std::string("SELECT ") + kProcessColumns + " FROM processes WHERE sandbox_id = ?1 ORDER BY created_at");
  s.bind(1, sandboxId);
  std::vector<ProcessRecord> out;
  while (s.step()) out.push_back(processFrom(s));
  return out;
}

std::int64_t Ledger::beginEffect(std::string_view processKey, std::string_view op, std::string_view detail) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "INSERT INTO effects (process_key, op, detail, state, began_at) VALUES (?1, ?2, ?3, 'begun', ?4)");
  s.bind(1, processKey).bind(2, op).bind(3, detail).bind(4, utcTimestamp());
  s.run();
  return sqlite3_last_insert_rowid(db_);
}

void Ledger::endEffect(std::int64_t seq, bool ok, std::string_view detail) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "UPDATE effects SET state = ?2, ended_at = ?3, detail = CASE WHEN ?4 = '' THEN detail ELSE ?4 END "
         "WHERE seq = ?1");
  s.bind(1, seq).bind(2, ok ? std::string_view("done") : std::string_view("failed")).bind(3, utcTimestamp());
  s.bind(4, detail);
  s.run();
}

std::vector<Ledger::Effect> Ledger::effectsOf(std::string_view processKey) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "SELECT seq, process_key, op, detail, state, began_at, ended_at FROM effects WHERE process_key = ?1 "
         "ORDER BY seq");
  s.bind(1, processKey);
  std::vector<Effect> out;
  while (s.step())
    out.push_back(Effect{s.integer(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)});
  return out;
}

namespace {

std::string_view snapshotStateName(SnapshotRecord::State s) noexcept {
  switch (s) {
    case SnapshotRecord::State::kCapturing: return "capturing";
    case SnapshotRecord::State::kComplete: return "complete";
    case SnapshotRecord::State::kFailed: return "failed";
  }
  return "failed";
}

SnapshotRecord::State snapshotStateFrom(const std::string& s) {
  if (s == "capturing") return SnapshotRecord::State::kCapturing;
  if (s == "complete") return SnapshotRecord::State::kComplete;
  return SnapshotRecord::State::kFailed;
}

}  // namespace

void Ledger::recordSnapshot(const SnapshotRecord& r) {
  std::lock_guard lock(mu_);
  SnapshotInfo info = r.info.value_or(SnapshotInfo{});
  // synchronous=FULL for this commit: the WAL is fsync()ed before it returns
  // (a snapshot is promised durable, not just crash-safe).
  exec(db_, "PRAGMA synchronous=FULL");
  struct Restore {
    sqlite3* db;
    ~Restore() { sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr); }
  } restore{db_};
  Stmt s(&statements_, db_,
         "INSERT INTO snapshots (operation_key, snapshot_id, sandbox_id, state, sha256, size, created_at, "
         "freeze_method, frozen_processes, failure, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
         "ON CONFLICT(operation_key) DO UPDATE SET snapshot_id = ?2, sandbox_id = ?3, state = ?4, sha256 = ?5, "
         "size = ?6, created_at = ?7, freeze_method = ?8, frozen_processes = ?9, failure = ?10, updated_at = ?11");
  s.bind(1, r.operationKey).bind(2, r.snapshotId).bind(3, r.sandboxId).bind(4, snapshotStateName(r.state));
  s.bind(5, info.sha256).bind(6, static_cast<std::int64_t>(info.size)).bind(7, info.createdAt);
  s.bind(8, info.freezeMethod).bind(9, static_cast<std::int64_t>(info.frozenProcesses)).bind(10, r.failure);
  s.bind(11, utcTimestamp());
  s.run();
}

std::optional<SnapshotRecord> Ledger::findSnapshot(std::string_view operationKey) {
  std::lock_guard lock(mu_);
  Stmt s(&statements_, db_,
         "SELECT operation_key, snapshot_id, sandbox_id, state, sha256, size, created_at, freeze_method, "
         "frozen_processes, failure FROM snapshots WHERE operation_key = ?1");
  s.bind(1, operationKey);
  if (!s.step()) return std::nullopt;
  SnapshotRecord r;
  r.operationKey = s.text(0);
  r.snapshotId = s.text(1);
  r.sandboxId = s.text(2);
  r.state = snapshotStateFrom(s.text(3));
  r.failure = s.text(9);
  if (r.state == SnapshotRecord::State::kComplete)
    r.info = SnapshotInfo{r.snapshotId, r.sandboxId,        r.operationKey,
                          s.text(4),    static_cast<std::uint64_t>(s.integer(5)), s.text(6),
                          s.text(7),    static_cast<std::uint64_t>(s.integer(8))};
  return r;
}

WorkspaceResult<std::optional<SnapshotRecord>> LedgerSnapshots::find(std::string_view operationKey) {
  try {
    return ledger_.findSnapshot(operationKey);
  } catch (const LedgerError& e) {
    return WorkspaceError{WorkspaceErrorCode::kUnavailable, e.what()};
  }
}

WorkspaceStatus LedgerSnapshots::record(const SnapshotRecord& record) {
  try {
    ledger_.recordSnapshot(record);
    return std::nullopt;
  } catch (const LedgerError& e) {
    return WorkspaceError{WorkspaceErrorCode::kUnavailable, e.what()};
  }
}

}  // namespace stockade::ledger
