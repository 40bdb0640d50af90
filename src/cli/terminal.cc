#include "src/cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace stockade::cli {

RawTerminal::RawTerminal(int fd) : fd_(fd) {
  termios t{};
  if (!::isatty(fd) || ::tcgetattr(fd, &t) != 0) return;
  saved_ = t;
  ::cfmakeraw(&t);
  ::tcsetattr(fd, TCSAFLUSH, &t);
}

RawTerminal::~RawTerminal() {
  if (saved_) ::tcsetattr(fd_, TCSAFLUSH, &*saved_);
}

std::optional<WindowSize> windowSize(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return std::nullopt;
  return WindowSize{ws.ws_col, ws.ws_row};
}

}  // namespace stockade::cli
