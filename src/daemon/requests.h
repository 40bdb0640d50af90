// Request bodies and query strings of the daemon's routes (shared/API.md),
// decoded into values. Pure: no I/O, never throws on bad input. Every error
// is 400 naming the field by its JSON path (or `query.NAME`), the value and
// what to send instead. Fuzzed by tests/fuzz/daemon_request_fuzz.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/daemon/api_error.h"
#include "src/daemon/routes.h"
#include "src/process/code_languages.h"
#include "stockade/policy.h"

namespace stockade::daemon {

template <class T>
using Decoded = std::variant<T, ApiError>;

// POST /v1/sandboxes
struct CreateSandboxRequest {
  std::optional<SandboxPolicy> policy;     // always set once decoded
  std::optional<std::string> workspace;    // an absolute host directory
  std::optional<std::string> fromSnapshot; // a snapshot id ("snap_..."): the new workspace's content
};
Decoded<CreateSandboxRequest> decodeCreateSandbox(std::string_view body);

// POST /v1/sandboxes/{id}/narrow
struct NarrowRequest {
  std::optional<SandboxPolicy> policy;  // always set once decoded
};
Decoded<NarrowRequest> decodeNarrow(std::string_view body);

// Signals a client may name (seed 003's ProcessSignal).
enum class Signal { kTerm, kKill, kInt, kHup, kQuit, kUsr1, kUsr2 };
std::string_view signalName(Signal s) noexcept;  // "TERM", ...
int signalNumber(Signal s) noexcept;             // SIGTERM, ...

enum class StdinMode { kClosed, kOpen };
enum class KeepLogs { kUntilCleanup, kOnExitTtl, kNone };
std::string_view keepLogsName(KeepLogs k) noexcept;  // "until_cleanup", ...

// POST /v1/sandboxes/{id}/processes (and /run, which adds `timeout`).
struct StartProcessRequest {
  std::optional<std::string> cmd;        // a shell command line, or
  std::vector<std::string> argv;         // the program and its arguments, no shell
  std::optional<std::string> name;
  std::optional<std::string> cwd;        // absolute, inside the sandbox
  std::map<std::string, std::string> env;
  std::optional<std::string> shell;      // bash, sh, dash, zsh, ksh (or an absolute path to one)
  StdinMode stdinMode = StdinMode::kClosed;
  std::optional<std::uint64_t> executionTimeoutMs;
  KeepLogs keepLogs = KeepLogs::kUntilCleanup;
  std::optional<std::string> processKey;
  std::optional<std::uint64_t> timeoutMs;  // run only: the caller's wait budget; 0 waits unbounded
};
Decoded<StartProcessRequest> decodeStartProcess(std::string_view body);
Decoded<StartProcessRequest> decodeRunProcess(std::string_view body);

// POST .../processes/{pid}/wait
struct WaitRequest {
  std::optional<std::uint64_t> timeoutMs;
};
Decoded<WaitRequest> decodeWait(std::string_view body);

// POST .../processes/{pid}/kill
struct KillRequest {
  Signal signal = Signal::kTerm;
  std::optional<std::uint64_t> escalateAfterMs;
  Signal escalateTo = Signal::kKill;
};
Decoded<KillRequest> decodeKill(std::string_view body);

// POST .../processes/{pid}/stdin
struct StdinRequest {
  std::string data;  // decoded bytes
  bool eof = false;
};
Decoded<StdinRequest> decodeStdin(std::string_view body);

// POST /v1/sandboxes/{id}/terminate
struct TerminateRequest {
  std::string processKey;
};
Decoded<TerminateRequest> decodeTerminate(std::string_view body);

// POST .../sessions
struct CreateSessionRequest {
  std::optional<std::string> cwd;
  std::map<std::string, std::string> env;
  std::optional<std::string> shell;
};
Decoded<CreateSessionRequest> decodeCreateSession(std::string_view body);

// POST .../sessions/{sid}/run and /start
struct SessionCommandRequest {
  std::string command;
  std::optional<std::uint64_t> executionTimeoutMs;
  std::optional<std::uint64_t> timeoutMs;  // run only
  std::optional<std::string> name;
  StdinMode stdinMode = StdinMode::kClosed;
  KeepLogs keepLogs = KeepLogs::kUntilCleanup;
};
Decoded<SessionCommandRequest> decodeSessionRun(std::string_view body);
Decoded<SessionCommandRequest> decodeSessionStart(std::string_view body);

// POST .../ptys and .../ptys/{pid}/resize
struct TerminalSize {
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
};
struct StartPtyRequest {
  std::optional<std::string> cmd;
  TerminalSize size;
  std::optional<std::string> cwd;
  std::map<std::string, std::string> env;
};
Decoded<StartPtyRequest> decodeStartPty(std::string_view body);
Decoded<TerminalSize> decodeResize(std::string_view body);

// POST .../code: {code, language?, timeout?}; timeout in seconds (seed
// 002's runCode), a fraction allowed, 0.001 to 86400.
using process::kCodeLanguages;
inline constexpr std::size_t kMaxCodeBytes = 1u << 20;
struct RunCodeRequest {
  std::string code;                  // 1 byte to kMaxCodeBytes, not only whitespace, no NUL
  std::string language = "python";   // one of process::kCodeLanguages
  std::optional<std::uint64_t> timeoutMs;
};
Decoded<RunCodeRequest> decodeRunCode(std::string_view body);

// GET .../processes?state=&kind=&name=
struct ListProcessesQuery {
  std::string state = "all";  // running, terminal, all
  std::optional<std::string> kind;  // exec, pty, code, session
  std::optional<std::string> name;
};
Decoded<ListProcessesQuery> decodeListProcesses(const Query& query);

enum class LogEncoding { kText, kBase64 };
// GET .../logs?cursor=&limit=&encoding= (and /logs/stream?cursor=&encoding=)
struct LogsQuery {
  std::optional<std::string> cursor;
  std::uint32_t limit = 1000;
  LogEncoding encoding = LogEncoding::kText;
};
Decoded<LogsQuery> decodeLogs(const Query& query);
Decoded<LogsQuery> decodeLogStream(const Query& query);

// ---- the workspace (shared/API.md, "Workspace")
//
// Sandbox paths are taken as given ("/workspace/...", any bytes, a NUL
// included): the workspace API judges them (invalid_path), never a string
// check here.

// ?path= of .../files (PUT, GET, DELETE), required; of .../files/list and
// .../tree (GET, PUT), "/workspace" when absent.
struct PathQuery {
  std::string path;
};
Decoded<PathQuery> decodeFilePathQuery(const Query& query);
Decoded<PathQuery> decodeDirectoryQuery(const Query& query);

// GET .../files/watch?path=&recursive=
struct WatchQuery {
  std::string path = "/workspace";
  bool recursive = false;
};
Decoded<WatchQuery> decodeWatchQuery(const Query& query);

// POST .../files/mkdir
struct MakeDirRequest {
  std::string path;
};
Decoded<MakeDirRequest> decodeMakeDir(std::string_view body);

// POST .../persist; timeouts are whole seconds, 1 to 86400 (seed 002).
struct PersistRequest {
  std::string path;
  std::vector<std::string> exclude;  // directory names (no '/', not "." or "..")
  std::optional<std::uint64_t> timeoutSeconds;
};
Decoded<PersistRequest> decodePersist(std::string_view body);

// POST .../restore
struct RestoreRequest {
  std::string path;
  std::optional<std::uint64_t> timeoutSeconds;
};
Decoded<RestoreRequest> decodeRestore(std::string_view body);

// POST .../snapshots
struct SnapshotRequestBody {
  std::string operationKey;  // 1-256 bytes, no control characters
  std::optional<std::uint64_t> timeoutSeconds;
};
Decoded<SnapshotRequestBody> decodeSnapshot(std::string_view body);

// GET /v1/snapshots?operationKey=
struct SnapshotLookupQuery {
  std::string operationKey;
};
Decoded<SnapshotLookupQuery> decodeSnapshotLookup(const Query& query);

// A query with no parameters: any key is an error.
std::optional<ApiError> requireEmptyQuery(const Query& query);
// A body for a route that takes none: empty, or "{}".
std::optional<ApiError> requireEmptyBody(std::string_view body);

// A policy refused by the parser or by derive(): 400 E_SANDBOX_INVALID_POLICY
// naming the field under "policy" (`policy.network.allowedDomains[2]: ...`).
ApiError invalidPolicy(const PolicyError& e);

// Environment names a client may set: [A-Za-z_][A-Za-z0-9_]*, not starting
// with "_t" (the sandbox keeps those for itself; seed 000).
bool isClientEnvName(std::string_view name) noexcept;

}  // namespace stockade::daemon
