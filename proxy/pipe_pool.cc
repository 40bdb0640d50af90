#include "proxy/pipe_pool.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace stockade::proxy {

PipeLease::PipeLease(PipeLease&& o) noexcept
    : held(std::exchange(o.held, 0)),
      pool_(std::exchange(o.pool_, nullptr)),
      read_(std::move(o.read_)),
      write_(std::move(o.write_)),
      capacity_(std::exchange(o.capacity_, 0)),
      grown_(o.grown_) {}

PipeLease& PipeLease::operator=(PipeLease&& o) noexcept {
  if (this != &o) {
    reset();
    held = std::exchange(o.held, 0);
    pool_ = std::exchange(o.pool_, nullptr);
    read_ = std::move(o.read_);
    write_ = std::move(o.write_);
    capacity_ = std::exchange(o.capacity_, 0);
    grown_ = o.grown_;
  }
  return *this;
}

void PipeLease::grow() {
  if (pool_ && !grown_) pool_->grow(*this);
}

void PipeLease::reset() noexcept {
  if (pool_) pool_->giveBack(*this);
  pool_ = nullptr;
  read_.reset();
  write_.reset();
  capacity_ = 0;
  held = 0;
}

PipeLease PipePool::acquire() {
  PipeLease lease;
  if (idleCount_ > 0) {
    Idle& i = idle_[--idleCount_];
    lease.pool_ = this;
    lease.read_ = std::move(i.read);
    lease.write_ = std::move(i.write);
    lease.capacity_ = i.capacity;
    lease.grown_ = i.grown;
    return lease;
  }
  if (open_ + kMinPipeBytes > budget_) return lease;  // the budget is spent: copy
  auto now = std::chrono::steady_clock::now();
  if (now < retryAt_) return lease;
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    retryAt_ = now + std::chrono::seconds(1);
    if (!std::exchange(warnedNoPipe_, true))
      spdlog::warn("stockade proxy: pipe2(O_NONBLOCK|O_CLOEXEC) failed: {}; connections copy through user space "
                   "until a pipe can be made", std::strerror(errno));
    return lease;
  }
  platform::UniqueFd r(fds[0]), w(fds[1]);
  int size = ::fcntl(w.get(), F_GETPIPE_SZ);
  if (size < static_cast<int>(kMinPipeBytes)) {
    retryAt_ = now + std::chrono::seconds(1);
    // Past fs.pipe-user-pages-soft the kernel gives a user's new pipes a page
    // or two: this user's pipe quota (shared with the host application and
    // the sandboxed children) is spent. Splicing through such a pipe is
    // slower than copying; give it back.
    if (!std::exchange(warnedQuota_, true))
      spdlog::warn("stockade proxy: a new pipe holds only {} bytes (fcntl(F_GETPIPE_SZ)): this user's pipe quota "
                   "(/proc/sys/fs/pipe-user-pages-soft) is spent; connections copy through user space while it is",
                   size);
    return lease;
  }
  ++pipes_;
  open_ += static_cast<std::size_t>(size);
  lease.pool_ = this;
  lease.read_ = std::move(r);
  lease.write_ = std::move(w);
  lease.capacity_ = static_cast<std::size_t>(size);
  return lease;
}

// Only pipes that fill up grow, once: a 1 MiB pipe moves a bulk transfer in
// about a tenth of the splice() calls of a 64 KiB one. When the budget or
// the kernel (EPERM past the user's quota) refuses, the pipe keeps its size:
// slower, not wrong.
void PipePool::grow(PipeLease& lease) {
  lease.grown_ = true;
  if (open_ - lease.capacity_ + kGrownPipeBytes > budget_) return;
  int size = ::fcntl(lease.write_.get(), F_SETPIPE_SZ, static_cast<int>(kGrownPipeBytes));
  if (size <= 0) return;
  open_ = open_ - lease.capacity_ + static_cast<std::size_t>(size);
  lease.capacity_ = static_cast<std::size_t>(size);
}

void PipePool::giveBack(PipeLease& lease) noexcept {
  // A pipe that still holds bytes (of a message that failed) is closed, and
  // so is one the idle list has no room for: idle pipes count against the
  // user's quota too.
  if (lease.held == 0 && idleCount_ < kMaxIdle) {
    Idle& i = idle_[idleCount_++];
    i.read = std::move(lease.read_);
    i.write = std::move(lease.write_);
    i.capacity = lease.capacity_;
    i.grown = lease.grown_;
    return;
  }
  open_ -= lease.capacity_;
  --pipes_;
}

}  // namespace stockade::proxy
