// The one deadline a proxied connection is under at a time (waiting for a
// request head, connecting, idle, lingering before close), and the watchdog
// that enforces it by cancelling the connection's pending operations.
// Internal to the proxy (Asio types); io thread only.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

namespace stockade::proxy {

class Deadline {
 public:
  enum class Kind { kNone, kIdle, kHeader, kConnect, kLinger };
  using Clock = std::chrono::steady_clock;

  Deadline(boost::asio::io_context& ioc, std::chrono::milliseconds idleTimeout)
      : timer_(ioc), idleTimeout_(idleTimeout) {}

  // Starts `kind`, replacing the current deadline, and forgets an earlier firing.
  void arm(Kind kind, std::chrono::milliseconds d);
  void disarm() noexcept;
  // Progress on an idle deadline pushes it back by the idle timeout.
  void touch() noexcept;
  // Whether the deadline armed last has fired.
  bool fired() const noexcept { return fired_ != Kind::kNone; }

  // Runs until stop(): each time the armed deadline passes, calls `onFire`
  // (which cancels the connection's operations) once.
  boost::asio::awaitable<void> watch(std::function<void()> onFire);
  void stop() noexcept;

 private:
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds idleTimeout_;
  Kind kind_ = Kind::kNone;
  Kind fired_ = Kind::kNone;
  Clock::time_point at_ = Clock::time_point::max();
  bool stopped_ = false;
};

}  // namespace stockade::proxy
