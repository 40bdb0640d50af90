// The supervisor: ONE event loop (event_loop.h) serving every sandboxed child
// of this process -- many sandboxes. For each child it watches the sandbox
// init's pidfd, drains the output pipes or PTY master, feeds queued stdin,
// and runs its timers: the execution deadline, kill escalation, and a
// periodic check (e.g. CPU used against limits.cpuSeconds). The seccomp
// listener -- where the child waits on each brokered write -- is answered by
// the loop (one platform call per notification) until the child has made a
// few dozen such calls, which give the listener a thread of its own that
// waits in it (Linux 6.6+; see Supervised::Answerer): no thread for a child
// that writes little or nothing, one for a child that writes a lot. Refusals
// are audited on the loop either way.
//
// Thread-safety: Supervisor and Supervised member functions may be called
// from any thread; the Watch callbacks run on the loop thread and must not
// block (no waiting for the loop, a proxy's io thread excepted).
#pragma once

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "platform/linux/spawn.h"
#include "src/process/event_loop.h"
#include "stockade/process.h"

namespace stockade::process {

using Clock = std::chrono::steady_clock;

using Channel = LogChannel;

// How a supervised child ended, on the loop thread.
struct Ending {
  enum class Cause {
    kExited,    // the program ended by itself (or by a signal someone sent it)
    kKilled,    // a kill() request ended it
    kTimedOut,  // its execution deadline passed: killed
    kLimit,     // a periodic check found a limit exceeded: killed (`limit` names it)
    kFailed,    // the supervisor could not serve it (its listener failed): killed (`error` says why)
  };
  Cause cause = Cause::kExited;
  platform::ExitStatus status;  // the program's own, or init's SIGKILL when the sandbox was killed
  std::string limit;            // kLimit: "limits.cpuSeconds" (status.limit names it too, from the cgroup)
  std::string error;            // kFailed
  long denials = 0;             // seccomp notifications answered
};

struct PeriodicCheck {
  Clock::duration interval;
  // Returns the name of a limit the child exceeded ("limits.cpuSeconds"):
  // it is then killed with Cause::kLimit. Without one of its own, a child
  // whose cgroup needs watching gets platform::overLimit() every
  // platform::kLimitCheckInterval (spawn.h's limit hook).
  std::function<std::optional<std::string>()> check;
};

// What the supervisor does for one child. Every member is optional.
struct Watch {
  // Read ends the supervisor drains to EOF, whether or not anyone reads the
  // output (a process never blocks on a full pipe); each chunk goes to onOutput.
  std::vector<std::pair<Channel, platform::UniqueFd>> outputs;
  platform::UniqueFd stdinFd;  // written from writeStdin()'s queue; closed by closeStdin()
  std::optional<Clock::duration> timeout;  // execution deadline from registration
  std::optional<PeriodicCheck> periodic;
  std::function<void(Channel, std::string_view)> onOutput;
  std::function<void(const platform::SeccompDenial&)> onDenial;
  // Once, after the sandbox has exited and its outputs reached EOF (or two
  // seconds passed: data a descendant writes later is not waited for).
  std::function<void(const Ending&)> onEnd;
};

struct Escalation {
  Clock::duration after;
  int signal;  // sent when the child is still there `after` the first one
};

class Supervisor;

// One child under supervision, shared by its owner and the loop.
class Supervised {
 public:
  ~Supervised();  // a listener thread still running (the sandbox never reaped) is left to end by itself
  pid_t pid() const noexcept { return pid_; }
  bool ended() const noexcept { return ended_.load(); }

  // `signal` to every process of the sandbox (its init forwards termination
  // signals to all of them; SIGKILL kills the init, and with it the sandbox);
  // then `escalation`'s signal if anything is left after its delay. The
  // ending's cause becomes kKilled. No-op once it has ended.
  void kill(int signal, std::optional<Escalation> escalation = std::nullopt);
  // Queues bytes for stdin; `eof` closes it once they are written. False
  // when stdin is closed (or was never open).
  bool writeStdin(std::string bytes, bool eof);
  bool closeStdin() { return writeStdin({}, true); }
  bool stdinOpen() const noexcept { return stdinOpen_.load(); }
  // Reads what each output holds by now (to EAGAIN), then runs `then`: on
  // the loop thread, after the event being handled. For a protocol on one
  // output that says "done" while the program's other output may still
  // hold bytes written before it (the code kernel's stderr).
  void drainOutputs(std::function<void()> then);

 private:
  friend class Supervisor;
  Supervised(Supervisor& supervisor, platform::Child child, Watch watch);
  struct Answerer;
  void start();  // loop thread: registers every fd and timer
  bool startAnswerer();
  void drainAnswers();  // loop thread: audits what the answerer refused, kills on its failure
  void onExited();
  void onListener(std::uint32_t events);
  void onOutput(std::size_t index, std::uint32_t events);
  bool readOutput(std::size_t index);  // true: the read budget ran out with more to read
  void flushStdin();
  void closeStdinNow();
  void killNow(int signal, Ending::Cause cause);
  void maybeFinish();
  void finish();

  Supervisor& supervisor_;
  EventLoop& loop_;
  std::weak_ptr<Supervised> self_;
  const pid_t pid_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> stdinOpen_{false};

  // Loop thread only.
  platform::Child child_;
  Watch watch_;
  std::vector<bool> outputOpen_;
  std::deque<std::string> stdinQueue_;
  bool stdinEof_ = false;
  bool stdinWatched_ = false;
  bool exited_ = false;
  Ending ending_;
  std::optional<Ending::Cause> killedAs_;
  std::vector<EventLoop::TimerId> timers_;
  std::shared_ptr<std::function<void()>> periodicTick_;  // the periodic check, while it runs
  std::optional<EventLoop::TimerId> periodicTimer_;
  int listenerCalls_ = 0;                // answered by the loop
  std::shared_ptr<Answerer> answerer_;  // the listener's own thread, when it has one
};

class Supervisor {
 public:
  // EventLoop::Thread::kCaller: the constructing thread runs the loop
  // (EventLoop::runUntil(); the destructor too, while its children end).
  explicit Supervisor(EventLoop::Thread loopThread = EventLoop::Thread::kOwn);
  ~Supervisor();  // kills every child still supervised, then stops the loop

  // Takes over `child` (its pidfd, listener, status pipe) as `watch` says.
  // Returns at once; callbacks start on the loop thread.
  std::shared_ptr<Supervised> supervise(platform::Child child, Watch watch);

  // Runs `task` on the loop every `interval` until the supervisor ends.
  void every(Clock::duration interval, std::function<void()> task);

  EventLoop& loop() noexcept { return loop_; }
  std::size_t supervisedCount() const;

 private:
  friend class Supervised;
  void repeat(Clock::duration interval, std::shared_ptr<std::function<void()>> task);

  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable allEnded_;
  std::unordered_map<const Supervised*, std::weak_ptr<Supervised>> live_;  // for the destructor and counts
  EventLoop loop_;  // last: its thread stops (joins) before the members above go
};

}  // namespace stockade::process
