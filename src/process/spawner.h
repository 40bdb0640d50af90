// A long-lived thread that performs spawns. A child's parent-death signal is
// tied to the thread that created it, so spawning from a caller's short-lived
// thread would kill the child when that thread ends.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace stockade::process {

class Spawner {
 public:
  enum class Thread {
    kOwn,     // spawns on a thread of its own
    kCaller,  // the callers' thread outlives every child (a CLI's main thread: the process ends with it)
  };
  explicit Spawner(Thread thread = Thread::kOwn);
  ~Spawner();  // finishes queued work, then joins
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Runs `fn` on the spawner thread and returns its result (or rethrows).
  template <typename F>
  auto call(F fn) -> decltype(fn()) {
    if (!thread_.joinable()) return fn();  // Thread::kCaller
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    post([&task] { task(); });
    return result.get();
  }
  // Queues `job` without waiting for it (Thread::kCaller: runs it).
  void post(std::function<void()> job);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace stockade::process
