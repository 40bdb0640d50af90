#include "src/process/service.h"

#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <stdexcept>

#include "policy/paths.h"
#include "src/child_env.h"
#include "src/process/log_ring.h"
#include "src/process/session.h"
#include "stockade/error.h"

extern char** environ;

namespace stockade::process {

std::string newId(std::string_view prefix) {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    throw std::runtime_error("getrandom() failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  id += '-';
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 0xf];
  }
  return id;
}

int signalNumber(ProcessSignal signal) noexcept {
  switch (signal) {
    case ProcessSignal::kTerm: return SIGTERM;
    case ProcessSignal::kKill: return SIGKILL;
    case ProcessSignal::kInt: return SIGINT;
    case ProcessSignal::kHup: return SIGHUP;
    case ProcessSignal::kQuit: return SIGQUIT;
    case ProcessSignal::kUsr1: return SIGUSR1;
    case ProcessSignal::kUsr2: return SIGUSR2;
  }
  return SIGTERM;
}

std::optional<std::string> findProgram(const std::string& name) {
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

namespace {

ProcessError notFound(const std::string& id) {
  return {ProcessErrorCode::kNotFound, "process " + id + " is not known to this sandbox (never started, or deleted)"};
}

// The POSIX shells a command string may run through (seed 003).
constexpr const char* kShells[] = {"bash", "sh", "dash", "zsh", "ksh"};

// The shell for a command string: the one named (bash, sh, dash, zsh, ksh,
// or an absolute path to one of them), else bash, else sh. An unknown name
// is a caller bug; a known one missing here is unavailable.
std::variant<std::string, ProcessError> resolveShell(const std::optional<std::string>& asked) {
  if (!asked) {
    if (auto bash = findProgram("bash")) return *bash;
    if (auto sh = findProgram("sh")) return *sh;
    return ProcessError{ProcessErrorCode::kUnavailable, "neither bash nor sh is installed; pass argv instead of cmd"};
  }
  const std::string base = asked->substr(asked->rfind('/') + 1);
  bool known = false;
  for (const char* s : kShells) known = known || base == s;
  if (!known || (asked->find('/') != std::string::npos && asked->front() != '/'))
    throw std::invalid_argument("shell \"" + *asked +
                                "\" is not a POSIX shell stockade runs commands through; use bash, sh, dash, zsh or "
                                "ksh (a name or an absolute path), or pass argv");
  if (asked->front() == '/') {
    if (::access(asked->c_str(), X_OK) != 0)
      return ProcessError{ProcessErrorCode::kUnavailable, "shell " + *asked + " is not installed"};
    return *asked;
  }
  if (auto path = findProgram(base)) return *path;
  return ProcessError{ProcessErrorCode::kUnavailable, "shell " + base + " is not installed"};
}

// The working directory of a process: the default when none is given; a
// relative one beneath /workspace (the sandbox must have a workspace).
std::string cwdOf(const SandboxContext& sandbox, const std::optional<std::string>& cwd) {
  if (!cwd) return sandbox.defaultCwd();
  if (cwd->front() == '/') return *cwd;
  if (sandbox.workspace().empty())
    throw std::invalid_argument("cwd \"" + *cwd + "\" is relative and the sandbox has no workspace to resolve it in; "
                                "give an absolute path");
  return policy::lexicallyNormal("/workspace/" + *cwd);
}

void validateStart(const ProcessCommand& command, const ProcessStartOptions& o) {
  if (command.cmd && command.argv)
    throw std::invalid_argument("command: both cmd and argv are given; pass exactly one (argv runs without a shell)");
  if (!command.cmd && !command.argv) throw std::invalid_argument("command: neither cmd nor argv is given");
  if (command.cmd) {
    if (command.cmd->find_first_not_of(" \t\n") == std::string::npos)
      throw std::invalid_argument("command.cmd is empty; pass a shell command");
    if (command.cmd->find('\0') != std::string::npos) throw std::invalid_argument("command.cmd contains NUL");
  } else {
    if (command.argv->empty()) throw std::invalid_argument("command.argv is empty; pass at least the program");
    if (command.argv->front().empty()) throw std::invalid_argument("command.argv[0] is empty; name the program");
    for (std::size_t i = 0; i < command.argv->size(); ++i)
      if ((*command.argv)[i].find('\0') != std::string::npos)
        throw std::invalid_argument("command.argv[" + std::to_string(i) + "] contains NUL");
  }
  if (o.cwd && o.cwd->empty()) throw std::invalid_argument("cwd is empty; omit it for the default");
  if (o.cwd && o.cwd->find('\0') != std::string::npos) throw std::invalid_argument("cwd contains NUL");
  if (o.executionTimeout && o.executionTimeout->count() <= 0)
    throw std::invalid_argument("executionTimeout " + std::to_string(o.executionTimeout->count()) +
                                " ms is not positive; omit it for no deadline");
  for (const auto& [name, value] : o.env) {
    if (auto problem = overlayNameProblem(name, ProxyVariables::kNotSet); !problem.empty())
      throw std::invalid_argument("env " + problem);
    if (value.find('\0') != std::string::npos) throw std::invalid_argument("env \"" + name + "\" contains NUL");
  }
}

bool matches(const ProcessDto& d, const ProcessListOptions& o) {
  using States = ProcessListOptions::States;
  if (o.state == States::kRunning && d.state == ProcessState::kTerminal) return false;
  if (o.state == States::kTerminal && d.state != ProcessState::kTerminal) return false;
  if (o.kind && d.kind != *o.kind) return false;
  if (o.sessionId && d.sessionId != o.sessionId) return false;
  if (o.name && d.name != o.name) return false;
  if (o.pid && d.pid != o.pid) return false;
  return true;
}

std::uint64_t cursorOrThrow(const std::optional<std::string>& cursor) {
  if (!cursor) return 0;
  auto sequence = LogRing::parseCursor(*cursor);
  if (!sequence)
    throw std::invalid_argument("cursor \"" + *cursor + "\" is not a log cursor; pass one a frame or page returned");
  return *sequence;
}

void checkLimit(std::size_t limit) {
  if (limit == 0 || limit > kMaxLogsLimit)
    throw std::invalid_argument("limit " + std::to_string(limit) + " is out of range; pass 1.." +
                                std::to_string(kMaxLogsLimit));
}

}  // namespace

// Streams one process's log as seed 003's StreamLogEvents.
class StreamCursor {
 public:
  // `encoding` nullopt: each frame's bytes as they are (PtyDuplex).
  StreamCursor(std::shared_ptr<Record> record, std::uint64_t after, std::optional<LogEncoding> encoding,
               std::stop_token stop)
      : record_(std::move(record)), after_(after), encoding_(encoding), stop_(std::move(stop)) {}

  std::optional<StreamLogEvent> next() {
    if (done_) return std::nullopt;
    std::unique_lock lock(record_->mu);
    for (;;) {
      if (stop_.stop_requested()) return std::nullopt;  // cancelled: resume from the last cursor seen
      auto page = record_->ring.read(after_, 1);
      if (page.truncatedHead) {
        // Frames after our cursor were dropped by retention: say so, and go on from the oldest held.
        const std::uint64_t resume = page.firstAvailable ? page.firstAvailable - 1 : record_->ring.lastSequence();
        WarningEvent warning{"output after cursor " + LogRing::cursorText(after_) +
                                 " is no longer retained (the ring dropped its oldest frames); continuing from " +
                                 LogRing::cursorText(resume),
                             page.firstAvailable ? std::optional(LogRing::cursorText(page.firstAvailable)) : std::nullopt};
        after_ = resume;
        return StreamLogEvent{LogRing::cursorText(after_), std::move(warning)};
      }
      if (!page.frames.empty()) {
        const auto& frame = page.frames.front();
        after_ = frame.sequence;
        LogFrame out;
        if (encoding_) out = ServiceCore::frameOf(frame, *encoding_);
        else out.data = frame.bytes;
        return StreamLogEvent{LogRing::cursorText(after_), LogEvent{std::move(out)}};
      }
      // Terminal only once its outputs were drained: no frame follows the state.
      if (auto result = record_->resultLocked()) {
        if (!stateSent_) {
          stateSent_ = true;
          return StreamLogEvent{LogRing::cursorText(after_), StateEvent{*result}};
        }
        done_ = true;
        return StreamLogEvent{LogRing::cursorText(after_), EofEvent{}};
      }
      record_->changed.wait(lock, stop_, [&] {
        return record_->ring.lastSequence() > after_ || record_->resultLocked().has_value();
      });
    }
  }

 private:
  std::shared_ptr<Record> record_;
  std::uint64_t after_;
  std::optional<LogEncoding> encoding_;
  std::stop_token stop_;
  bool stateSent_ = false;
  bool done_ = false;
};

std::shared_ptr<ServiceCore> makeServiceCore(std::shared_ptr<SandboxContext> sandbox) {
  return std::make_shared<ServiceCore>(std::move(sandbox));
}

std::optional<ProcessError> ServiceCore::stale() const {
  if (sandbox_ && sandbox_->live()) return std::nullopt;
  return ProcessError{ProcessErrorCode::kStaleEpoch, "the sandbox was disposed; its processes are gone"};
}

const std::string& ServiceCore::sandboxId() const noexcept {
  static const std::string kNone;
  return sandbox_ ? sandbox_->sandboxId() : kNone;
}

std::string ServiceCore::defaultCwd() const { return sandbox_->defaultCwd(); }

ProcessResult<std::shared_ptr<Record>> ServiceCore::find(const std::string& id) const {
  if (auto e = stale()) return *e;
  auto record = sandbox_->registry().find(id);
  if (!record || !record->listed) return notFound(id);
  return record;
}

LogFrame ServiceCore::frameOf(const LogRing::Frame& frame, LogEncoding encoding) {
  LogFrame out;
  out.cursor = LogRing::cursorText(frame.sequence);
  out.channel = frame.channel;
  out.timestamp = frame.time;
  if (encoding == LogEncoding::kText && isUtf8(frame.bytes)) {
    out.data = frame.bytes;
    out.encoding = LogEncoding::kText;
  } else {
    out.data = base64(frame.bytes);
    out.encoding = LogEncoding::kBase64;
  }
  return out;
}

ProcessResult<ProcessHandle> ServiceCore::start(const ProcessCommand& command, const ProcessStartOptions& o,
                                                ProcessKind kind, std::optional<TerminalSize> terminal) {
  const bool interactive = kind == ProcessKind::kPty && !command.cmd && !command.argv;  // a shell of its own
  validateStart(interactive ? ProcessCommand::shell("true") : command, o);
  if (terminal && (terminal->cols == 0 || terminal->rows == 0))
    throw std::invalid_argument("terminal " + std::to_string(terminal->cols) + "x" + std::to_string(terminal->rows) +
                                ": columns and rows must be positive");
  if (auto e = stale()) return *e;
  ProcessDto dto;
  dto.id = newId("proc");
  dto.name = o.name;
  dto.kind = kind;
  dto.cwd = cwdOf(*sandbox_, o.cwd);
  dto.stdin = kind == ProcessKind::kPty ? StdinMode::kOpen : o.stdin;  // a terminal's input is always open
  dto.terminal = terminal;
  dto.executionTimeout = o.executionTimeout;
  dto.keepLogs = o.keepLogs;
  dto.processKey = o.processKey;
  dto.login = o.login;
  if (command.cmd || kind == ProcessKind::kPty) {
    auto shell = resolveShell(o.shell);
    if (auto* e = std::get_if<ProcessError>(&shell)) return *e;
    const std::string& path = std::get<std::string>(shell);
    std::vector<std::string> argv = {path};
    if (o.login) argv.push_back("-l");
    if (command.cmd) {
      argv.push_back("-c");
      argv.push_back(*command.cmd);
    } else {
      argv.push_back("-i");  // a PTY without a command: an interactive shell
    }
    dto.argv = std::move(argv);
    dto.shellCommand = command.cmd;
    dto.shell = o.shell.value_or(path.substr(path.rfind('/') + 1));
    dto.resolvedShell = path;
  } else {
    dto.argv = *command.argv;
  }
  const std::string id = dto.id;
  if (auto e = launch(makeRecord(std::move(dto)), o.env, {})) return *e;
  return ProcessHandle(shared_from_this(), id);
}

std::shared_ptr<Record> ServiceCore::makeRecord(ProcessDto dto) const {
  dto.sandboxId = sandbox_->sandboxId();
  dto.createdAt = std::chrono::system_clock::now();
  return std::make_shared<Record>(std::move(dto), sandbox_->logBytesPerProcess(), sandbox_->logBudget());
}

ProcessStatus ServiceCore::launch(const std::shared_ptr<Record>& record, const std::map<std::string, std::string>& env,
                                  Hooks hooks) {
  const ProcessDto dto = record->snapshot();
  const std::string id = dto.id;
  const std::vector<std::string> argv = *dto.argv;
  const std::string cwd = dto.cwd;
  const StdinMode stdinMode = dto.stdin;
  const std::optional<TerminalSize> terminal = dto.terminal;
  const auto timeout = dto.executionTimeout;
  const KeepLogs keep = dto.keepLogs;
  nlohmann::json auditFields = nlohmann::json::object();
  if (dto.name) auditFields["name"] = *dto.name;
  if (dto.processKey) auditFields["processKey"] = *dto.processKey;
  auditFields["kind"] = std::string(processKindName(dto.kind));
  const std::string correlation = dto.processKey.value_or(id);

  // A record that never runs is terminal before it goes: a dispose() that
  // found it in the registry meanwhile waits for it to be.
  auto forget = [&] {
    record->failed("it could not be started");
    sandbox_->registry().remove(id);
  };

  // Admitted first, registered under the admission's lease: dispose() holds
  // the gate while it waits for the registry's records, so a record
  // registered before its admission waited for an admission that waited for
  // the gate, and both hung.
  std::optional<Admission> admission;
  try {
    // A spare has pipes, not a terminal.
    admission.emplace(sandbox_->admit({.id = id, .correlationId = correlation, .spare = !terminal}));
  } catch (const SandboxError& e) {
    record->failed("it could not be started");
    if (e.code() == ErrorCode::kNotInitialized) return ProcessError{ProcessErrorCode::kStaleEpoch, e.what()};
    throw;
  } catch (...) {
    record->failed("it could not be started");
    throw;
  }
  Admission& admitted = *admission;
  if (!sandbox_->registry().add(record, id)) {
    record->failed("it could not be started");
    return ProcessError{ProcessErrorCode::kStaleEpoch, "the sandbox was disposed; its processes are gone"};
  }
  const std::optional<std::uint16_t> proxyPort =
      admitted.network ? std::optional<std::uint16_t>(kSandboxProxyPort) : std::nullopt;
  if (auto problem = overlayProxyProblem(env, proxyPort); !problem.empty()) {
    forget();
    throw std::invalid_argument("env " + problem);
  }
  platform::ProgramRequest program{argv, cwd, childEnvironment(admitted.rules, environ, env, proxyPort)};

  Watch watch;
  watch.timeout = timeout;
  if (hooks.onOutput) {
    watch.onOutput = std::move(hooks.onOutput);
  } else {
    std::weak_ptr<Record> weak = record;
    watch.onOutput = [weak](LogChannel channel, std::string_view bytes) {
      if (auto r = weak.lock()) r->output(channel, bytes);
    };
  }
  EventLoop& loop = sandbox_->loop();
  watch.onEnd = [record, afterExit = admitted.afterExit, &loop, keep, onEnd = std::move(hooks.onEnd)](const Ending& e) {
    if (afterExit) afterExit();
    if (onEnd) onEnd(e);
    else record->ended(e);
    if (keep == KeepLogs::kOnExitTtl) {
      std::weak_ptr<Record> later = record;
      loop.after(kOnExitTtl, [later] {
        if (auto r = later.lock()) {
          std::lock_guard lock(r->mu);
          r->ring.clear();
        }
      });
    }
  };
  auto launched = [&] {
    try {
      return sandbox_->launcher().launch(LaunchRequest{.rules = admitted.rules,
                                                       .fingerprint = admitted.fingerprint,
                                                       .program = std::move(program),
                                                       .output = terminal ? Output::kPty : Output::kSupervisor,
                                                       .stdin = stdinMode,
                                                       .terminalSize = terminal ? platform::WindowSize{terminal->cols, terminal->rows}
                                                                                : platform::WindowSize{},
                                                       .spare = std::move(admitted.spare),
                                                       .sandboxId = sandbox_->sandboxId(),
                                                       .id = id,
                                                       .idField = "processId",
                                                       .auditFields = std::move(auditFields),
                                                       .network = admitted.network,
                                                       .resolve = admitted.resolve,
                                                       .workspace = sandbox_->workspace()},
                                         std::move(watch));
    } catch (...) {
      forget();
      throw;
    }
  }();
  if (auto* err = std::get_if<platform::SpawnError>(&launched)) {
    forget();
    throw SandboxError(ErrorCode::kSpawnFailed, "start(): " + err->message());
  }
  auto& child = std::get<Launched>(launched);
  if (child.terminal) record->setPtyMaster(std::move(child.terminal));
  record->running(child.pid, child.supervised);
  return std::nullopt;
}

RunResult ServiceCore::collect(const Record& record, WaitResult result) {
  RunResult out{std::move(result), {}, {}, {}, {}, {}};
  std::lock_guard lock(record.mu);
  out.processId = record.snapshotLocked().id;
  auto page = record.ring.read(0, static_cast<std::size_t>(-1));
  for (const auto& frame : page.frames) {
    out.output += frame.bytes;
    (frame.channel == LogChannel::kStderr ? out.stderr : out.stdout) += frame.bytes;
    out.logs.push_back(frameOf(frame, LogEncoding::kText));
  }
  return out;
}

ProcessResult<RunResult> ServiceCore::run(const ProcessCommand& command, const ProcessRunOptions& o) {
  if (o.timeout && o.timeout->count() < 0)
    throw std::invalid_argument("timeout " + std::to_string(o.timeout->count()) + " ms is negative");
  auto started = start(command, o.start);
  if (auto* e = std::get_if<ProcessError>(&started)) return *e;
  const auto& handle = std::get<ProcessHandle>(started);
  auto found = find(handle.id());
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  auto result = record->wait(o.timeout);
  if (!result)
    return ProcessError{ProcessErrorCode::kTimeout, "process " + handle.id() + " still runs after " +
                                                        std::to_string(o.timeout->count()) +
                                                        " ms; it goes on (wait, stream or kill it by its id)"};
  return collect(*record, std::move(*result));
}

ProcessResult<ProcessDto> ServiceCore::get(const std::string& id) const {
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  return std::get<std::shared_ptr<Record>>(found)->snapshot();
}

ProcessResult<std::vector<ProcessDto>> ServiceCore::list(const ProcessListOptions& o) const {
  if (auto e = stale()) return *e;
  std::vector<ProcessDto> out;
  for (const auto& record : sandbox_->registry().all()) {
    if (!record->listed) continue;
    ProcessDto d = record->snapshot();
    if (matches(d, o)) out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const ProcessDto& a, const ProcessDto& b) { return a.createdAt < b.createdAt; });
  return out;
}

ProcessResult<LogsPage> ServiceCore::logs(const std::string& id, const LogsOptions& o) const {
  checkLimit(o.limit);
  const std::uint64_t after = cursorOrThrow(o.cursor);
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  LogsPage out;
  std::lock_guard lock(record->mu);
  auto page = record->ring.read(after, o.limit);
  for (const auto& frame : page.frames) out.items.push_back(frameOf(frame, o.encoding));
  out.hasMore = page.hasMore;
  out.truncatedHead = page.truncatedHead;
  if (page.firstAvailable) out.firstAvailableCursor = LogRing::cursorText(page.firstAvailable);
  if (!out.items.empty()) out.nextCursor = out.items.back().cursor;
  else out.nextCursor = o.cursor;
  return out;
}

ProcessResult<LogStream> ServiceCore::streamLogs(const std::string& id, const LogsOptions& o, std::stop_token stop) {
  const std::uint64_t after = cursorOrThrow(o.cursor);
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  return LogStream(std::make_unique<StreamCursor>(std::get<std::shared_ptr<Record>>(found), after, o.encoding,
                                                  std::move(stop)));
}

ProcessResult<PtyDuplex> ServiceCore::attach(const std::string& id) {
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  if (record->snapshot().kind != ProcessKind::kPty)
    return ProcessError{ProcessErrorCode::kUnsupported, "process " + id + " is not a PTY; stream its logs instead"};
  std::stop_source stop;
  auto cursor = std::make_unique<StreamCursor>(record, 0, std::nullopt, stop.get_token());
  return PtyDuplex(shared_from_this(), id, std::move(stop), std::move(cursor));
}

ProcessResult<WaitResult> ServiceCore::wait(const std::string& id,
                                            std::optional<std::chrono::milliseconds> timeout) const {
  if (timeout && timeout->count() < 0)
    throw std::invalid_argument("timeout " + std::to_string(timeout->count()) + " ms is negative");
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  auto result = std::get<std::shared_ptr<Record>>(found)->wait(timeout);
  if (!result)
    return ProcessError{ProcessErrorCode::kTimeout,
                        "process " + id + " still runs after " + std::to_string(timeout->count()) + " ms"};
  return *result;
}

ProcessStatus ServiceCore::kill(const std::string& id, const KillOptions& o) const {
  if (o.escalateAfter && o.escalateAfter->count() < 0)
    throw std::invalid_argument("escalateAfter " + std::to_string(o.escalateAfter->count()) + " ms is negative");
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  const ProcessDto dto = record->snapshot();
  if (dto.sessionId && dto.kind != ProcessKind::kSession) {
    // A command of a session: the signal ends the command, not the shell
    // (SessionState::stop); KILL, or a command still running 5 s later, ends the session.
    if (record->terminal()) return std::nullopt;
    if (auto session = sandbox_->registry().findSession(*dto.sessionId))
      session->stop(id, signalNumber(o.signal), /*graceEndsSession=*/true);
    return std::nullopt;
  }
  auto supervised = record->supervised();
  if (!supervised) return std::nullopt;  // it has ended: nothing left to signal
  std::optional<Escalation> escalation;
  if (o.signal != ProcessSignal::kKill)
    escalation = Escalation{o.escalateAfter.value_or(kDefaultEscalation), signalNumber(o.escalateTo)};
  supervised->kill(signalNumber(o.signal), escalation);
  return std::nullopt;
}

ProcessStatus ServiceCore::stdin(const std::string& id, std::string_view data, bool eof) const {
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  if (record->snapshot().stdin != StdinMode::kOpen)
    return ProcessError{ProcessErrorCode::kUnsupported,
                        "process " + id + " was started with stdin closed; start it with stdin open to write to it"};
  auto supervised = record->supervised();
  if (!supervised || !supervised->writeStdin(std::string(data), eof))
    return ProcessError{ProcessErrorCode::kUnsupported,
                        "the stdin of process " + id + " is closed (EOF was sent, the program closed it, or it ended)"};
  return std::nullopt;
}

ProcessStatus ServiceCore::resize(const std::string& id, TerminalSize size) const {
  if (size.cols == 0 || size.rows == 0)
    throw std::invalid_argument("resize " + std::to_string(size.cols) + "x" + std::to_string(size.rows) +
                                ": columns and rows must be positive");
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  auto terminal = record->ptyMaster();
  if (!terminal)
    return ProcessError{ProcessErrorCode::kUnsupported, "process " + id + " has no terminal; only PTY processes resize"};
  {
    // The foreground process group of the PTY gets SIGWINCH from the kernel.
    if (auto err = platform::setWindowSize(terminal->get(), {size.cols, size.rows}))
      return ProcessError{ProcessErrorCode::kUnavailable, "process " + id + ": " + *err};
    record->resized(size);
  }
  return std::nullopt;
}

ProcessStatus ServiceCore::remove(const std::string& id) const {
  auto found = find(id);
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<Record>>(found);
  const ProcessDto dto = record->snapshot();
  if (dto.kind == ProcessKind::kSession) return sessionRemove(id);
  if (!record->terminal() && dto.sessionId) {
    if (auto session = sandbox_->registry().findSession(*dto.sessionId))
      session->stop(id, SIGTERM, /*graceEndsSession=*/false);
    if (!record->wait(kSessionGrace))
      return ProcessError{ProcessErrorCode::kUnsupported,
                          "session command " + id + " did not stop within 5 s of TERM; delete its session " +
                              *dto.sessionId + " instead"};
  } else if (!record->terminal()) {
    if (auto supervised = record->supervised())
      supervised->kill(SIGTERM, Escalation{kDefaultEscalation, SIGKILL});
    (void)record->wait(std::nullopt);  // KILL after 5 s: the sandbox dies with its init
  }
  sandbox_->registry().remove(id);
  std::lock_guard lock(record->mu);
  record->ring.clear();
  return std::nullopt;
}

ProcessResult<Session> ServiceCore::createSession(const CreateSessionOptions& o) {
  ProcessStartOptions check;
  check.cwd = o.cwd;
  check.env = o.env;
  validateStart(ProcessCommand::shell("true"), check);
  if (auto e = stale()) return *e;
  auto shell = resolveShell(o.shell);
  if (auto* e = std::get_if<ProcessError>(&shell)) return *e;
  const std::string& path = std::get<std::string>(shell);
  ProcessDto dto;
  dto.id = newId("sess");
  dto.sessionId = dto.id;
  dto.name = o.name;
  dto.kind = ProcessKind::kSession;
  dto.cwd = cwdOf(*sandbox_, o.cwd);
  dto.stdin = StdinMode::kOpen;  // the session's script: only the supervisor writes it
  dto.login = o.login;
  dto.shell = o.shell.value_or(path.substr(path.rfind('/') + 1));
  dto.resolvedShell = path;
  std::vector<std::string> argv = {path};
  if (o.login) argv.push_back("-l");
  argv.push_back("-s");
  dto.argv = std::move(argv);
  const std::string id = dto.id;
  auto record = makeRecord(std::move(dto));
  auto session = std::make_shared<SessionState>(record, sandbox_->loop(), record->snapshot().cwd,
                                                findProgram("cat").value_or("cat"));
  std::weak_ptr<SessionState> weak = session;
  Hooks hooks;
  hooks.onOutput = [weak](LogChannel channel, std::string_view bytes) {
    if (auto s = weak.lock()) s->onOutput(channel, bytes);
  };
  hooks.onEnd = [session](const Ending& e) { session->onShellEnd(e); };
  sandbox_->registry().addSession(id, session);
  if (auto e = launch(record, o.env, std::move(hooks))) {
    sandbox_->registry().removeSession(id);
    return *e;
  }
  session->attach(record->supervised());
  return Session(shared_from_this(), id);
}

ProcessResult<ProcessDto> ServiceCore::sessionGet(const std::string& sessionId) const {
  if (auto e = stale()) return *e;
  auto session = sandbox_->registry().findSession(sessionId);
  if (!session) return ProcessError{ProcessErrorCode::kNotFound, "session " + sessionId + " is not known to this sandbox"};
  ProcessDto dto = session->shell()->snapshot();
  dto.cwd = session->cwd();
  return dto;
}

ProcessResult<ProcessHandle> ServiceCore::sessionStart(const std::string& sessionId, const std::string& command,
                                                       const SessionRunOptions& o) {
  if (command.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("command is empty; pass a shell command");
  if (command.find('\0') != std::string::npos) throw std::invalid_argument("command contains NUL");
  if (o.executionTimeout && o.executionTimeout->count() <= 0)
    throw std::invalid_argument("executionTimeout " + std::to_string(o.executionTimeout->count()) +
                                " ms is not positive; omit it for no deadline");
  if (auto e = stale()) return *e;
  auto session = sandbox_->registry().findSession(sessionId);
  if (!session) return ProcessError{ProcessErrorCode::kNotFound, "session " + sessionId + " is not known to this sandbox"};
  if (o.stdin == StdinMode::kOpen)
    return ProcessError{ProcessErrorCode::kUnsupported,
                        "a session command reads no stdin (the session's shell reads its script there); start a "
                        "process with stdin open instead"};
  const ProcessDto shell = session->shell()->snapshot();
  ProcessDto dto;
  dto.id = newId("proc");
  dto.sessionId = sessionId;
  dto.name = o.name;
  dto.kind = ProcessKind::kExec;
  dto.shellCommand = command;
  dto.shell = shell.shell;
  dto.resolvedShell = shell.resolvedShell;
  dto.cwd = session->cwd();
  dto.executionTimeout = o.executionTimeout;
  dto.keepLogs = o.keepLogs;
  const std::string id = dto.id;
  auto record = makeRecord(std::move(dto));
  if (!sandbox_->registry().add(record, id)) return *stale();
  if (!session->enqueue(record, command, o.executionTimeout)) {
    sandbox_->registry().remove(id);
    return ProcessError{ProcessErrorCode::kUnavailable, "session " + sessionId + " has ended; create a new one"};
  }
  return ProcessHandle(shared_from_this(), id);
}

ProcessStatus ServiceCore::sessionRemove(const std::string& sessionId) const {
  if (auto e = stale()) return *e;
  auto session = sandbox_->registry().findSession(sessionId);
  if (!session) return ProcessError{ProcessErrorCode::kNotFound, "session " + sessionId + " is not known to this sandbox"};
  session->end();
  (void)session->shell()->wait(std::nullopt);
  for (const auto& record : sandbox_->registry().all()) {
    const ProcessDto d = record->snapshot();
    if (d.sessionId == sessionId) sandbox_->registry().remove(d.id);
  }
  sandbox_->registry().removeSession(sessionId);
  return std::nullopt;
}

}  // namespace stockade::process

namespace stockade {

using process::ServiceCore;

LogStream::LogStream(std::unique_ptr<process::StreamCursor> cursor) : cursor_(std::move(cursor)) {}
LogStream::LogStream(LogStream&&) noexcept = default;
LogStream& LogStream::operator=(LogStream&&) noexcept = default;
LogStream::~LogStream() = default;
std::optional<StreamLogEvent> LogStream::next() { return cursor_ ? cursor_->next() : std::nullopt; }

PtyDuplex::PtyDuplex(std::shared_ptr<ServiceCore> core, std::string id, std::stop_source stop,
                     std::unique_ptr<process::StreamCursor> cursor)
    : core_(std::move(core)), id_(std::move(id)), stop_(std::move(stop)), cursor_(std::move(cursor)) {}
PtyDuplex::PtyDuplex(PtyDuplex&&) noexcept = default;
PtyDuplex& PtyDuplex::operator=(PtyDuplex&&) noexcept = default;
PtyDuplex::~PtyDuplex() = default;

std::optional<std::string> PtyDuplex::read() {
  truncated_ = false;
  while (cursor_) {
    auto event = cursor_->next();
    if (!event) return std::nullopt;  // eof, or closed
    if (auto* log = std::get_if<LogEvent>(&event->event)) return std::move(log->frame.data);
    if (std::holds_alternative<WarningEvent>(event->event)) truncated_ = true;
    // The state event: the eof follows.
  }
  return std::nullopt;
}

ProcessStatus PtyDuplex::write(std::string_view data) const {
  if (stop_.stop_requested())
    return ProcessError{ProcessErrorCode::kUnsupported, "this connection to process " + id_ + " was closed; attach again"};
  return core_->stdin(id_, data, false);
}

void PtyDuplex::close() noexcept { stop_.request_stop(); }

const std::string& ProcessHandle::sandboxId() const noexcept { return core_->sandboxId(); }
ProcessResult<ProcessDto> ProcessHandle::get() const { return core_->get(id_); }
ProcessResult<LogsPage> ProcessHandle::logs(const LogsOptions& options) const { return core_->logs(id_, options); }
ProcessResult<LogStream> ProcessHandle::streamLogs(const LogsOptions& options, std::stop_token stop) const {
  return core_->streamLogs(id_, options, std::move(stop));
}
ProcessResult<WaitResult> ProcessHandle::wait(std::optional<std::chrono::milliseconds> timeout) const {
  return core_->wait(id_, timeout);
}
ProcessStatus ProcessHandle::kill(const KillOptions& options) const { return core_->kill(id_, options); }
ProcessStatus ProcessHandle::stdin(std::string_view data, bool eof) const { return core_->stdin(id_, data, eof); }
ProcessStatus ProcessHandle::stdinEof() const { return core_->stdin(id_, {}, true); }
ProcessStatus ProcessHandle::remove() const { return core_->remove(id_); }

ProcessResult<ProcessHandle> ProcessService::start(const ProcessCommand& command,
                                                   const ProcessStartOptions& options) const {
  return core_->start(command, options);
}
ProcessResult<RunResult> ProcessService::run(const ProcessCommand& command, const ProcessRunOptions& options) const {
  return core_->run(command, options);
}
ProcessHandle ProcessService::connect(std::string id) const { return ProcessHandle(core_, std::move(id)); }
ProcessResult<ProcessDto> ProcessService::get(const std::string& id) const { return core_->get(id); }
ProcessResult<std::vector<ProcessDto>> ProcessService::list(const ProcessListOptions& options) const {
  return core_->list(options);
}

}  // namespace stockade

namespace stockade {

ProcessResult<Session> ProcessService::createSession(const CreateSessionOptions& options) const {
  return core_->createSession(options);
}
Session ProcessService::connectSession(std::string id) const { return Session(core_, std::move(id)); }

ProcessResult<ProcessDto> Session::get() const { return core_->sessionGet(id_); }
ProcessResult<ProcessHandle> Session::start(const std::string& command, const SessionRunOptions& options) const {
  return core_->sessionStart(id_, command, options);
}
ProcessResult<RunResult> Session::run(const std::string& command, const SessionRunOptions& options,
                                      std::optional<std::chrono::milliseconds> timeout) const {
  if (timeout && timeout->count() < 0)
    throw std::invalid_argument("timeout " + std::to_string(timeout->count()) + " ms is negative");
  auto started = core_->sessionStart(id_, command, options);
  if (auto* e = std::get_if<ProcessError>(&started)) return *e;
  auto found = core_->find(std::get<ProcessHandle>(started).id());
  if (auto* e = std::get_if<ProcessError>(&found)) return *e;
  const auto& record = std::get<std::shared_ptr<process::Record>>(found);
  auto result = record->wait(timeout);
  if (!result)
    return ProcessError{ProcessErrorCode::kTimeout, "session command " + std::get<ProcessHandle>(started).id() +
                                                        " still runs after " + std::to_string(timeout->count()) + " ms"};
  return ServiceCore::collect(*record, std::move(*result));
}
ProcessStatus Session::remove() const { return core_->sessionRemove(id_); }

}  // namespace stockade

namespace stockade {

ProcessStatus ProcessHandle::resize(TerminalSize size) const { return core_->resize(id_, size); }
ProcessResult<PtyDuplex> ProcessHandle::attach() const { return core_->attach(id_); }

ProcessResult<ProcessHandle> PtyService::start(std::optional<std::string> command, ProcessStartOptions options,
                                               TerminalSize size) const {
  ProcessCommand c;
  c.cmd = std::move(command);
  return core_->start(c, options, ProcessKind::kPty, size);
}

ProcessResult<PtyAttachment> PtyService::attach(std::optional<std::string> command, ProcessStartOptions options,
                                                TerminalSize size) const {
  auto started = start(std::move(command), std::move(options), size);
  if (auto* e = std::get_if<ProcessError>(&started)) return *e;
  auto& handle = std::get<ProcessHandle>(started);
  auto connection = handle.attach();
  if (auto* e = std::get_if<ProcessError>(&connection)) return *e;
  return PtyAttachment{std::move(handle), std::get<PtyDuplex>(std::move(connection))};
}

}  // namespace stockade
