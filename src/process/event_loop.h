// One thread, one epoll set: the loop every supervised child of a process
// is served from (supervisor.h). Handlers and timers run on the loop thread,
// one at a time, and must not block: they read what is ready, write what
// fits, and return.
//
// Thread-safety: post() and call() may be used from any thread; watch(),
// modify(), unwatch(), after() and cancel() only from the loop thread (from a
// handler, a timer, or a posted task).
//
// Thread::kCaller: no thread of its own. The thread that made the loop is
// the loop thread, and runs it with runUntil() while it waits (a command
// line's main thread: `stockade run` stays one thread, so starting it costs
// no thread, the end of its child no hand-over between threads, and no
// write of the CLI to memory it shares copy-on-write with the sandbox's
// init needs a TLB shootdown on the other CPU).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "platform/unique_fd.h"

namespace stockade::process {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using FdHandler = std::function<void(std::uint32_t events)>;  // EPOLLIN, EPOLLOUT, EPOLLHUP, ...
  using TimerId = std::uint64_t;

  enum class Thread {
    kOwn,     // the loop runs on a thread of its own, started here
    kCaller,  // the constructing thread runs it, in runUntil()
  };
  // Throws std::runtime_error naming the call that failed.
  explicit EventLoop(Thread thread = Thread::kOwn);
  ~EventLoop();  // runs the tasks already posted, then stops (and joins its thread)
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Queues `task` for the loop thread.
  void post(std::function<void()> task);
  // Runs `fn` on the loop thread and returns its result (rethrows). Never
  // from the loop thread itself (it would wait for itself): it runs `fn` inline there.
  template <typename F>
  auto call(F fn) -> decltype(fn()) {
    if (inLoopThread()) return fn();
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    post([&task] { task(); });
    return result.get();
  }

  // Loop thread only. `fd` stays the caller's; unwatch() it before closing it.
  void watch(int fd, std::uint32_t events, FdHandler handler);
  void modify(int fd, std::uint32_t events);
  void unwatch(int fd);
  TimerId after(Clock::duration delay, std::function<void()> fn);
  void cancel(TimerId id);

  bool inLoopThread() const noexcept { return std::this_thread::get_id() == loopThread_; }
  bool drivenByCaller() const noexcept { return !thread_.joinable(); }

  // Thread::kCaller, on the loop thread: runs the loop until `done()` is true
  // (checked before each wait) or `timeout` has passed; returns `done()`.
  bool runUntil(const std::function<bool()>& done, Clock::duration timeout = Clock::duration::max());
  std::size_t watchedForTesting() const { return handlers_.size(); }

 private:
  void run();
  void runOnce(int maxTimeoutMs);  // one wait, then what it found, the timers due and the posted tasks
  void runPosted();
  int nextTimeoutMs();
  void runTimers();

  platform::UniqueFd epoll_;
  platform::UniqueFd wake_;  // eventfd: post() and the destructor wake the loop
  std::mutex mu_;            // posted_, stopping_
  std::vector<std::function<void()>> posted_;
  bool stopping_ = false;

  // Loop thread only.
  std::unordered_map<int, std::uint64_t> handlers_;  // fd -> token
  std::unordered_map<std::uint64_t, std::shared_ptr<FdHandler>> byToken_;
  std::uint64_t nextToken_ = 1;
  std::map<std::pair<Clock::time_point, TimerId>, std::function<void()>> timers_;
  std::unordered_map<TimerId, Clock::time_point> timerDue_;
  TimerId nextTimer_ = 1;

  std::thread::id loopThread_;
  std::thread thread_;  // last: started when everything above exists (Thread::kOwn)
};

}  // namespace stockade::process
