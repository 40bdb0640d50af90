// What the ledger is for: after a crash, the process groups a dead daemon
// started are found, killed (only if each pid still names the recorded
// process) and marked lost; terminate(processKey) answers from the record;
// a close that failed to release is retried until it does.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/ledger/ledger.h"

namespace stockade::ledger {

struct RecoveryReport {
  int killed = 0;        // alive at the restart, killed
  int alreadyGone = 0;   // gone before we looked
  int unconfirmed = 0;   // no identity recorded (the crash came between the record and the spawn), or not killable
  std::vector<std::string> errors;
  int total() const { return killed + alreadyGone + unconfirmed; }
};

// Run once at start-up, before serving: every process recorded dispatching
// or running belonged to the daemon that died. Each is killed through its
// identity and marked lost with how it ended.
RecoveryReport recoverProcesses(Ledger& ledger, std::chrono::milliseconds killWait = std::chrono::milliseconds(5000));

enum class TerminateAnswer { kTerminated, kAlreadyExited, kUnknown };
std::string_view terminateAnswerName(TerminateAnswer a) noexcept;  // "terminated", "already_exited", "unknown"

// The answer for a process that has ended, from its record alone (seed 000:
// unknown whenever the end is unconfirmed). nullopt while it is recorded
// dispatching or running: the caller must kill it first.
std::optional<TerminateAnswer> answerFor(const ProcessRecord& record);

// terminate(processKey) for a process with no live handle in this daemon:
// a key the sandbox never used is unknown; a recorded running group is
// killed through its identity (written as an effect first), then answered.
TerminateAnswer terminateRecorded(Ledger& ledger, const std::string& sandboxId, const std::string& processKey,
                                  std::chrono::milliseconds killWait = std::chrono::milliseconds(5000));

// Does the work of a close (kill the sandbox's processes, remove its owned
// workspace); returns the error, nullopt on success.
using ReleaseFn = std::function<std::optional<std::string>(const SandboxRecord&)>;

// A close: marked releasing before `release` runs, then released, or
// release_failed with the error (kept, never dropped). Returns the error.
std::optional<std::string> releaseSandbox(Ledger& ledger, const SandboxRecord& sandbox, const ReleaseFn& release);

// The collection pass: retries every sandbox left release_failed, or
// releasing (a daemon died mid-close). Returns how many are released now.
int collectReleases(Ledger& ledger, const ReleaseFn& release);

}  // namespace stockade::ledger
