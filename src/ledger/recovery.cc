#include "src/ledger/recovery.h"

namespace stockade::ledger {

RecoveryReport recoverProcesses(Ledger& ledger, std::chrono::milliseconds killWait) {
  RecoveryReport report;
  for (const ProcessRecord& p : ledger.unfinished()) {
    if (!p.identity) {
      // Recorded before dispatch, never marked started: the spawn may have
      // happened. Nothing identifies the group, so nothing is signalled.
      ledger.markLost(p.processKey, Termination::kUnconfirmed,
                      "the daemon stopped between recording the start and the spawn; nothing identifies the process");
      ++report.unconfirmed;
      continue;
    }
    std::int64_t effect = ledger.beginEffect(p.processKey, "recover", "SIGKILL pid " + std::to_string(p.identity->pid));
    platform::KillResult k = platform::killIdentified(*p.identity, killWait);
    switch (k.outcome) {
      case platform::KillOutcome::kKilled:
        ledger.endEffect(effect, true, "killed");
        ledger.markLost(p.processKey, Termination::kTerminated, "alive when the daemon restarted; killed");
        ++report.killed;
        break;
      case platform::KillOutcome::kAlreadyGone:
        ledger.endEffect(effect, true, "already gone");
        ledger.markLost(p.processKey, Termination::kAlreadyExited, "gone when the daemon restarted");
        ++report.alreadyGone;
        break;
      case platform::KillOutcome::kFailed:
        ledger.endEffect(effect, false, k.error);
        ledger.markLost(p.processKey, Termination::kUnconfirmed, k.error);
        report.errors.push_back(p.processKey + ": " + k.error);
        ++report.unconfirmed;
        break;
    }
  }
  return report;
}

std::string_view terminateAnswerName(TerminateAnswer a) noexcept {
  switch (a) {
    case TerminateAnswer::kTerminated: return "terminated";
    case TerminateAnswer::kAlreadyExited: return "already_exited";
    case TerminateAnswer::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<TerminateAnswer> answerFor(const ProcessRecord& r) {
  switch (r.state) {
    case ProcessState::kDispatching:
    case ProcessState::kRunning: return std::nullopt;
    case ProcessState::kExited:
    case ProcessState::kFailed: return TerminateAnswer::kAlreadyExited;
    case ProcessState::kKilled: return TerminateAnswer::kTerminated;
    case ProcessState::kLost:
      switch (r.termination) {
        case Termination::kTerminated: return TerminateAnswer::kTerminated;
        case Termination::kAlreadyExited: return TerminateAnswer::kAlreadyExited;
        case Termination::kNone:
        case Termination::kUnconfirmed: return TerminateAnswer::kUnknown;
      }
  }
  return TerminateAnswer::kUnknown;
}

TerminateAnswer terminateRecorded(Ledger& ledger, const std::string& sandboxId, const std::string& processKey,
                                  std::chrono::milliseconds killWait) {
  auto record = ledger.process(processKey);
  if (!record || record->sandboxId != sandboxId) return TerminateAnswer::kUnknown;
  if (auto answer = answerFor(*record)) return *answer;
  if (!record->identity) return TerminateAnswer::kUnknown;  // dispatching: nothing to confirm
  std::int64_t effect = ledger.beginEffect(processKey, "terminate", "SIGKILL pid " + std::to_string(record->identity->pid));
  platform::KillResult k = platform::killIdentified(*record->identity, killWait);
  switch (k.outcome) {
    case platform::KillOutcome::kKilled:
      ledger.endEffect(effect, true, "killed");
      ledger.markEnded(processKey, ProcessState::kKilled, std::nullopt, 9, "terminate");
      return TerminateAnswer::kTerminated;
    case platform::KillOutcome::kAlreadyGone:
      ledger.endEffect(effect, true, "already gone");
      ledger.markEnded(processKey, ProcessState::kExited, std::nullopt, std::nullopt, "gone before terminate");
      return TerminateAnswer::kAlreadyExited;
    case platform::KillOutcome::kFailed:
      ledger.endEffect(effect, false, k.error);
      return TerminateAnswer::kUnknown;
  }
  return TerminateAnswer::kUnknown;
}

std::optional<std::string> releaseSandbox(Ledger& ledger, const SandboxRecord& sandbox, const ReleaseFn& release) {
  ledger.setSandboxState(sandbox.id, SandboxState::kReleasing);
  std::optional<std::string> error;
  try {
    error = release(sandbox);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (error) {
    ledger.setSandboxState(sandbox.id, SandboxState::kReleaseFailed, *error);
    return error;
  }
  ledger.setSandboxState(sandbox.id, SandboxState::kReleased);
  return std::nullopt;
}

int collectReleases(Ledger& ledger, const ReleaseFn& release) {
  int released = 0;
  for (SandboxState state : {SandboxState::kReleaseFailed, SandboxState::kReleasing}) {
    for (const SandboxRecord& s : ledger.sandboxesIn(state))
      if (!releaseSandbox(ledger, s, release)) ++released;
  }
  return released;
}

}  // namespace stockade::ledger
