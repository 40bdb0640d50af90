#include "src/process/event_loop.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace stockade::process {
namespace {

[[noreturn]] void fail(const std::string& call) {
  throw std::runtime_error(call + " failed: " + (strerrorname_np(errno) ? strerrorname_np(errno) : "?"));
}

// The token of the wake eventfd; watched fds get tokens from 1.
constexpr std::uint64_t kWakeToken = 0;

}  // namespace

EventLoop::EventLoop(Thread thread) {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) fail("epoll_create1(EPOLL_CLOEXEC)");
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) fail("eventfd(0, EFD_CLOEXEC|EFD_NONBLOCK)");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeToken;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev) != 0) fail("epoll_ctl(EPOLL_CTL_ADD, eventfd)");
  if (thread == Thread::kCaller) {
    loopThread_ = std::this_thread::get_id();
    return;
  }
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "stockade-loop");  // benchmarks find it by this name
    run();
  });
  loopThread_ = thread_.get_id();
}

EventLoop::~EventLoop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  std::uint64_t one = 1;
  ssize_t ignored = ::write(wake_.get(), &one, sizeof one);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  else runPosted();  // Thread::kCaller: this is the loop thread
}

void EventLoop::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    posted_.push_back(std::move(task));
  }
  std::uint64_t one = 1;
  ssize_t ignored = ::write(wake_.get(), &one, sizeof one);  // EAGAIN only when the counter is full: awake anyway
  (void)ignored;
}

void EventLoop::watch(int fd, std::uint32_t events, FdHandler handler) {
  const std::uint64_t token = nextToken_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) fail("epoll_ctl(EPOLL_CTL_ADD, " + std::to_string(fd) + ")");
  handlers_[fd] = token;
  byToken_[token] = std::make_shared<FdHandler>(std::move(handler));
}

void EventLoop::modify(int fd, std::uint32_t events) {
  auto it = handlers_.find(fd);
  if (it == handlers_.end()) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = it->second;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) fail("epoll_ctl(EPOLL_CTL_MOD, " + std::to_string(fd) + ")");
}

void EventLoop::unwatch(int fd) {
  auto it = handlers_.find(fd);
  if (it == handlers_.end()) return;
  byToken_.erase(it->second);
  handlers_.erase(it);
  (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

EventLoop::TimerId EventLoop::after(Clock::duration delay, std::function<void()> fn) {
  const TimerId id = nextTimer_++;
  const auto due = Clock::now() + delay;
  timers_.emplace(std::make_pair(due, id), std::move(fn));
  timerDue_[id] = due;
  return id;
}

void EventLoop::cancel(TimerId id) {
  auto it = timerDue_.find(id);
  if (it == timerDue_.end()) return;
  timers_.erase({it->second, id});
  timerDue_.erase(it);
}

int EventLoop::nextTimeoutMs() {
  if (timers_.empty()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(timers_.begin()->first.first - Clock::now());
  return static_cast<int>(std::max<long long>(0, left.count()));
}

void EventLoop::runTimers() {
  const auto now = Clock::now();
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    timerDue_.erase(node.key().second);
    node.mapped()();
  }
}

void EventLoop::runPosted() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard lock(mu_);
    tasks.swap(posted_);
  }
  for (auto& task : tasks) task();
}

void EventLoop::runOnce(int maxTimeoutMs) {
  epoll_event events[64];
  int timeout = nextTimeoutMs();
  if (maxTimeoutMs >= 0 && (timeout < 0 || timeout > maxTimeoutMs)) timeout = maxTimeoutMs;
  int n = ::epoll_wait(epoll_.get(), events, 64, timeout);
  if (n < 0 && errno != EINTR) std::terminate();  // EBADF/EINVAL: the loop's own fds are broken
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u64 == kWakeToken) {
      std::uint64_t count;
      ssize_t ignored = ::read(wake_.get(), &count, sizeof count);
      (void)ignored;
      continue;
    }
    // A handler may have unwatched (or replaced) this fd earlier in the batch.
    auto it = byToken_.find(events[i].data.u64);
    if (it == byToken_.end()) continue;
    std::shared_ptr<FdHandler> handler = it->second;  // alive while it runs, even if it unwatches itself
    (*handler)(events[i].events);
  }
  runTimers();
  runPosted();
}

void EventLoop::run() {
  for (;;) {
    runOnce(-1);
    std::lock_guard lock(mu_);
    if (stopping_ && posted_.empty()) return;
  }
}

bool EventLoop::runUntil(const std::function<bool()>& done, Clock::duration timeout) {
  if (!drivenByCaller() || !inLoopThread())
    throw std::logic_error("EventLoop::runUntil() is for a Thread::kCaller loop, on the thread that made it");
  const bool bounded = timeout != Clock::duration::max();
  const auto deadline = bounded ? Clock::now() + timeout : Clock::time_point::max();
  while (!done()) {
    int wait = -1;
    if (bounded) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return done();
      wait = static_cast<int>(std::min<long long>(left.count(), 1 << 30));
    }
    runOnce(wait);
  }
  return true;
}

}  // namespace stockade::process
