// The controlling terminal for `stockade attach`: raw mode while attached,
// the previous mode restored on every way out (RAII; signals arrive through
// a signalfd, so no handler runs while the mode is being changed).
#pragma once

#include <optional>
#include <termios.h>

namespace stockade::cli {

class RawTerminal {
 public:
  // Puts `fd` in raw mode if it is a terminal; otherwise does nothing.
  explicit RawTerminal(int fd);
  ~RawTerminal();  // restores the saved mode
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  bool active() const { return saved_.has_value(); }

 private:
  int fd_;
  std::optional<termios> saved_;
};

struct WindowSize {
  unsigned short cols = 80;
  unsigned short rows = 24;
};
// The size of the terminal on `fd`; nullopt when it is not one.
std::optional<WindowSize> windowSize(int fd);

}  // namespace stockade::cli
