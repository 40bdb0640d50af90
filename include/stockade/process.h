// The process service (shared/seeds/003_*): detached processes of one
// sandbox with ids and states, output kept in a bounded log addressed by
// cursors, wait, kill with escalation, open stdin, persistent shell sessions
// and pseudo-terminals. Obtained from a SandboxHandle (handle.processes()).
//
// Every process runs in a sandbox of its own under the sandbox's live rules
// (re-derived and drift-checked before each start, as run()), with the
// sandbox's workspace as its default working directory. One supervisor
// thread serves every process of the host application: output is drained
// whether or not anyone reads it, so a process never blocks on a full pipe.
//
// Errors: caller bugs (an empty command, both cmd and argv, a bad env name,
// an unknown shell, a negative timeout) throw std::invalid_argument naming
// the field. Expected failures are values (ProcessError) with the seeds'
// codes: not_found, timeout, stale_epoch (the sandbox was disposed),
// unavailable, unsupported, invalid_path.
//
// Thread-safety: every member function may be called from any thread,
// concurrently with any other. Handles are cheap copyable views.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace stockade {

namespace process {
class ServiceCore;
class Record;
class StreamCursor;
}  // namespace process

enum class ProcessKind { kExec, kPty, kCode, kSession };
enum class ProcessState { kStarting, kRunning, kTerminal };
enum class ProcessReason { kExited, kSignaled, kTimedOut, kLost, kFailed };
enum class KeepLogs { kUntilCleanup, kOnExitTtl, kNone };
enum class StdinMode { kClosed, kOpen };
enum class LogChannel { kStdout, kStderr, kPty, kSetup };
enum class LogEncoding { kText, kBase64 };
enum class ProcessSignal { kTerm, kKill, kInt, kHup, kQuit, kUsr1, kUsr2 };

// The seeds' strings: "exec", "running", "timed_out", "until_cleanup", "open",
// "stdout", "base64", "TERM".
std::string_view processKindName(ProcessKind) noexcept;
std::string_view processStateName(ProcessState) noexcept;
std::string_view processReasonName(ProcessReason) noexcept;
std::string_view keepLogsName(KeepLogs) noexcept;
std::string_view stdinModeName(StdinMode) noexcept;
std::string_view logChannelName(LogChannel) noexcept;
std::string_view logEncodingName(LogEncoding) noexcept;
std::string_view processSignalName(ProcessSignal) noexcept;

enum class ProcessErrorCode { kNotFound, kTimeout, kStaleEpoch, kUnavailable, kUnsupported, kInvalidPath };
inline constexpr ProcessErrorCode kAllProcessErrorCodes[] = {
    ProcessErrorCode::kNotFound,    ProcessErrorCode::kTimeout,     ProcessErrorCode::kStaleEpoch,
    ProcessErrorCode::kUnavailable, ProcessErrorCode::kUnsupported, ProcessErrorCode::kInvalidPath,
};
// "not_found", "timeout", "stale_epoch", "unavailable", "unsupported", "invalid_path".
std::string_view processErrorCodeName(ProcessErrorCode) noexcept;

struct ProcessError {
  ProcessErrorCode code;
  std::string message;  // says what and why; names the process
  std::string_view codeName() const noexcept { return processErrorCodeName(code); }
};

// A value, or the expected failure that took its place.
template <typename T>
using ProcessResult = std::variant<T, ProcessError>;
// For calls with nothing to return: nullopt on success.
using ProcessStatus = std::optional<ProcessError>;

struct TerminalSize {
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
  bool operator==(const TerminalSize&) const = default;
};

// Per-process accounting, kept after the process ended.
struct ProcessMetrics {
  std::chrono::microseconds cpuTime{0};  // user + system of every process of its sandbox
  std::int64_t peakMemoryBytes = 0;      // the largest resident set of any one of them
  std::uint64_t stdoutBytes = 0;         // everything written, retained or not
  std::uint64_t stderrBytes = 0;
  std::uint64_t droppedLogBytes = 0;     // written but no longer retained (ring capacity)
  long denials = 0;                      // calls the seccomp table refused
  std::optional<std::string> killedByLimit;  // "limits.cpuSeconds" when a limit check killed it
  // The whole-sandbox limit the run reached: the one that killed it, or
  // "limits.pids" when a fork was refused at the limit and nothing was killed.
  std::optional<std::string> limitReached;
};

struct ProcessDto {
  std::string id;
  std::string sandboxId;
  std::optional<std::string> name;
  std::optional<int> pid;  // of the sandbox's init, in the host's pid namespace
  ProcessKind kind = ProcessKind::kExec;
  ProcessState state = ProcessState::kStarting;
  std::optional<std::string> sessionId;
  std::optional<std::vector<std::string>> argv;  // the command as argv, or the shell's argv
  std::optional<std::string> shellCommand;       // the shell string, when it ran through a shell
  std::optional<std::string> shell;              // as asked ("bash"), when it ran through a shell
  std::optional<std::string> resolvedShell;      // the program run ("/bin/bash")
  bool login = false;
  std::string cwd;  // for a session: the shell's current directory
  StdinMode stdin = StdinMode::kClosed;
  std::optional<std::chrono::milliseconds> executionTimeout;
  std::optional<TerminalSize> terminal;
  KeepLogs keepLogs = KeepLogs::kUntilCleanup;
  std::optional<std::string> processKey;
  std::optional<int> exitCode;
  std::optional<std::string> signal;  // "SIGKILL"
  std::optional<ProcessReason> reason;
  std::optional<std::string> reasonDetail;  // why it failed or was lost
  std::chrono::system_clock::time_point createdAt;
  std::optional<std::chrono::system_clock::time_point> startedAt;
  std::optional<std::chrono::system_clock::time_point> exitedAt;
  bool truncatedHead = false;  // the oldest output is no longer retained
  std::optional<std::string> firstAvailableCursor;
  std::optional<std::string> lastCursor;
  ProcessMetrics metrics;
};

// How a process ended (WaitResult of the seed).
struct Exited {
  int exitCode = 0;
};
struct Signaled {
  std::string signal;  // "SIGTERM"
};
struct TimedOut {};  // its executionTimeout passed; it was killed
struct Lost {        // its supervision ended before it did (dispose)
  std::string detail;
};
struct Failed {  // it could not start, or could not be supervised
  std::optional<int> exitCode;
  std::string detail;
};
using WaitResult = std::variant<Exited, Signaled, TimedOut, Lost, Failed>;
ProcessReason reasonOf(const WaitResult& result) noexcept;

struct LogFrame {
  std::string cursor;
  LogChannel channel = LogChannel::kStdout;
  std::string data;  // the bytes as text, or base64 when `encoding` says so
  LogEncoding encoding = LogEncoding::kText;
  std::chrono::system_clock::time_point timestamp;
};

struct LogsOptions {
  std::optional<std::string> cursor;  // frames after this one; none: from the oldest retained
  std::size_t limit = 1000;           // at most this many frames per page (1..10000)
  // kText: frames that are valid UTF-8 come as text, others as base64 (each
  // frame says which); kBase64: every frame as base64.
  LogEncoding encoding = LogEncoding::kText;
};

struct LogsPage {
  std::vector<LogFrame> items;
  bool hasMore = false;             // call again with nextCursor
  std::optional<std::string> nextCursor;  // the last frame's cursor (or the one given, when none)
  bool truncatedHead = false;       // output after the given cursor is no longer retained
  std::optional<std::string> firstAvailableCursor;
};

// streamLogs() events, in order: logs, warnings, then one state and one eof.
struct LogEvent {
  LogFrame frame;
};
struct StateEvent {
  WaitResult result;
};
struct WarningEvent {
  std::string message;                    // output before this point was dropped
  std::optional<std::string> firstAvailableCursor;
};
struct EofEvent {};
struct StreamLogEvent {
  std::optional<std::string> cursor;  // resume from here to lose and repeat nothing
  std::variant<LogEvent, StateEvent, WarningEvent, EofEvent> event;
};

// A pull stream: next() blocks until the next event, and returns nullopt
// after eof, or when `stop` (given to streamLogs()) is requested.
class LogStream {
 public:
  LogStream(LogStream&&) noexcept;
  LogStream& operator=(LogStream&&) noexcept;
  ~LogStream();
  std::optional<StreamLogEvent> next();

 private:
  friend class process::ServiceCore;
  explicit LogStream(std::unique_ptr<process::StreamCursor> cursor);
  std::unique_ptr<process::StreamCursor> cursor_;
};

struct KillOptions {
  ProcessSignal signal = ProcessSignal::kTerm;
  // If anything of the process is left this long after `signal`, send
  // `escalateTo`. Default: 5 s unless `signal` is KILL.
  std::optional<std::chrono::milliseconds> escalateAfter;
  ProcessSignal escalateTo = ProcessSignal::kKill;
};

// What to execute: exactly one of a shell command (bash, else sh, or the
// named POSIX shell) and an argv run directly, without a shell (the safe
// form for untrusted arguments).
struct ProcessCommand {
  std::optional<std::string> cmd;
  std::optional<std::vector<std::string>> argv;
  static ProcessCommand shell(std::string command) { return {std::move(command), std::nullopt}; }
  static ProcessCommand exec(std::vector<std::string> args) { return {std::nullopt, std::move(args)}; }
};

struct ProcessStartOptions {
  std::optional<std::string> name;
  std::optional<std::string> cwd;  // absolute; default: the workspace (/workspace when the sandbox has one)
  // Added to the child's environment after the policy's env.allow names;
  // names [A-Za-z_][A-Za-z0-9_]*, not starting with "_t".
  std::map<std::string, std::string> env;
  std::optional<std::string> shell;  // bash, sh, dash, zsh, ksh (a name or an absolute path); another is refused
  bool login = false;                // the shell as a login shell (-l)
  StdinMode stdin = StdinMode::kClosed;
  std::optional<std::chrono::milliseconds> executionTimeout;  // server-side deadline from the start
  KeepLogs keepLogs = KeepLogs::kUntilCleanup;
  std::optional<std::string> processKey;  // durable identity (recorded by the daemon's ledger)
};

struct ProcessRunOptions {
  ProcessStartOptions start;
  // How long run() waits; omitted waits unbounded. Past it the result is
  // ProcessError timeout and the process keeps running.
  std::optional<std::chrono::milliseconds> timeout;
};

struct RunResult {
  WaitResult result;
  std::string processId;
  std::string output;  // stdout and stderr interleaved as they arrived
  std::string stdout;
  std::string stderr;
  std::vector<LogFrame> logs;
};

struct ProcessListOptions {
  enum class States { kAll, kRunning, kTerminal };
  States state = States::kAll;
  std::optional<ProcessKind> kind;
  std::optional<std::string> sessionId;
  std::optional<std::string> name;
  std::optional<int> pid;
};

class PtyDuplex;

// A view of one process by id. A handle to an id that is gone answers not_found.
class ProcessHandle {
 public:
  const std::string& id() const noexcept { return id_; }
  const std::string& sandboxId() const noexcept;

  ProcessResult<ProcessDto> get() const;
  ProcessResult<LogsPage> logs(const LogsOptions& options = {}) const;
  // Every frame after options.cursor, then the final state and eof; a
  // warning first when output after the cursor was dropped. Resuming from
  // the last event's cursor loses and repeats nothing.
  ProcessResult<LogStream> streamLogs(const LogsOptions& options = {}, std::stop_token stop = {}) const;
  // Until the process is terminal, or `timeout` (ProcessError timeout; the
  // process keeps running). Never a stale exit: ids are never reused.
  ProcessResult<WaitResult> wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // Signals every process of the process's sandbox, not only its leader, and
  // escalates if anything is left. A process that has ended: no-op.
  ProcessStatus kill(const KillOptions& options = {}) const;
  // For stdin kOpen: queues bytes (and closes stdin after them with `eof`).
  // Otherwise, or after EOF, unsupported.
  ProcessStatus stdin(std::string_view data, bool eof = false) const;
  ProcessStatus stdinEof() const;
  // A PTY process's window size; the program gets SIGWINCH.
  ProcessStatus resize(TerminalSize size) const;
  // A PTY process's terminal (PtyDuplex); another kind: unsupported.
  ProcessResult<PtyDuplex> attach() const;
  // Stops it if it runs (TERM, KILL after 5 s), then forgets it and its logs.
  // Refused (unsupported) for a session command that has not stopped 5 s
  // after the stop: delete its session.
  ProcessStatus remove() const;

 private:
  friend class ProcessService;
  friend class process::ServiceCore;
  ProcessHandle(std::shared_ptr<process::ServiceCore> core, std::string id)
      : core_(std::move(core)), id_(std::move(id)) {}
  std::shared_ptr<process::ServiceCore> core_;
  std::string id_;
};

struct CreateSessionOptions {
  std::optional<std::string> cwd;
  std::map<std::string, std::string> env;
  std::optional<std::string> shell;  // bash (default, else sh), sh, dash, zsh, ksh
  bool login = false;
  std::optional<std::string> name;
};

struct SessionRunOptions {
  StdinMode stdin = StdinMode::kClosed;
  // From when the command starts (after those queued ahead of it): the
  // command is interrupted and the session survives; a command still running
  // 5 s after it ends the session instead.
  std::optional<std::chrono::milliseconds> executionTimeout;
  std::optional<std::string> name;
  KeepLogs keepLogs = KeepLogs::kUntilCleanup;
};

// One persistent shell: commands run one at a time, in order, each with its
// own id, exit code and logs; cd, exports and functions carry over.
// kill({signal: INT}) on a command interrupts it, not the session.
class Session {
 public:
  const std::string& id() const noexcept { return id_; }
  // The shell process, with its current working directory.
  ProcessResult<ProcessDto> get() const;
  ProcessResult<ProcessHandle> start(const std::string& command, const SessionRunOptions& options = {}) const;
  ProcessResult<RunResult> run(const std::string& command, const SessionRunOptions& options = {},
                               std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // Ends the shell and forgets it and all its command records.
  ProcessStatus remove() const;

 private:
  friend class ProcessService;
  friend class process::ServiceCore;
  Session(std::shared_ptr<process::ServiceCore> core, std::string id) : core_(std::move(core)), id_(std::move(id)) {}
  std::shared_ptr<process::ServiceCore> core_;
  std::string id_;
};

// A PTY process's terminal, both ways (seed 003's PtyDuplex): what the
// terminal wrote, from the oldest retained output on, and input for it.
// read() from one thread; write() and close() from any. close() detaches:
// the process runs on (kill() it to end it).
class PtyDuplex {
 public:
  PtyDuplex(PtyDuplex&&) noexcept;
  PtyDuplex& operator=(PtyDuplex&&) noexcept;
  ~PtyDuplex();

  // The next bytes, as the terminal wrote them (blocks until there are
  // some); nullopt once the process has ended and all was read, or after close().
  std::optional<std::string> read();
  // True when retention dropped output between the attach point (or the
  // last read) and what read() returned next: the terminal's earlier bytes are gone.
  bool truncated() const noexcept { return truncated_; }
  // Input for the program, as if typed. After close(): unsupported.
  ProcessStatus write(std::string_view data) const;
  void close() noexcept;

 private:
  friend class process::ServiceCore;
  PtyDuplex(std::shared_ptr<process::ServiceCore> core, std::string id, std::stop_source stop,
            std::unique_ptr<process::StreamCursor> cursor);
  std::shared_ptr<process::ServiceCore> core_;
  std::string id_;
  std::stop_source stop_;
  std::unique_ptr<process::StreamCursor> cursor_;
  bool truncated_ = false;
};

struct PtyAttachment {
  ProcessHandle handle;
  PtyDuplex connection;
};

// Output read from / input written to a PTY process.
class PtyService {
 public:
  // `command` through the shell (default: an interactive shell).
  ProcessResult<ProcessHandle> start(std::optional<std::string> command, ProcessStartOptions options = {},
                                     TerminalSize size = {}) const;
  // start(), and its terminal attached from its first byte.
  ProcessResult<PtyAttachment> attach(std::optional<std::string> command, ProcessStartOptions options = {},
                                      TerminalSize size = {}) const;

 private:
  friend class ProcessService;
  explicit PtyService(std::shared_ptr<process::ServiceCore> core) : core_(std::move(core)) {}
  std::shared_ptr<process::ServiceCore> core_;
};

class ProcessService {
 public:
  // A detached process; returns once it was spawned (state running) or
  // could not be (the SpawnError is SandboxError E_SANDBOX_SPAWN_FAILED;
  // drift is E_SANDBOX_POLICY_DRIFT, as run()).
  ProcessResult<ProcessHandle> start(const ProcessCommand& command, const ProcessStartOptions& options = {}) const;
  // start(), wait, and the output collected.
  ProcessResult<RunResult> run(const ProcessCommand& command, const ProcessRunOptions& options = {}) const;
  // A handle by id, without a lookup.
  ProcessHandle connect(std::string id) const;
  ProcessResult<ProcessDto> get(const std::string& id) const;
  ProcessResult<std::vector<ProcessDto>> list(const ProcessListOptions& options = {}) const;

  ProcessResult<Session> createSession(const CreateSessionOptions& options = {}) const;
  Session connectSession(std::string id) const;
  PtyService pty() const { return PtyService(core_); }

  explicit ProcessService(std::shared_ptr<process::ServiceCore> core) : core_(std::move(core)) {}

 private:
  std::shared_ptr<process::ServiceCore> core_;
};

}  // namespace stockade
