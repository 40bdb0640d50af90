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
  Spawner();
  ~Spawner();  // finishes queued work, then joins
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Runs `fn` on the spawner thread and returns its result (or rethrows).
  template <typename F>
  auto call(F fn) -> decltype(fn()) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    post([&task] { task(); });
    return result.get();
  }
  // Queues `job` without waiting for it.
  void post(std::function<void()> job);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace stockade::process
