// Moving bytes from one socket to another without touching them: splice(2)
// through a pipe on loan from the PipePool, or, when no pipe can be had, a
// copy through user space. Internal to the proxy (Asio types); io thread only.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

#include "proxy/deadline.h"
#include "proxy/io_buffer.h"
#include "proxy/pipe_pool.h"

namespace stockade::proxy {

enum class RelayResult {
  kDone,    // `limit` bytes were written
  kEof,     // `from` reached EOF first, and everything read from it was written
  kFailed,  // a socket failed or the deadline fired
};
inline constexpr std::uint64_t kUntilEof = UINT64_MAX;

// Moves `limit` bytes (kUntilEof: until EOF) from `from` to `to`, never
// reading past `limit`, so the next message on `from` stays in its socket.
// `scratch` must be empty; it carries the bytes when no pipe is available.
// Each move adds to `counter` and touches `deadline`. A pipe is held only
// while it holds bytes; on kFailed a pipe that still holds some is closed.
boost::asio::awaitable<RelayResult> relay(boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to,
                                          IoBuffer& scratch, PipePool& pool, Deadline& deadline, std::uint64_t limit,
                                          std::uint64_t& counter);

}  // namespace stockade::proxy
