// The seeds' strings for the public process types (stockade/process.h).
#include "stockade/process.h"

namespace stockade {

std::string_view processKindName(ProcessKind k) noexcept {
  switch (k) {
    case ProcessKind::kExec: return "exec";
    case ProcessKind::kPty: return "pty";
    case ProcessKind::kCode: return "code";
    case ProcessKind::kSession: return "session";
  }
  return "unknown";
}

std::string_view processStateName(ProcessState s) noexcept {
  switch (s) {
    case ProcessState::kStarting: return "starting";
    case ProcessState::kRunning: return "running";
    case ProcessState::kTerminal: return "terminal";
  }
  return "unknown";
}

std::string_view processReasonName(ProcessReason r) noexcept {
  switch (r) {
    case ProcessReason::kExited: return "exited";
    case ProcessReason::kSignaled: return "signaled";
    case ProcessReason::kTimedOut: return "timed_out";
    case ProcessReason::kLost: return "lost";
    case ProcessReason::kFailed: return "failed";
  }
  return "unknown";
}

std::string_view keepLogsName(KeepLogs k) noexcept {
  switch (k) {
    case KeepLogs::kUntilCleanup: return "until_cleanup";
    case KeepLogs::kOnExitTtl: return "on_exit_ttl";
    case KeepLogs::kNone: return "none";
  }
  return "unknown";
}

std::string_view stdinModeName(StdinMode m) noexcept { return m == StdinMode::kOpen ? "open" : "closed"; }

std::string_view logChannelName(LogChannel c) noexcept {
  switch (c) {
    case LogChannel::kStdout: return "stdout";
    case LogChannel::kStderr: return "stderr";
    case LogChannel::kPty: return "pty";
    case LogChannel::kSetup: return "setup";
  }
  return "unknown";
}

std::string_view logEncodingName(LogEncoding e) noexcept { return e == LogEncoding::kBase64 ? "base64" : "text"; }

std::string_view processSignalName(ProcessSignal s) noexcept {
  switch (s) {
    case ProcessSignal::kTerm: return "TERM";
    case ProcessSignal::kKill: return "KILL";
    case ProcessSignal::kInt: return "INT";
    case ProcessSignal::kHup: return "HUP";
    case ProcessSignal::kQuit: return "QUIT";
    case ProcessSignal::kUsr1: return "USR1";
    case ProcessSignal::kUsr2: return "USR2";
  }
  return "unknown";
}

std::string_view processErrorCodeName(ProcessErrorCode c) noexcept {
  switch (c) {
    case ProcessErrorCode::kNotFound: return "not_found";
    case ProcessErrorCode::kTimeout: return "timeout";
    case ProcessErrorCode::kStaleEpoch: return "stale_epoch";
    case ProcessErrorCode::kUnavailable: return "unavailable";
    case ProcessErrorCode::kUnsupported: return "unsupported";
    case ProcessErrorCode::kInvalidPath: return "invalid_path";
  }
  return "unknown";
}

ProcessReason reasonOf(const WaitResult& result) noexcept {
  struct {
    ProcessReason operator()(const Exited&) const { return ProcessReason::kExited; }
    ProcessReason operator()(const Signaled&) const { return ProcessReason::kSignaled; }
    ProcessReason operator()(const TimedOut&) const { return ProcessReason::kTimedOut; }
    ProcessReason operator()(const Lost&) const { return ProcessReason::kLost; }
    ProcessReason operator()(const Failed&) const { return ProcessReason::kFailed; }
  } visitor;
  return std::visit(visitor, result);
}

}  // namespace stockade
