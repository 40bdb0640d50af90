// Process records of one sandbox: ids, the state machine starting ->
// running -> terminal, the log ring, metrics, and waiters.
//
// Thread-safety: a Record's fields are guarded by its `mu`; the supervisor
// loop feeds it (output, the end), callers read and wait. Registry is
// guarded by a lock of its own, never held while a Record's is.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "src/process/log_ring.h"
#include "src/process/supervisor.h"
#include "stockade/process.h"

namespace stockade::process {

class SessionState;

class Record {
 public:
  // `listed`: shown by the process service's list(); the library's run()
  // registers its children unlisted (their output is the caller's).
  Record(ProcessDto initial, std::size_t ringBytes, std::shared_ptr<LogRing::Budget> budget, bool isListed = true)
      : ring(ringBytes, std::move(budget)), listed(isListed), dto_(std::move(initial)) {}

  // Loop thread (or the starter): the state machine.
  void running(pid_t pid, std::shared_ptr<Supervised> supervised);
  void output(LogChannel channel, std::string_view bytes);
  void ended(const Ending& ending);
  // Terminal with `result` (a session command, which has no sandbox of its own).
  void finish(WaitResult result);
  // Could not start; terminal with reason failed.
  void failed(const std::string& detail);
  // dispose(): a process still running when its supervision ends is lost.
  void markLost(const std::string& detail);

  ProcessDto snapshot() const;
  ProcessDto snapshotLocked() const;                  // the caller holds `mu`
  const std::optional<WaitResult>& resultLocked() const { return result_; }  // the caller holds `mu`
  // The result once terminal; nullopt after `timeout` or when `stop` was requested.
  std::optional<WaitResult> wait(std::optional<std::chrono::milliseconds> timeout, std::stop_token stop = {}) const;
  std::shared_ptr<Supervised> supervised() const;
  // A PTY process's master (for the window size); null otherwise.
  void setPtyMaster(platform::UniqueFd master);
  std::shared_ptr<const platform::UniqueFd> ptyMaster() const;
  void resized(TerminalSize size);
  std::optional<WaitResult> result() const;
  bool terminal() const;

  mutable std::mutex mu;
  mutable std::condition_variable_any changed;  // a state change or a new frame
  LogRing ring;                                  // under mu
  const bool listed;

 private:
  ProcessDto dto_;  // under mu; the ring's fields are filled by snapshot()
  std::shared_ptr<Supervised> supervised_;
  std::shared_ptr<const platform::UniqueFd> ptyMaster_;
  std::optional<WaitResult> result_;
  std::optional<std::string> lostDetail_;
};

class Registry {
 public:
  // False once closed (disposed).
  bool add(std::shared_ptr<Record> record, const std::string& id);
  std::shared_ptr<Record> find(const std::string& id) const;
  std::vector<std::shared_ptr<Record>> all() const;
  bool remove(const std::string& id);
  // Sessions by session id (the id of their shell's record).
  void addSession(const std::string& id, std::shared_ptr<SessionState> session);
  std::shared_ptr<SessionState> findSession(const std::string& id) const;
  void removeSession(const std::string& id);
  // No record is added from now on; returns every record held.
  std::vector<std::shared_ptr<Record>> close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  bool closed_ = false;
  std::map<std::string, std::shared_ptr<Record>> records_;
  std::map<std::string, std::shared_ptr<SessionState>> sessions_;
};

}  // namespace stockade::process
