// The output of one process: a bounded ring of frames addressed by cursors.
// Pure: no I/O, no clock (the caller stamps frames), no lock (the owner's).
//
// - A frame is one chunk as it was read: {sequence, channel, bytes, time}.
//   Bytes are kept as they came; text or base64 is chosen when reading
//   (encode()), so non-UTF-8 output is never corrupted.
// - Cursors are opaque to callers: fixed-width text of a sequence number
//   that only grows, so they are strictly increasing, stable while the frame
//   is held, and compare as strings in the same order.
// - The ring holds at most `capacityBytes` of frame bytes, and together with
//   every other ring sharing its Budget at most the budget's cap: the oldest
//   frames go first. What went is counted (droppedBytes/droppedFrames) and a
//   read from before it says so (truncatedHead, firstAvailable).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/process.h"

namespace stockade::process {

class LogRing {
 public:
  // Bytes held by every ring that shares it (a process-wide cap).
  struct Budget {
    explicit Budget(std::size_t cap) : capBytes(cap) {}
    const std::size_t capBytes;
    std::atomic<std::size_t> usedBytes{0};
  };

  struct Frame {
    std::uint64_t sequence = 0;  // 1, 2, 3, ... (0 is "before the first")
    LogChannel channel = LogChannel::kStdout;
    std::string bytes;
    std::chrono::system_clock::time_point time;
  };

  struct Page {
    std::vector<Frame> frames;
    bool truncatedHead = false;       // frames after the cursor were dropped before it could be read
    std::uint64_t firstAvailable = 0;  // sequence of the oldest frame held; 0: none held
    bool hasMore = false;             // frames after the last one returned
  };

  LogRing(std::size_t capacityBytes, std::shared_ptr<Budget> budget);
  ~LogRing();
  LogRing(const LogRing&) = delete;
  LogRing& operator=(const LogRing&) = delete;

  // Appends a frame (empty `bytes` are ignored) and drops the oldest frames
  // beyond the capacity or the budget; the newest frame is always kept.
  void append(LogChannel channel, std::string_view bytes, std::chrono::system_clock::time_point time);
  // Frames with a sequence above `after` (0: from the oldest held), at most `limit`.
  Page read(std::uint64_t after, std::size_t limit) const;
  // Drops every frame (keepLogs "none" at exit; delete).
  void clear();

  std::uint64_t lastSequence() const noexcept { return next_ - 1; }
  std::uint64_t firstAvailable() const noexcept { return frames_.empty() ? 0 : frames_.front().sequence; }
  bool truncatedHead() const noexcept { return droppedFrames_ != 0; }
  std::uint64_t droppedBytes() const noexcept { return droppedBytes_; }
  std::uint64_t droppedFrames() const noexcept { return droppedFrames_; }
  std::size_t heldBytes() const noexcept { return held_; }

  static std::string cursorText(std::uint64_t sequence);
  // nullopt for text that is not a cursor this ring made.
  static std::optional<std::uint64_t> parseCursor(std::string_view cursor);

 private:
  void dropOldest();

  std::size_t capacity_;
  std::shared_ptr<Budget> budget_;
  std::deque<Frame> frames_;
  std::uint64_t next_ = 1;
  std::size_t held_ = 0;
  std::uint64_t droppedBytes_ = 0;
  std::uint64_t droppedFrames_ = 0;
};

// True when `bytes` is well-formed UTF-8 (no overlongs, no surrogates).
bool isUtf8(std::string_view bytes);
std::string base64(std::string_view bytes);

}  // namespace stockade::process
