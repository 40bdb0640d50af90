// A persistent shell session (seed 003's Session): one shell process in a
// sandbox of its own; commands run in it one at a time, in order, each with
// its own record (id, exit code, logs), and cd, exports and functions carry
// over because they all run in the same shell.
//
// Protocol. The shell reads its script from its stdin, which only the
// supervisor writes. At the start it gets a function that evals
// $__stockade_cmd, and traps that make a signal return from it:
//   __stockade_run() { eval "$__stockade_cmd"; }
//   trap 'return 130' INT; ... (HUP, QUIT, USR1, USR2, TERM; in bash the
//   trap also unwinds every enclosing function, session.cc's stopTraps())
// Each command then goes as
//   __stockade_cmd=$(cat <<'<terminator>'
//   <command>
//   <terminator>
//   ); __stockade_run </dev/null >>/proc/self/fd/1 2>>/proc/self/fd/2; __stockade_status=$?;
//   printf '\036<tag> <n> %s %s\036' "$__stockade_status" "$PWD"; printf '\036<tag> <n>\036' >&2
// so an incomplete command (an open quote) is eval's syntax error, not a
// shell waiting for more input, a command's `exec >file` redirects only
// itself (its stdio are redirections of the call, undone after it), and its
// output is everything before the two markers (the tag carries a random
// nonce). A signal to the sandbox (its init forwards it to every process)
// kills the command's processes and makes the shell return from the
// function, skipping the rest of the command; the shell lives on. A command
// still running 5 s after its timeout or stop ends the session instead of
// wedging it.
//
// Thread-safety: every member function may be called from any thread; the
// dispatching, parsing and timers run on the supervisor's loop.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "src/process/registry.h"
#include "src/process/supervisor.h"

namespace stockade::process {

// How long a command may outlive its timeout or stop before it ends the session.
inline constexpr auto kSessionGrace = std::chrono::seconds(5);

class SessionState : public std::enable_shared_from_this<SessionState> {
 public:
  // `cat`: the path of cat(1), which reads each command's text back (the
  // child's PATH is the policy's business).
  SessionState(std::shared_ptr<Record> shell, EventLoop& loop, std::string cwd, std::string cat);

  // Once the shell runs (loop or starter thread): sends the traps.
  void attach(std::shared_ptr<Supervised> shell);
  // The shell's output and end, on the loop.
  void onOutput(LogChannel channel, std::string_view bytes);
  void onShellEnd(const Ending& ending);

  // Queues `command` for `record` (kind exec, sessionId set). False when the
  // session has ended.
  bool enqueue(std::shared_ptr<Record> record, std::string command, std::optional<std::chrono::milliseconds> timeout);
  // Stops the command `id`: a queued one never runs; the running one gets
  // `signal` (KILL ends the session), and with `graceEndsSession` a command
  // still running kSessionGrace later ends the session.
  void stop(const std::string& id, int signal, bool graceEndsSession);
  // Ends the shell (SIGKILL); queued and running commands fail.
  void end();

  std::string cwd() const;
  const std::shared_ptr<Record>& shell() const noexcept { return shell_; }
  bool ended() const;

 private:
  struct Command {
    std::shared_ptr<Record> record;
    std::string id;
    std::string text;
    std::optional<std::chrono::milliseconds> timeout;
    std::uint64_t number = 0;
    bool timedOut = false;
    std::optional<int> stoppedBy;  // the signal a stop() sent
    bool outDone = false, errDone = false;
    int status = 0;
  };
  // Loop thread; `mu_` held.
  void dispatchLocked();
  void completeLocked(WaitResult result);
  void interruptLocked(int signal, bool graceEndsSession);
  void feed(std::string& buffer, LogChannel channel, std::string_view bytes);
  void onMarker(LogChannel channel, std::string_view body);
  void emit(LogChannel channel, std::string_view bytes);

  const std::shared_ptr<Record> shell_;
  EventLoop& loop_;
  const std::string tag_;         // "STK" + nonce: marks the protocol's lines
  const std::string terminator_;  // the heredoc terminator
  const std::string cat_;
  mutable std::mutex mu_;
  std::shared_ptr<Supervised> supervised_;
  std::deque<Command> queue_;
  std::optional<Command> current_;
  std::uint64_t nextNumber_ = 1;
  std::string cwd_;
  std::string outBuffer_, errBuffer_;  // loop thread: bytes that may hold the start of a marker
  bool ended_ = false;
};

}  // namespace stockade::process
