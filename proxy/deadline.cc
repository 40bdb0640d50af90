#include "proxy/deadline.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace stockade::proxy {

void Deadline::arm(Kind kind, std::chrono::milliseconds d) {
  fired_ = Kind::kNone;
  kind_ = kind;
  at_ = Clock::now() + d;
  if (at_ < timer_.expiry()) timer_.expires_at(at_);  // wakes the watchdog
}

void Deadline::disarm() noexcept {
  kind_ = Kind::kNone;
  at_ = Clock::time_point::max();
}

void Deadline::touch() noexcept {
  if (kind_ == Kind::kIdle) at_ = Clock::now() + idleTimeout_;
}

void Deadline::stop() noexcept {
  stopped_ = true;
  timer_.cancel();
}

// One timer per connection: the watchdog sleeps until the current deadline,
// and a touch() that pushes an idle deadline back costs no timer operation
// (the watchdog finds the later time when it wakes and sleeps again).
boost::asio::awaitable<void> Deadline::watch(std::function<void()> onFire) {
  while (!stopped_) {
    timer_.expires_at(at_);
    boost::system::error_code ec;
    co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (stopped_) break;
    if (kind_ != Kind::kNone && Clock::now() >= at_) {
      fired_ = kind_;
      kind_ = Kind::kNone;
      at_ = Clock::time_point::max();
      onFire();
    }
  }
}

}  // namespace stockade::proxy
