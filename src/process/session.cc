#include "src/process/session.h"

#include <signal.h>

#include <utility>

#include "src/process/launcher.h"
#include "src/process/service.h"

namespace stockade::process {
namespace {

constexpr char kMarkerEnd = '\036';

std::string nonce() {
  std::string id = newId("n");
  return id.substr(2);  // the 16 hex digits
}

// The signals a stop sends, and the status a command they interrupt ends with.
constexpr std::pair<const char*, int> kStopSignals[] = {{"HUP", 129},  {"INT", 130},  {"QUIT", 131},
                                                        {"USR1", 138}, {"USR2", 140}, {"TERM", 143}};

// The traps that make a signal end the running command. A trap's `return`
// leaves only the innermost shell function, and the rest of the command
// would run on. So in bash the trap also sets a DEBUG trap that returns from
// every enclosing function before its next command, down to the top level,
// where kUnwound removes it again (and puts back a DEBUG trap of the
// session's own that it replaced). Other shells leave the innermost function
// only (seed 003 says so for dash, BusyBox sh and mksh).
std::string stopTraps() {
  std::string bash, posix;
  for (const auto& [name, code] : kStopSignals) {
    const std::string n = std::to_string(code);
    bash += "trap 'if [ -n \"${FUNCNAME+x}\" ]; then [ -n \"${__stockade_stop+x}\" ] || __stockade_dbg=$(trap -p "
            "DEBUG); __stockade_stop=" + n + "; trap \"[ -z \\\"\\${FUNCNAME+x}\\\" ] || return \\$__stockade_stop\" "
            "DEBUG; return " + n + "; fi' " + name + "\n";
    posix += "trap 'return " + n + "' " + name + "\n";
  }
  return "if [ -n \"${BASH_VERSION-}\" ]; then\n" + bash + "else\n" + posix + "fi\n";
}

// At the top level, before and after each command: the unwinding DEBUG
// trap of stopTraps() removed (bash restores on a function's return a DEBUG
// trap the command set without `set -T`; then it is not ours and stays).
constexpr const char* kUnwound =
    "if [ -n \"${__stockade_stop+x}\" ]; then case $(trap -p DEBUG) in *__stockade_stop*) trap - DEBUG; "
    "eval \"$__stockade_dbg\";; esac; unset __stockade_stop __stockade_dbg; fi";

}  // namespace

SessionState::SessionState(std::shared_ptr<Record> shell, EventLoop& loop, std::string cwd, std::string cat)
    : shell_(std::move(shell)),
      loop_(loop),
      tag_(std::string(1, kMarkerEnd) + "STK" + nonce() + " "),
      terminator_("STOCKADE_END_" + nonce()),
      cat_(std::move(cat)),
      cwd_(std::move(cwd)) {}

void SessionState::attach(std::shared_ptr<Supervised> shell) {
  std::lock_guard lock(mu_);
  supervised_ = std::move(shell);
  // A signal to the sandbox (forwarded by its init to every process) ends
  // the command: its processes die of it, and the trap in the shell returns
  // from the function the command runs in, skipping the rest of it; the
  // shell itself lives on.
  supervised_->writeStdin("__stockade_run() { eval \"$__stockade_cmd\"; }\n" + stopTraps(), false);
}

bool SessionState::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

std::string SessionState::cwd() const {
  std::lock_guard lock(mu_);
  return cwd_;
}

bool SessionState::enqueue(std::shared_ptr<Record> record, std::string command,
                           std::optional<std::chrono::milliseconds> timeout) {
  {
    std::lock_guard lock(mu_);
    if (ended_) return false;
    Command c;
    c.id = record->snapshot().id;
    c.record = std::move(record);
    c.text = std::move(command);
    c.timeout = timeout;
    c.number = nextNumber_++;
    queue_.push_back(std::move(c));
  }
  std::weak_ptr<SessionState> weak = shared_from_this();
  loop_.post([weak] {
    if (auto s = weak.lock()) {
      std::lock_guard lock(s->mu_);
      s->dispatchLocked();
    }
  });
  return true;
}

void SessionState::dispatchLocked() {
  if (ended_ || current_ || queue_.empty() || !supervised_) return;
  current_ = std::move(queue_.front());
  queue_.pop_front();
  Command& c = *current_;
  c.record->running(supervised_->pid(), nullptr);
  const std::string n = std::to_string(c.number);
  const std::string printfTag = "\\036" + tag_.substr(1);  // the tag as a printf format: \036STK<nonce><space>
  // The command's stdin, stdout and stderr are redirections of its function
  // call, undone when it returns: a command that redirects the shell's own
  // (`exec >log 2>&1`, `exec 1>&-`, `exec </dev/null`) redirects only
  // itself, and the markers still reach the supervisor. stdout and stderr
  // are reopened through /proc (the sandbox always has its own), so no
  // descriptor of the command is taken for a copy.
  std::string script = "__stockade_cmd=$(" + cat_ + " <<'" + terminator_ + "'\n" + c.text + "\n" + terminator_ +
                       "\n); " + kUnwound + "; __stockade_run </dev/null >>/proc/self/fd/1 2>>/proc/self/fd/2; " +
                       "__stockade_status=$?; " + kUnwound + "; printf '" + printfTag + n +
                       " %s %s\\036' \"$__stockade_status\" \"$PWD\"; printf '" + printfTag + n + "\\036' >&2\n";
  supervised_->writeStdin(std::move(script), false);
  if (c.timeout) {
    std::weak_ptr<SessionState> weak = shared_from_this();
    loop_.after(*c.timeout, [weak, number = c.number] {
      auto s = weak.lock();
      if (!s) return;
      std::lock_guard lock(s->mu_);
      if (!s->current_ || s->current_->number != number) return;
      s->current_->timedOut = true;
      s->interruptLocked(SIGINT, /*graceEndsSession=*/true);
    });
  }
}

void SessionState::interruptLocked(int signal, bool graceEndsSession) {
  if (!supervised_ || !current_) return;
  if (signal == SIGKILL) {  // cannot be trapped: it ends the shell, and the session with it
    supervised_->kill(SIGKILL);
    return;
  }
  if (!current_->stoppedBy) current_->stoppedBy = signal;
  supervised_->kill(signal);  // the init forwards it to every process; the shell traps it
  if (!graceEndsSession) return;
  std::weak_ptr<SessionState> weak = shared_from_this();
  loop_.after(kSessionGrace, [weak, number = current_->number] {
    auto s = weak.lock();
    if (!s) return;
    std::lock_guard lock(s->mu_);
    if (s->current_ && s->current_->number == number && s->supervised_) s->supervised_->kill(SIGKILL);
  });
}

void SessionState::stop(const std::string& id, int signal, bool graceEndsSession) {
  std::weak_ptr<SessionState> weak = shared_from_this();
  loop_.post([weak, id, signal, graceEndsSession] {
    auto s = weak.lock();
    if (!s) return;
    std::lock_guard lock(s->mu_);
    for (auto it = s->queue_.begin(); it != s->queue_.end(); ++it) {
      if (it->id != id) continue;
      it->record->finish(Failed{std::nullopt, "stopped before it started"});
      s->queue_.erase(it);
      return;
    }
    if (s->current_ && s->current_->id == id) s->interruptLocked(signal, graceEndsSession);
  });
}

void SessionState::end() {
  std::lock_guard lock(mu_);
  if (supervised_) supervised_->kill(SIGKILL);
}

void SessionState::emit(LogChannel channel, std::string_view bytes) {
  if (bytes.empty()) return;
  (current_ ? *current_->record : *shell_).output(channel, bytes);
}

void SessionState::feed(std::string& buffer, LogChannel channel, std::string_view bytes) {
  buffer.append(bytes);
  for (;;) {
    const auto at = buffer.find(tag_);
    if (at == std::string::npos) {
      // Hold back a tail that could be the start of a marker.
      std::size_t keep = 0;
      for (std::size_t k = std::min(buffer.size(), tag_.size() - 1); k > 0; --k)
        if (buffer.compare(buffer.size() - k, k, tag_, 0, k) == 0) {
          keep = k;
          break;
        }
      emit(channel, std::string_view(buffer).substr(0, buffer.size() - keep));
      buffer.erase(0, buffer.size() - keep);
      return;
    }
    emit(channel, std::string_view(buffer).substr(0, at));
    const auto end = buffer.find(kMarkerEnd, at + tag_.size());
    if (end == std::string::npos) {
      buffer.erase(0, at);
      return;
    }
    const std::string body = buffer.substr(at + tag_.size(), end - at - tag_.size());
    buffer.erase(0, end + 1);
    onMarker(channel, body);
  }
}

void SessionState::onOutput(LogChannel channel, std::string_view bytes) {
  std::lock_guard lock(mu_);
  feed(channel == LogChannel::kStderr ? errBuffer_ : outBuffer_, channel, bytes);
}

void SessionState::onMarker(LogChannel channel, std::string_view body) {
  // stdout: "<n> <status> <pwd>"; stderr: "<n>".
  const auto space = body.find(' ');
  const std::string number(body.substr(0, space));
  if (!current_ || number != std::to_string(current_->number)) return;  // not ours (forged or stale)
  Command& c = *current_;
  if (channel == LogChannel::kStderr) {
    c.errDone = true;
  } else {
    const auto rest = space == std::string_view::npos ? std::string_view() : body.substr(space + 1);
    const auto space2 = rest.find(' ');
    try {
      c.status = std::stoi(std::string(rest.substr(0, space2)));
    } catch (...) {
      c.status = -1;
    }
    if (space2 != std::string_view::npos) cwd_ = std::string(rest.substr(space2 + 1));
    c.outDone = true;
  }
  if (!c.outDone || !c.errDone) return;
  if (c.timedOut) completeLocked(TimedOut{});
  else if (c.stoppedBy && c.status > 128) completeLocked(Signaled{signalName(c.status - 128)});
  else completeLocked(Exited{c.status});
}

void SessionState::completeLocked(WaitResult result) {
  current_->record->finish(std::move(result));
  current_.reset();
  dispatchLocked();
}

void SessionState::onShellEnd(const Ending& ending) {
  std::lock_guard lock(mu_);
  ended_ = true;
  shell_->ended(ending);  // first: whoever sees a command end here sees the session ended too
  // Whatever the shell wrote last belongs to the command that was running.
  emit(LogChannel::kStdout, outBuffer_);
  emit(LogChannel::kStderr, errBuffer_);
  outBuffer_.clear();
  errBuffer_.clear();
  if (current_) {
    if (current_->timedOut) current_->record->finish(TimedOut{});
    else current_->record->finish(Failed{std::nullopt, "the session's shell ended while the command ran"});
    current_.reset();
  }
  for (auto& c : queue_) c.record->finish(Failed{std::nullopt, "the session ended before the command ran"});
  queue_.clear();
  supervised_.reset();
}

}  // namespace stockade::process
