#include "src/daemon/socket_body.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace stockade::daemon {

SocketBody::SocketBody(std::uint64_t length, std::chrono::milliseconds pieceTimeout)
    : length_(length), pieceTimeout_(pieceTimeout), remaining_(length) {}

void SocketBody::open(platform::UniqueFd socket, std::string early) {
  std::lock_guard lock(mu_);
  socket_ = std::move(socket);
  early_ = std::move(early);
  open_ = true;
  opened_.notify_all();
}

void SocketBody::fail(ApiError e) {
  std::lock_guard lock(mu_);
  if (!failure_) failure_ = std::move(e);
  opened_.notify_all();
}

void SocketBody::abandon() {
  std::lock_guard lock(mu_);
  abandoned_ = true;
  opened_.notify_all();
}

bool SocketBody::complete() const {
  std::lock_guard lock(mu_);
  return remaining_ == 0;
}

std::variant<std::size_t, ApiError> SocketBody::read(std::span<char> buf) {
  {
    std::unique_lock lock(mu_);
    opened_.wait(lock, [&] { return open_ || failure_ || abandoned_; });
    if (failure_) return *failure_;
    if (abandoned_) return ApiError{ApiCode::kUnavailable, "the request was answered before its body was read"};
    if (remaining_ == 0 || buf.empty()) return std::size_t{0};
  }
  if (buf.size() > remaining_) buf = buf.first(static_cast<std::size_t>(remaining_));
  std::size_t n = 0;
  if (earlyOffset_ < early_.size()) {
    n = std::min(buf.size(), early_.size() - earlyOffset_);
    std::memcpy(buf.data(), early_.data() + earlyOffset_, n);
    earlyOffset_ += n;
    if (earlyOffset_ == early_.size()) std::string().swap(early_);
  } else {
    auto got = receive(buf);
    if (auto* e = std::get_if<ApiError>(&got)) return *e;
    n = std::get<std::size_t>(got);
  }
  std::lock_guard lock(mu_);
  remaining_ -= n;
  return n;
}

std::variant<std::size_t, ApiError> SocketBody::receive(std::span<char> buf) {
  const int fd = socket_.get();
  for (;;) {
    // MSG_DONTWAIT: the socket's own O_NONBLOCK is Asio's to set.
    ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0)
      return ApiError{ApiCode::kUnavailable, "the client went away after " + std::to_string(length_ - remaining_) +
                                                 " of the " + std::to_string(length_) + " bytes it announced"};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return ApiError{ApiCode::kUnavailable, std::string("recv() of the request body failed: ") + std::strerror(errno)};
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(pieceTimeout_.count(), INT_MAX)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ApiError{ApiCode::kUnavailable, std::string("poll() of the request body failed: ") + std::strerror(errno)};
    if (ready == 0)
      return ApiError{ApiCode::kTimeout, "no body bytes arrived for " + std::to_string(pieceTimeout_.count()) +
                                             " ms (stockaded --body-timeout-ms)"};
  }
}

}  // namespace stockade::daemon
