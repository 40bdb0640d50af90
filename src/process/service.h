// The process service's implementation behind the public handles
// (stockade/process.h): one ServiceCore per sandbox context, stateless
// itself -- the records live in the sandbox's registry.
#pragma once

#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "src/process/sandbox_context.h"
#include "stockade/process.h"

namespace stockade::process {

// Limits of the service (not configurable per call).
inline constexpr auto kDefaultEscalation = std::chrono::seconds(5);  // KillOptions::escalateAfter
inline constexpr auto kOnExitTtl = std::chrono::minutes(5);          // KeepLogs::kOnExitTtl retention
inline constexpr std::size_t kMaxLogsLimit = 10000;                   // LogsOptions::limit

class ServiceCore : public std::enable_shared_from_this<ServiceCore> {
 public:
  explicit ServiceCore(std::shared_ptr<SandboxContext> sandbox) : sandbox_(std::move(sandbox)) {}

  // kind kExec, or kPty with `terminal` (stdin is then always open).
  ProcessResult<ProcessHandle> start(const ProcessCommand& command, const ProcessStartOptions& options,
                                     ProcessKind kind = ProcessKind::kExec,
                                     std::optional<TerminalSize> terminal = std::nullopt);
  ProcessStatus resize(const std::string& id, TerminalSize size) const;
  ProcessResult<RunResult> run(const ProcessCommand& command, const ProcessRunOptions& options);
  ProcessResult<ProcessDto> get(const std::string& id) const;
  ProcessResult<std::vector<ProcessDto>> list(const ProcessListOptions& options) const;

  ProcessResult<LogsPage> logs(const std::string& id, const LogsOptions& options) const;
  ProcessResult<LogStream> streamLogs(const std::string& id, const LogsOptions& options, std::stop_token stop);
  ProcessResult<PtyDuplex> attach(const std::string& id);
  ProcessResult<WaitResult> wait(const std::string& id, std::optional<std::chrono::milliseconds> timeout) const;
  ProcessStatus kill(const std::string& id, const KillOptions& options) const;
  ProcessStatus stdin(const std::string& id, std::string_view data, bool eof) const;
  ProcessStatus remove(const std::string& id) const;

  ProcessResult<Session> createSession(const CreateSessionOptions& options);
  ProcessResult<ProcessDto> sessionGet(const std::string& sessionId) const;
  ProcessResult<ProcessHandle> sessionStart(const std::string& sessionId, const std::string& command,
                                            const SessionRunOptions& options);
  ProcessStatus sessionRemove(const std::string& sessionId) const;

  // The record, or not_found / stale_epoch.
  ProcessResult<std::shared_ptr<Record>> find(const std::string& id) const;
  std::optional<ProcessError> stale() const;
  const std::string& sandboxId() const noexcept;
  // Where a process starts when no cwd is given.
  std::string defaultCwd() const;

  // How a launched record's output and end are handled; the defaults feed
  // the record itself.
  struct Hooks {
    std::function<void(LogChannel, std::string_view)> onOutput;
    std::function<void(const Ending&)> onEnd;
  };
  // A record for `dto` (id, argv, cwd, ... filled in) in this sandbox.
  std::shared_ptr<Record> makeRecord(ProcessDto dto) const;
  // Registers `record`, admits, launches its argv, and marks it running.
  // SandboxError for drift or a failed spawn.
  ProcessStatus launch(const std::shared_ptr<Record>& record, const std::map<std::string, std::string>& env,
                       Hooks hooks);

  // Every frame of `record` from the oldest held, split into a RunResult.
  static RunResult collect(const Record& record, WaitResult result);
  static LogFrame frameOf(const LogRing::Frame& frame, LogEncoding encoding);

 private:
  std::shared_ptr<SandboxContext> sandbox_;  // null: disposed before the service was made
};

std::shared_ptr<ServiceCore> makeServiceCore(std::shared_ptr<SandboxContext> sandbox);

// A random id: "proc-1f2e3d4c5b6a7988".
std::string newId(std::string_view prefix);

// The first of /usr/local/bin, /usr/bin, /bin holding an executable `name`.
std::optional<std::string> findProgram(const std::string& name);

// The signal number of a seed signal name.
int signalNumber(ProcessSignal signal) noexcept;

}  // namespace stockade::process
