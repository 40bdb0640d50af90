#include "src/process/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>

#include "platform/linux/seccomp_notify.h"

namespace stockade::process {
namespace {

// Output read per readiness event and fd, so one chatty child cannot starve the others.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 4;
// Trapped calls the loop answers itself before the listener gets its own
// thread (Supervised::Answerer).
constexpr int kCallsBeforeOwnThread = 32;
// After the sandbox has exited, its outputs are drained for at most this long.
constexpr auto kDrainGrace = std::chrono::seconds(2);

// The calling thread's CPU time from here to the end of the scope, added
// to a sandbox's Child::answeringNs.
class ChargedTo {
 public:
  explicit ChargedTo(std::atomic<std::uint64_t>& to) : to_(to), began_(platform::threadCpuNs()) {}
  ~ChargedTo() { to_ += platform::threadCpuNs() - began_; }
  ChargedTo(const ChargedTo&) = delete;
  ChargedTo& operator=(const ChargedTo&) = delete;

 private:
  std::atomic<std::uint64_t>& to_;
  std::uint64_t began_;
};

void setNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

// The seccomp listener's own thread. A brokered call is a round trip: the
// child waits while the supervisor answers. Waiting in the listener itself
// (SECCOMP_IOCTL_NOTIF_RECV) rather than in the loop's epoll_wait is what
// lets the kernel wake the answerer on the child's CPU and the child on the
// answerer's (synchronous wake-up, seccomp_notify.h): measured with tar x of
// 10,000 files on 2 cores (bench/write_broker_bench; README), each of its
// 10,000 brokered creates otherwise pays for waking the other, idle CPU.
// Started once the loop has answered kCallsBeforeOwnThread of the sandbox's
// calls (onListener()), it ends with the sandbox's last task. The thread never touches this Supervised: it queues what it refused (or
// its failure) here, for the loop to audit (drainAnswers()).
struct Supervised::Answerer {
  std::mutex mu;
  std::vector<platform::SeccompDenial> denials;
  std::string error;    // the listener failed: the sandbox is killed
  bool posted = false;  // a drainAnswers() is queued on the loop
  bool closed = false;  // nobody drains any more: the thread only answers
  std::thread thread;

  // Queues one outcome; false once the thread should stop (failed).
  bool report(EventLoop& loop, const std::weak_ptr<Supervised>& owner, std::optional<platform::SeccompDenial> denial,
              std::string failure) {
    std::lock_guard lock(mu);
    const bool failed = !failure.empty();
    if (closed) return !failed;
    if (denial) denials.push_back(std::move(*denial));
    if (failed) error = std::move(failure);
    if (!posted) {
      posted = true;
      loop.post([owner] {
        if (auto s = owner.lock()) s->drainAnswers();
      });
    }
    return !failed;
  }

  static void run(std::shared_ptr<Answerer> self, platform::UniqueFd listener,
                  std::shared_ptr<const platform::WriteBroker> broker, EventLoop& loop, std::weak_ptr<Supervised> owner,
                  std::shared_ptr<std::atomic<std::uint64_t>> answeringNs) {
    (void)::pthread_setname_np(::pthread_self(), "stockade-broker");
    // Process-directed signals go to the host application's threads, not here.
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    // Under a real-time policy (chrt -f) this thread would inherit it, and
    // the kernel places a woken real-time thread on another CPU rather than
    // behind an equal one -- the child, which is about to wait for it -- and
    // ignores the synchronous wake-up for it: every call then woke the other
    // CPU both ways (tar x: 3.2x bubblewrap under chrt -f 50). As a normal
    // thread it runs on the child's CPU while the child waits. The cost: a
    // real-time workload that keeps every CPU busy itself delays its own
    // brokered calls.
    if (int policy = ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; policy == SCHED_FIFO || policy == SCHED_RR) {
      sched_param normal{};
      (void)::pthread_setschedparam(::pthread_self(), SCHED_OTHER, &normal);
    }
    platform::WriteBroker::dedicateThisThread();
    // All of this thread's CPU time is the sandbox's doing: published to
    // Child::answeringNs every kPublishEvery answers (one clock read per
    // batch, not per call) and when the thread ends.
    constexpr unsigned kPublishEvery = 64;
    std::uint64_t published = 0;
    auto publish = [&] {
      const std::uint64_t now = platform::threadCpuNs();
      *answeringNs += now - published;
      published = now;
    };
    struct AtEnd {
      decltype(publish)& f;
      ~AtEnd() { f(); }
    } atEnd{publish};
    for (unsigned answers = 1;; ++answers) {  // (wraps harmlessly)
      if (answers % kPublishEvery == 0) publish();
      bool received = false;
      auto answered = platform::answerNotification(listener.get(), *broker, &received);
      if (auto* err = std::get_if<std::string>(&answered)) {
        (void)self->report(loop, owner, std::nullopt, std::move(*err));
        return;
      }
      if (auto& denial = std::get<std::optional<platform::SeccompDenial>>(answered)) {
        if (!self->report(loop, owner, std::move(denial), {})) return;
        continue;
      }
      if (received) continue;
      // None came: its caller died meanwhile, or no task is left under the filter.
      pollfd p{listener.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) return;
    }
  }
};

Supervised::Supervised(Supervisor& supervisor, platform::Child child, Watch watch)
    : supervisor_(supervisor),
      loop_(supervisor.loop()),
      pid_(child.pid),
      child_(std::move(child)),
      watch_(std::move(watch)) {
  stdinOpen_ = watch_.stdinFd.valid();
  outputOpen_.assign(watch_.outputs.size(), true);
}

void Supervised::start() {
  auto self = self_.lock();
  loop_.watch(child_.pidfd.get(), EPOLLIN, [self](std::uint32_t) { self->onExited(); });
  if (child_.seccompListener)
    loop_.watch(child_.seccompListener.get(), EPOLLIN, [self](std::uint32_t events) { self->onListener(events); });
  for (std::size_t i = 0; i < watch_.outputs.size(); ++i) {
    int fd = watch_.outputs[i].second.get();
    setNonBlocking(fd);
    loop_.watch(fd, EPOLLIN, [self, i](std::uint32_t events) { self->onOutput(i, events); });
  }
  if (watch_.stdinFd) setNonBlocking(watch_.stdinFd.get());
  std::weak_ptr<Supervised> weak = self;
  // THE LIMIT HOOK of spawn.h: limits the kernel does not enforce for the
  // whole sandbox by itself (cpuSeconds, a cgroup v1 memory limit) are read
  // from its cgroup on a timer; over one, the sandbox is killed, and the exit
  // report names the limit.
  if (platform::watchesLimits(child_) && !watch_.periodic)
    watch_.periodic = PeriodicCheck{platform::kLimitCheckInterval, [this]() -> std::optional<std::string> {
                                      auto over = platform::overLimit(child_);
                                      if (auto* err = std::get_if<std::string>(&over)) {
                                        if (ending_.error.empty()) ending_.error = *err;
                                        killNow(SIGKILL, Ending::Cause::kFailed);
                                        return std::nullopt;
                                      }
                                      const char* limit = std::get<const char*>(over);
                                      return limit ? std::optional<std::string>(limit) : std::nullopt;
                                    }};
  if (watch_.timeout)
    timers_.push_back(loop_.after(*watch_.timeout, [weak] {
      if (auto s = weak.lock(); s && !s->exited_) s->killNow(SIGKILL, Ending::Cause::kTimedOut);
    }));
  if (watch_.periodic) {
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [weak, tick = std::weak_ptr(tick)] {
      auto s = weak.lock();
      if (!s || s->exited_) return;
      if (auto limit = s->watch_.periodic->check()) {
        s->ending_.limit = *limit;
        s->killNow(SIGKILL, Ending::Cause::kLimit);
        return;
      }
      if (auto again = tick.lock()) s->periodicTimer_ = s->loop_.after(s->watch_.periodic->interval, *again);
    };
    periodicTick_ = tick;
    periodicTimer_ = loop_.after(watch_.periodic->interval, *tick);
  }
  flushStdin();
}

bool Supervised::startAnswerer() {
  platform::UniqueFd listener(::fcntl(child_.seccompListener.get(), F_DUPFD_CLOEXEC, 0));
  if (!listener) return false;
  auto answerer = std::make_shared<Answerer>();
  try {
    answerer->thread = std::thread(&Answerer::run, answerer, std::move(listener), child_.broker, std::ref(loop_), self_,
                                   child_.answeringNs);
  } catch (const std::system_error&) {
    return false;  // no thread to be had (EAGAIN): the loop answers
  }
  answerer_ = std::move(answerer);
  return true;
}

void Supervised::drainAnswers() {
  const ChargedTo charge(*child_.answeringNs);  // the loop's time auditing them is the sandbox's doing too
  std::vector<platform::SeccompDenial> denials;
  std::string error;
  {
    std::lock_guard lock(answerer_->mu);
    denials.swap(answerer_->denials);
    error.swap(answerer_->error);
    answerer_->posted = false;
  }
  for (const auto& denial : denials) {
    ++ending_.denials;
    if (watch_.onDenial) watch_.onDenial(denial);
  }
  if (!error.empty() && !exited_) {
    // Never leave the sandbox running once nobody answers its listener.
    if (ending_.error.empty()) ending_.error = error;
    killNow(SIGKILL, Ending::Cause::kFailed);
  }
}

Supervised::~Supervised() {
  if (!answerer_ || !answerer_->thread.joinable()) return;
  {
    std::lock_guard lock(answerer_->mu);
    answerer_->closed = true;
  }
  // Its wait ends when no task is left under the filter: killed here (a
  // no-op once reaped), it goes with them.
  (void)platform::signalChild(child_.pidfd, SIGKILL);
  answerer_->thread.detach();
}

void Supervised::onExited() {
  loop_.unwatch(child_.pidfd.get());
  if (child_.seccompListener) loop_.unwatch(child_.seccompListener.get());
  for (auto id : timers_) loop_.cancel(id);
  timers_.clear();
  if (periodicTimer_) loop_.cancel(*periodicTimer_);
  periodicTimer_.reset();
  periodicTick_.reset();
  exited_ = true;
  auto status = platform::waitExit(child_);  // the pidfd is readable: reaps without waiting
  if (auto* st = std::get_if<platform::ExitStatus>(&status)) {
    ending_.status = *st;
    // Every task of the sandbox is reaped with its init: the answerer's wait
    // has ended, and what it refused is audited before the ending.
    if (answerer_) {
      answerer_->thread.join();
      drainAnswers();
    }
  } else {
    ending_.cause = Ending::Cause::kFailed;
    ending_.error = std::get<std::string>(status);
  }
  if (killedAs_ && ending_.cause != Ending::Cause::kFailed) ending_.cause = *killedAs_;
  // The init is reaped only after every other process of its pid namespace
  // has exited: what is left in the pipes is all there will be, so read it
  // now rather than one readiness event later.
  for (std::size_t i = 0; i < watch_.outputs.size(); ++i)
    while (outputOpen_[i] && readOutput(i)) {
    }
  std::weak_ptr<Supervised> weak = self_;
  timers_.push_back(loop_.after(kDrainGrace, [weak] {
    if (auto s = weak.lock()) s->finish();
  }));
  maybeFinish();
}

void Supervised::onListener(std::uint32_t events) {
  if (!(events & EPOLLIN)) {  // hung up: no task is left under the filter
    loop_.unwatch(child_.seccompListener.get());
    return;
  }
  // A child that keeps making trapped calls gets the listener's own thread
  // (Linux 6.6+), which answers this one too; one that makes a few (a
  // shell's umask, a file or two) costs none.
  if (child_.enforcement.synchronousWakeUp && !answerer_ && ++listenerCalls_ > kCallsBeforeOwnThread &&
      startAnswerer()) {
    loop_.unwatch(child_.seccompListener.get());
    return;
  }
  // The one call per notification: its answer is the event audited. Its
  // CPU time, auditing included, is the sandbox's (Child::answeringNs).
  const ChargedTo charge(*child_.answeringNs);
  auto answered = platform::answerNotification(child_.seccompListener.get(), *child_.broker);
  if (auto* err = std::get_if<std::string>(&answered)) {
    // Never leave the sandbox running once nobody answers its listener.
    loop_.unwatch(child_.seccompListener.get());
    if (ending_.error.empty()) ending_.error = *err;
    killNow(SIGKILL, Ending::Cause::kFailed);
    return;
  }
  if (auto& denial = std::get<std::optional<platform::SeccompDenial>>(answered)) {
    ++ending_.denials;
    if (watch_.onDenial) watch_.onDenial(*denial);
  }
}

void Supervised::onOutput(std::size_t index, std::uint32_t) {
  (void)readOutput(index);
  if (!outputOpen_[index]) maybeFinish();
}

bool Supervised::readOutput(std::size_t index) {
  auto& [channel, fd] = watch_.outputs[index];
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent; ++i) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      if (watch_.onOutput) watch_.onOutput(channel, std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    // EOF, or an error (EIO on a PTY master whose last slave closed): this output is done.
    loop_.unwatch(fd.get());
    fd.reset();
    outputOpen_[index] = false;
    return false;
  }
  return true;  // the per-event budget is spent: more may be waiting
}

void Supervised::drainOutputs(std::function<void()> then) {
  std::weak_ptr<Supervised> weak = self_;
  loop_.post([weak, then = std::move(then)] {
    if (auto s = weak.lock()) {
      for (std::size_t i = 0; i < s->watch_.outputs.size(); ++i)
        while (s->outputOpen_[i] && s->readOutput(i)) {
        }
      s->maybeFinish();
    }
    then();
  });
}

bool Supervised::writeStdin(std::string bytes, bool eof) {
  if (eof) {
    if (!stdinOpen_.exchange(false)) return false;
  } else if (!stdinOpen_.load()) {
    return false;
  }
  std::weak_ptr<Supervised> weak = self_;
  loop_.post([weak, bytes = std::move(bytes), eof]() mutable {
    auto s = weak.lock();
    if (!s || !s->watch_.stdinFd) return;
    if (!bytes.empty()) s->stdinQueue_.push_back(std::move(bytes));
    if (eof) s->stdinEof_ = true;
    s->flushStdin();
  });
  return true;
}

void Supervised::flushStdin() {
  const int fd = watch_.stdinFd.get();
  if (fd < 0) return;
  while (!stdinQueue_.empty()) {
    std::string& front = stdinQueue_.front();
    ssize_t n = ::write(fd, front.data(), front.size());
    if (n >= 0) {
      if (static_cast<std::size_t>(n) == front.size()) stdinQueue_.pop_front();
      else front.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      if (!stdinWatched_) {
        std::weak_ptr<Supervised> weak = self_;
        loop_.watch(fd, EPOLLOUT, [weak](std::uint32_t) {
          if (auto s = weak.lock()) s->flushStdin();
        });
        stdinWatched_ = true;
      }
      return;
    }
    // EPIPE: the program closed its stdin; what is queued can never be read.
    stdinQueue_.clear();
    closeStdinNow();
    return;
  }
  if (stdinWatched_) {
    loop_.unwatch(fd);
    stdinWatched_ = false;
  }
  if (stdinEof_) closeStdinNow();
}

void Supervised::closeStdinNow() {
  if (!watch_.stdinFd) return;
  if (stdinWatched_) loop_.unwatch(watch_.stdinFd.get());
  stdinWatched_ = false;
  watch_.stdinFd.reset();
  stdinOpen_ = false;
}

void Supervised::kill(int signal, std::optional<Escalation> escalation) {
  std::weak_ptr<Supervised> weak = self_;
  loop_.post([weak, signal, escalation] {
    auto s = weak.lock();
    if (!s || s->exited_) return;
    s->killNow(signal, Ending::Cause::kKilled);
    if (!escalation) return;
    s->timers_.push_back(s->loop_.after(escalation->after, [weak, to = escalation->signal] {
      if (auto still = weak.lock(); still && !still->exited_) still->killNow(to, Ending::Cause::kKilled);
    }));
  });
}

void Supervised::killNow(int signal, Ending::Cause cause) {
  if (!killedAs_) killedAs_ = cause;
  (void)platform::signalChild(child_.pidfd, signal);  // ESRCH (already gone) is not an error
}

void Supervised::maybeFinish() {
  if (!exited_) return;
  for (bool open : outputOpen_)
    if (open) return;
  finish();
}

void Supervised::finish() {
  if (ended_) return;
  for (auto id : timers_) loop_.cancel(id);
  timers_.clear();
  for (std::size_t i = 0; i < watch_.outputs.size(); ++i) {
    if (!outputOpen_[i]) continue;
    loop_.unwatch(watch_.outputs[i].second.get());
    watch_.outputs[i].second.reset();
    outputOpen_[i] = false;
  }
  closeStdinNow();
  stdinQueue_.clear();
  auto onEnd = std::move(watch_.onEnd);
  watch_ = Watch{};  // releases whatever the callbacks hold
  ended_ = true;
  if (onEnd) onEnd(ending_);
  {
    std::lock_guard lock(supervisor_.mu_);
    supervisor_.live_.erase(this);
  }
  supervisor_.allEnded_.notify_all();
}

Supervisor::Supervisor(EventLoop::Thread loopThread) : loop_(loopThread) {
  // Writes to a closed pipe (a program that closed its stdin) fail with
  // EPIPE instead of raising SIGPIPE in the host application. Posted, not
  // waited for: the loop runs its tasks in order, so this one runs before
  // any task that writes (a round trip to a thread that has only just
  // started costs a wake-up, ~0.1 ms of every `stockade run`).
  loop_.post([] {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  });
}

Supervisor::~Supervisor() {
  stopping_ = true;
  std::vector<std::shared_ptr<Supervised>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& [raw, weak] : live_)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->kill(SIGKILL);
  live.clear();
  auto allEnded = [&] { return live_.empty(); };
  if (loop_.drivenByCaller()) {  // their ends come through the loop, which is this thread's to run
    loop_.runUntil([&] { std::lock_guard lock(mu_); return allEnded(); }, std::chrono::seconds(5));
    return;
  }
  std::unique_lock lock(mu_);
  allEnded_.wait_for(lock, std::chrono::seconds(5), allEnded);
}

std::shared_ptr<Supervised> Supervisor::supervise(platform::Child child, Watch watch) {
  std::shared_ptr<Supervised> s(new Supervised(*this, std::move(child), std::move(watch)));
  s->self_ = s;
  {
    std::lock_guard lock(mu_);
    live_[s.get()] = s;
  }
  loop_.post([s] {
    try {
      s->start();
    } catch (const std::exception& e) {  // epoll_ctl() refused an fd (ENOMEM, ENOSPC: max_user_watches)
      s->ending_.error = e.what();
      s->killNow(SIGKILL, Ending::Cause::kFailed);
      for (std::size_t i = 0; i < s->watch_.outputs.size(); ++i) {
        s->loop_.unwatch(s->watch_.outputs[i].second.get());  // a no-op for those never watched
        s->watch_.outputs[i].second.reset();
        s->outputOpen_[i] = false;
      }
      // Reap the killed sandbox now (it dies at once): the pidfd may not be watched.
      s->onExited();
    }
  });
  return s;
}

void Supervisor::every(Clock::duration interval, std::function<void()> task) {
  auto shared = std::make_shared<std::function<void()>>(std::move(task));
  loop_.post([this, interval, shared] { repeat(interval, shared); });
}

void Supervisor::repeat(Clock::duration interval, std::shared_ptr<std::function<void()>> task) {
  loop_.after(interval, [this, interval, task] {
    (*task)();
    if (!stopping_) repeat(interval, task);
  });
}

std::size_t Supervisor::supervisedCount() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

}  // namespace stockade::process
