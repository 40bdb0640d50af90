// The pipes splice(2) moves bytes through, shared by every connection of the
// proxy. A pipe is held only while bytes are in it (a direction whose
// destination is full); an empty pipe goes back to the pool, and the pool
// keeps only a few idle ones. Pipe pages count against a per-user quota
// (fs.pipe-user-pages-soft) that the host application and the sandboxed
// children share, so the pool never holds more than its byte budget: a
// direction that cannot have a pipe copies through user space instead.
//
// Not thread-safe: the proxy's io thread owns it.
#pragma once

#include <chrono>
#include <cstddef>

#include "platform/unique_fd.h"

namespace stockade::proxy {

class PipePool;

// One pipe, on loan from a pool: returned to it when destroyed (closed
// instead when it still holds bytes). Move-only.
class PipeLease {
 public:
  PipeLease() = default;
  PipeLease(PipeLease&& o) noexcept;
  PipeLease& operator=(PipeLease&& o) noexcept;
  PipeLease(const PipeLease&) = delete;
  PipeLease& operator=(const PipeLease&) = delete;
  ~PipeLease() { reset(); }

  explicit operator bool() const noexcept { return pool_ != nullptr; }
  int readFd() const noexcept { return read_.get(); }
  int writeFd() const noexcept { return write_.get(); }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t held = 0;  // bytes in the pipe now, kept by the user of the lease

  // Asks the pool to enlarge the pipe (a bulk transfer filled it); a no-op
  // when it grew once already or the budget does not allow it.
  void grow();
  // Returns the pipe (or closes it when held > 0).
  void reset() noexcept;

 private:
  friend class PipePool;
  PipePool* pool_ = nullptr;
  platform::UniqueFd read_, write_;
  std::size_t capacity_ = 0;
  bool grown_ = false;
};

class PipePool {
 public:
  // A pipe smaller than this is what the kernel hands a user past its pipe
  // quota: too small to be worth splicing through.
  static constexpr std::size_t kMinPipeBytes = 64 * 1024;
  // What grow() asks for (F_SETPIPE_SZ).
  static constexpr std::size_t kGrownPipeBytes = 1024 * 1024;
  // Empty pipes kept for reuse; more are closed on return.
  static constexpr std::size_t kMaxIdle = 8;

  // `budgetBytes`: the capacity of all the pool's pipes together, idle or
  // on loan, may not exceed it.
  explicit PipePool(std::size_t budgetBytes) : budget_(budgetBytes) {}
  PipePool(const PipePool&) = delete;
  PipePool& operator=(const PipePool&) = delete;
  ~PipePool() = default;  // leases must be returned first

  // An empty pipe; an empty lease when the budget is spent, no pipe can be
  // made (fd limit), or the kernel gives only a small one (the user's pipe
  // quota is spent). The last two are logged once each, and for a second
  // after either the pool does not try again.
  PipeLease acquire();

  std::size_t bytesOpen() const noexcept { return open_; }   // capacity of every pipe open
  std::size_t pipesOpen() const noexcept { return pipes_; }  // idle and on loan
  std::size_t idle() const noexcept { return idleCount_; }

 private:
  friend class PipeLease;
  struct Idle {
    platform::UniqueFd read, write;
    std::size_t capacity = 0;
    bool grown = false;
  };
  void giveBack(PipeLease& lease) noexcept;
  void grow(PipeLease& lease);

  std::size_t budget_;
  std::size_t open_ = 0;
  std::size_t pipes_ = 0;
  Idle idle_[kMaxIdle];
  std::size_t idleCount_ = 0;
  std::chrono::steady_clock::time_point retryAt_{};
  bool warnedNoPipe_ = false;
  bool warnedQuota_ = false;
};

}  // namespace stockade::proxy
