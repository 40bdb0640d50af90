// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include "proxy/splice.h"

#include <fcntl.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cassert>
#include <cerrno>

namespace stockade::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {
// What one copy moves when no pipe is available.
constexpr std::size_t kCopyChunk = 256 * 1024;
auto tok(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }
}  // namespace

asio::awaitable<RelayResult> relay(tcp::socket& from, tcp::socket& to, IoBuffer& scratch, PipePool& pool,
                                   Deadline& deadline, std::uint64_t limit, std::uint64_t& counter) {
  assert(scratch.size() == 0);
  error_code ec;
  if (!from.native_non_blocking()) from.native_non_blocking(true, ec);
  if (!ec && !to.native_non_blocking()) to.native_non_blocking(true, ec);
  std::uint64_t left = limit;
  bool eof = false;
  PipeLease pipe;
  // TCP urgent data: splice() never reads past the urgent mark
  // (tcp_read_sock()), so at the mark `from` stays readable while splice()
  // moves nothing -- without a way out, no byte after the mark would ever
  // move and this loop would spin. recv() does read it (inline: the session
  // sets SO_OOBINLINE), so a read that splice() could not make right after a
  // wait said readable is copied instead.
  bool woken = false, copyNext = false;
  auto moved = [&](std::size_t n) {
    if (left != kUntilEof) left -= n;
  };
  while (!ec) {
    if (!eof && left > 0 && (!pipe || pipe.held < pipe.capacity())) {
      if (!pipe && !copyNext) pipe = pool.acquire();
      if (!pipe) {
        copyNext = woken = false;
        // No pipe: copy one read's worth through user space. Asio waits for
        // readability itself.
        auto space = scratch.prepare(static_cast<std::size_t>(std::min<std::uint64_t>(left, kCopyChunk)));
        std::size_t n = co_await from.async_read_some(space, tok(ec));
        if (ec == asio::error::eof) {
          eof = true;
          ec.clear();
        }
        if (ec) break;
        scratch.commit(n);
        co_await asio::async_write(to, asio::buffer(scratch.view().data(), n), tok(ec));
        scratch.consume(n);
        if (ec) break;
        moved(n);
        counter += n;
        deadline.touch();
        if (eof) co_return RelayResult::kEof;
        if (left == 0) co_return RelayResult::kDone;
        continue;
      }
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, pipe.capacity() - pipe.held));
      ssize_t n = ::splice(from.native_handle(), nullptr, pipe.writeFd(), nullptr, want,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        woken = false;
        pipe.held += static_cast<std::size_t>(n);
        moved(static_cast<std::size_t>(n));
        if (pipe.held >= pipe.capacity()) pipe.grow();
        deadline.touch();
      } else if (n == 0) {
        eof = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN) {
        break;
      } else if (pipe.held == 0) {
        pipe.reset();  // nothing in flight: the pipe goes back while this direction waits
        if (woken) {
          copyNext = true;  // readable, yet nothing spliced: the urgent mark (above)
          continue;
        }
        co_await from.async_wait(tcp::socket::wait_read, tok(ec));
        woken = true;
        continue;
      }
    }
    if (pipe && pipe.held > 0) {
      ssize_t n = ::splice(pipe.readFd(), nullptr, to.native_handle(), nullptr, pipe.held,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        pipe.held -= static_cast<std::size_t>(n);
        counter += static_cast<std::uint64_t>(n);
        deadline.touch();
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && errno == EAGAIN) {
        co_await to.async_wait(tcp::socket::wait_write, tok(ec));
      } else {
        break;
      }
      continue;
    }
    if (eof) co_return RelayResult::kEof;
    if (left == 0) co_return RelayResult::kDone;
  }
  co_return RelayResult::kFailed;  // `pipe` may hold bytes of a message that failed: its lease closes it
}

}  // namespace stockade::proxy
