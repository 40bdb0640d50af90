// The supervisor's event loop driven by its caller (EventLoop::Thread::kCaller,
// as `stockade run` uses it): the constructing thread runs it in runUntil().
#include "src/process/event_loop.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace stockade::process {
namespace {

using namespace std::chrono_literals;

TEST(CallerEventLoopTest, RunsPostedTasksTimersAndWatchesOnTheCallingThreadOnly) {
  EventLoop loop(EventLoop::Thread::kCaller);
  EXPECT_TRUE(loop.drivenByCaller());
  EXPECT_TRUE(loop.inLoopThread());
  const auto self = std::this_thread::get_id();
  bool posted = false, timer = false, readable = false;
  loop.post([&] { posted = std::this_thread::get_id() == self; });
  EXPECT_FALSE(posted);  // nothing runs until the caller runs the loop
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  loop.post([&] {
    loop.after(20ms, [&] { timer = true; });
    loop.watch(fds[0], EPOLLIN, [&](std::uint32_t) {
      char c;
      readable = ::read(fds[0], &c, 1) == 1 && std::this_thread::get_id() == self;
      loop.unwatch(fds[0]);
    });
  });
  // Another thread's post() and write wake the waiting caller.
  std::thread other([&] {
    std::this_thread::sleep_for(10ms);
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
  });
  EXPECT_TRUE(loop.runUntil([&] { return posted && timer && readable; }, 10s));
  other.join();
  ::close(fds[0]);
  ::close(fds[1]);
  // call() from the loop thread runs inline.
  EXPECT_EQ(loop.call([] { return 7; }), 7);
}

TEST(CallerEventLoopTest, RunUntilReturnsFalseAtItsTimeoutAndRefusesAnotherThread) {
  EventLoop loop(EventLoop::Thread::kCaller);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(loop.runUntil([] { return false; }, 50ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  bool threw = false;
  std::thread([&] {
    try {
      loop.runUntil([] { return true; });
    } catch (const std::logic_error&) {
      threw = true;
    }
  }).join();
  EXPECT_TRUE(threw);
  EventLoop own;  // a loop with its thread is never run by a caller
  EXPECT_FALSE(own.drivenByCaller());
  EXPECT_THROW(own.runUntil([] { return true; }), std::logic_error);
}

TEST(CallerEventLoopTest, TheDestructorRunsTheTasksAlreadyPosted) {
  std::atomic<int> ran{0};
  {
    EventLoop loop(EventLoop::Thread::kCaller);
    loop.post([&] { ++ran; });
    std::thread([&] { loop.post([&] { ++ran; }); }).join();
  }
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
}  // namespace stockade::process
