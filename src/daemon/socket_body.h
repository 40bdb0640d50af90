// A request body of announced length (Content-Length) read straight off the
// connection's socket by the thread that consumes it: each byte is copied
// once, from the socket into the reader's buffer, with no queue, no parser
// and no io thread in between. (A chunked body goes through Beast's parser
// and a bounded queue instead: server.cc's BodyPipe.)
//
// The connection hands the socket over with open() once it may be read
// (after "100 Continue" is out), together with the bytes its HTTP reader
// had already taken past the head, and does not read the socket again until
// the handler's reply is back. It hands over a dup() of the socket: a close
// on the connection's side (the server stopping) never leaves read() using
// a number the process has since given to another file; its shutdown()
// ends a read() waiting here at once.
//
// Thread-safety: read() from one thread at a time (the handler's); open(),
// fail() and abandon() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "platform/unique_fd.h"
#include "src/daemon/server.h"

namespace stockade::daemon {

class SocketBody final : public BodyReader {
 public:
  // `pieceTimeout`: how long read() waits for the next bytes (ServerLimits::bodyTimeout).
  SocketBody(std::uint64_t length, std::chrono::milliseconds pieceTimeout);

  // Waits until the body may be read; then up to buf.size() bytes, never
  // past the announced length (a pipelined request after it stays unread),
  // 0 once all of it was read. An error when the client went away or
  // stalled past `pieceTimeout`, or after fail() or abandon().
  std::variant<std::size_t, ApiError> read(std::span<char> buf) override;
  std::optional<std::uint64_t> announcedLength() const override { return length_; }

  // The socket (a dup of the connection's) and the body bytes already read
  // off it with the head (at most the body's length).
  void open(platform::UniqueFd socket, std::string early);
  // The body cannot be read (the "100 Continue" could not be sent).
  void fail(ApiError e);
  // The reply is out: a later read() is an error.
  void abandon();
  // Every byte of the body was read (the connection can carry another request).
  bool complete() const;

 private:
  std::variant<std::size_t, ApiError> receive(std::span<char> buf);

  const std::uint64_t length_;
  const std::chrono::milliseconds pieceTimeout_;
  mutable std::mutex mu_;
  std::condition_variable opened_;
  bool open_ = false;
  bool abandoned_ = false;
  std::optional<ApiError> failure_;
  // Set by open(), then used by the reading thread only.
  platform::UniqueFd socket_;
  std::string early_;
  std::size_t earlyOffset_ = 0;
  std::uint64_t remaining_;  // guarded by mu_ for complete(); written by read() only
};

}  // namespace stockade::daemon
