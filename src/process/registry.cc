#include "src/process/registry.h"

#include "src/process/launcher.h"

namespace stockade::process {

void Record::running(pid_t pid, std::shared_ptr<Supervised> supervised) {
  {
    std::lock_guard lock(mu);
    // The child can end before its starter gets here (ended() ran first, on
    // the supervisor's thread): nothing is left to supervise, and holding it
    // would keep its pidfd, seccomp listener and pipe open as long as the
    // record (seen under load: one child's three descriptors in a hundred).
    // The record still says which process it was: its pid, and a start no
    // later than its end.
    if (dto_.state == ProcessState::kTerminal) {
      if (!dto_.pid) dto_.pid = pid;
      if (!dto_.startedAt) dto_.startedAt = dto_.exitedAt;
      return;
    }
    supervised_ = std::move(supervised);
    if (dto_.state == ProcessState::kStarting) {
      dto_.state = ProcessState::kRunning;
      dto_.pid = pid;
      dto_.startedAt = std::chrono::system_clock::now();
    }
  }
  changed.notify_all();
}

void Record::output(LogChannel channel, std::string_view bytes) {
  {
    std::lock_guard lock(mu);
    ring.append(channel, bytes, std::chrono::system_clock::now());
    (channel == LogChannel::kStderr ? dto_.metrics.stderrBytes : dto_.metrics.stdoutBytes) += bytes.size();
  }
  changed.notify_all();
}

void Record::ended(const Ending& e) {
  {
    std::lock_guard lock(mu);
    dto_.exitedAt = std::chrono::system_clock::now();
    dto_.state = ProcessState::kTerminal;
    // The sandbox cgroup's count when it has one (every task, reaped or not), else the init's rusage.
    dto_.metrics.cpuTime = e.status.cpuTime
                               ? std::chrono::duration_cast<std::chrono::microseconds>(*e.status.cpuTime)
                               : e.status.usage.cpuTime;
    dto_.metrics.peakMemoryBytes = e.status.usage.peakRssBytes;
    dto_.metrics.denials = e.denials;
    // limits.pids refuses forks and kills nothing: it is reached, not a kill.
    if (e.status.limit && std::string_view(e.status.limit) != "limits.pids") dto_.metrics.killedByLimit = e.status.limit;
    else if (!e.limit.empty()) dto_.metrics.killedByLimit = e.limit;
    if (dto_.metrics.killedByLimit) dto_.metrics.limitReached = dto_.metrics.killedByLimit;
    else if (e.status.limit) dto_.metrics.limitReached = e.status.limit;
    const bool signaled = e.status.kind == platform::ExitStatus::Kind::kSignaled;
    if (signaled) dto_.signal = signalName(e.status.value);
    else dto_.exitCode = e.status.value;
    if (lostDetail_) {
      result_ = Lost{*lostDetail_};
    } else if (e.cause == Ending::Cause::kTimedOut) {
      result_ = TimedOut{};
    } else if (e.cause == Ending::Cause::kFailed) {
      result_ = Failed{std::nullopt, e.error};
    } else if (signaled) {
      result_ = Signaled{signalName(e.status.value)};
    } else {
      result_ = Exited{e.status.value};
    }
    dto_.reason = reasonOf(*result_);
    if (auto* f = std::get_if<Failed>(&*result_)) dto_.reasonDetail = f->detail;
    if (auto* l = std::get_if<Lost>(&*result_)) dto_.reasonDetail = l->detail;
    if (dto_.keepLogs == KeepLogs::kNone) ring.clear();
    supervised_.reset();
    ptyMaster_.reset();
  }
  changed.notify_all();
}

void Record::finish(WaitResult result) {
  {
    std::lock_guard lock(mu);
    if (result_) return;
    if (lostDetail_) result = Lost{*lostDetail_};
    dto_.state = ProcessState::kTerminal;
    if (!dto_.startedAt) dto_.startedAt = std::chrono::system_clock::now();
    dto_.exitedAt = std::chrono::system_clock::now();
    if (auto* e = std::get_if<Exited>(&result)) dto_.exitCode = e->exitCode;
    if (auto* s = std::get_if<Signaled>(&result)) dto_.signal = s->signal;
    if (auto* f = std::get_if<Failed>(&result)) dto_.reasonDetail = f->detail;
    if (auto* l = std::get_if<Lost>(&result)) dto_.reasonDetail = l->detail;
    dto_.reason = reasonOf(result);
    result_ = std::move(result);
    if (dto_.keepLogs == KeepLogs::kNone) ring.clear();
    supervised_.reset();
  }
  changed.notify_all();
}

void Record::failed(const std::string& detail) {
  {
    std::lock_guard lock(mu);
    if (result_) return;
    dto_.state = ProcessState::kTerminal;
    dto_.exitedAt = std::chrono::system_clock::now();
    result_ = Failed{std::nullopt, detail};
    dto_.reason = ProcessReason::kFailed;
    dto_.reasonDetail = detail;
  }
  changed.notify_all();
}

void Record::markLost(const std::string& detail) {
  std::lock_guard lock(mu);
  if (!result_) lostDetail_ = detail;
}

ProcessDto Record::snapshot() const {
  std::lock_guard lock(mu);
  return snapshotLocked();
}

ProcessDto Record::snapshotLocked() const {
  ProcessDto d = dto_;
  d.truncatedHead = ring.truncatedHead();
  d.metrics.droppedLogBytes = ring.droppedBytes();
  if (auto first = ring.firstAvailable()) d.firstAvailableCursor = LogRing::cursorText(first);
  if (auto last = ring.lastSequence()) d.lastCursor = LogRing::cursorText(last);
  return d;
}

std::optional<WaitResult> Record::wait(std::optional<std::chrono::milliseconds> timeout, std::stop_token stop) const {
  std::unique_lock lock(mu);
  auto done = [&] { return result_.has_value(); };
  if (timeout) changed.wait_for(lock, stop, *timeout, done);
  else changed.wait(lock, stop, done);
  return result_;
}

std::shared_ptr<Supervised> Record::supervised() const {
  std::lock_guard lock(mu);
  return supervised_;
}

void Record::setPtyMaster(platform::UniqueFd master) {
  std::lock_guard lock(mu);
  if (dto_.state == ProcessState::kTerminal) return;  // ended first: closed here (see running())
  ptyMaster_ = std::make_shared<const platform::UniqueFd>(std::move(master));
}

std::shared_ptr<const platform::UniqueFd> Record::ptyMaster() const {
  std::lock_guard lock(mu);
  return ptyMaster_;
}

void Record::resized(TerminalSize size) {
  std::lock_guard lock(mu);
  dto_.terminal = size;
}

std::optional<WaitResult> Record::result() const {
  std::lock_guard lock(mu);
  return result_;
}

bool Record::terminal() const {
  std::lock_guard lock(mu);
  return result_.has_value();
}

bool Registry::add(std::shared_ptr<Record> record, const std::string& id) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  records_.emplace(id, std::move(record));
  return true;
}

std::shared_ptr<Record> Registry::find(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Record>> Registry::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Record>> out;
  out.reserve(records_.size());
  for (const auto& [id, r] : records_) out.push_back(r);
  return out;
}

void Registry::addSession(const std::string& id, std::shared_ptr<SessionState> session) {
  std::lock_guard lock(mu_);
  sessions_[id] = std::move(session);
}

std::shared_ptr<SessionState> Registry::findSession(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

void Registry::removeSession(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

bool Registry::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  return records_.erase(id) != 0;
}

std::vector<std::shared_ptr<Record>> Registry::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  std::vector<std::shared_ptr<Record>> out;
  for (const auto& [id, r] : records_) out.push_back(r);
  return out;
}

bool Registry::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace stockade::process
