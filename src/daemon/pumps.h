// Blocking calls of the process service (a log stream's next(), a wait)
// made into the server's non-blocking replies: each runs on a thread of its
// own and hands its results over through a Waker. Destroying the reply (the
// client went away, or it is complete) requests its thread to stop at once;
// the thread then ends on its own.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "src/daemon/server.h"

namespace stockade::daemon {

// Chunks produced by a blocking function. emit() blocks while more than
// `maxQueued` bytes wait for the client (a slow reader holds the producer
// back, never the process: its output stays in its log ring) and returns
// false once the stream is stopped. A producer that throws aborts the
// stream (Step::kAbort, after what it queued): a failure never reads as a
// complete stream.
class ThreadedChunks : public ChunkSource {
 public:
  using Emit = std::function<bool(std::string)>;
  using Produce = std::function<void(std::stop_token, const Emit&)>;
  explicit ThreadedChunks(Produce produce, std::size_t maxQueued = 1u << 20);
  ~ThreadedChunks() override;
  Step next(std::string& out, const Waker& wake) override;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

// A reply computed by a blocking function (a wait), on its own thread.
class ThreadedReply : public DeferredReply {
 public:
  using Compute = std::function<Response(std::stop_token)>;
  explicit ThreadedReply(Compute compute);
  ~ThreadedReply() override;
  std::optional<Response> poll(const Waker& wake) override;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

// A WebSocket whose input goes to `onInput` and whose output is produced
// like ThreadedChunks (one message per emitted chunk).
class ThreadedDuplex : public Duplex {
 public:
  ThreadedDuplex(std::function<void(std::string_view)> onInput, ThreadedChunks::Produce produce);
  void receive(std::string_view bytes) override { onInput_(bytes); }
  ChunkSource::Step next(std::string& out, const Waker& wake) override { return output_.next(out, wake); }

 private:
  std::function<void(std::string_view)> onInput_;
  ThreadedChunks output_;
};

// Moves bytes from `read` (a count, 0 at the end) to `write` with the two
// overlapped: the calling thread reads the next piece while a second thread
// writes the one before, so the socket and the disk are both kept busy (one
// thread doing both leaves the client waiting while each piece is written:
// a unix socket holds about 200 KiB). At most `pieces` x `pieceBytes` are in
// flight, each byte is copied once into a piece and written from there.
// Returns the first failure of either side, after which neither is called
// again; the write thread is joined before it returns.
using RelayRead = std::function<std::variant<std::size_t, Response>(std::span<char>)>;
using RelayWrite = std::function<std::optional<Response>(std::string_view)>;
std::optional<Response> relay(const RelayRead& read, const RelayWrite& write, std::size_t pieces = 4,
                              std::size_t pieceBytes = std::size_t{1} << 18);

}  // namespace stockade::daemon
