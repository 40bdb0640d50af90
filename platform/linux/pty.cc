#include "platform/linux/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace stockade::platform {
namespace {

std::string failure(const std::string& call) {
  const char* name = strerrorname_np(errno);
  return call + " failed: " + (name ? name : std::to_string(errno));
}

}  // namespace

std::variant<PtyPair, std::string> openPty(WindowSize size) {
  PtyPair pair;
  pair.master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.master) return failure("posix_openpt(O_RDWR|O_NOCTTY|O_CLOEXEC)");
  if (::grantpt(pair.master.get()) != 0) return failure("grantpt()");
  if (::unlockpt(pair.master.get()) != 0) return failure("unlockpt()");
  char name[128];
  if (::ptsname_r(pair.master.get(), name, sizeof name) != 0) return failure("ptsname_r()");
  pair.slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.slave) return failure(std::string("open(\"") + name + "\", O_RDWR|O_NOCTTY)");
  if (auto err = setWindowSize(pair.master.get(), size)) return *err;
  return pair;
}

std::optional<std::string> setWindowSize(int fd, WindowSize size) {
  winsize ws{};
  ws.ws_col = size.cols;
  ws.ws_row = size.rows;
  if (::ioctl(fd, TIOCSWINSZ, &ws) != 0)
    return failure("ioctl(" + std::to_string(fd) + ", TIOCSWINSZ, " + std::to_string(size.cols) + "x" +
                   std::to_string(size.rows) + ")");
  return std::nullopt;
}

std::optional<WindowSize> windowSize(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0) return std::nullopt;
  return WindowSize{ws.ws_col, ws.ws_row};
}

bool isTerminal(int fd) noexcept { return ::isatty(fd) == 1; }

UniqueFd ownDescription(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFL);
  // A PTY master (TIOCGPTN answers) is not reopened: that makes a new PTY.
  unsigned ptyNumber = 0;
  if (flags < 0 || !isTerminal(fd) || ::ioctl(fd, TIOCGPTN, &ptyNumber) == 0) return UniqueFd();
  char path[32];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  UniqueFd own(::open(path, (flags & (O_ACCMODE | O_APPEND | O_NONBLOCK)) | O_NOCTTY | O_CLOEXEC));
  struct stat was {}, is {};  // the same terminal, or none
  if (!own || ::fstat(fd, &was) != 0 || ::fstat(own.get(), &is) != 0 || was.st_rdev != is.st_rdev) return UniqueFd();
  return own;
}

std::optional<SavedTerminal> SavedTerminal::save(int fd, Window window) {
  termios attributes{};
  if (::tcgetattr(fd, &attributes) != 0) return std::nullopt;
  return SavedTerminal(fd, attributes, ::fcntl(fd, F_GETFL),
                       window == Window::kRestore ? windowSize(fd) : std::nullopt);
}

SavedTerminal::SavedTerminal(SavedTerminal&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), attributes_(other.attributes_), flags_(other.flags_), size_(other.size_) {}

SavedTerminal::~SavedTerminal() { restore(); }

std::optional<std::string> SavedTerminal::makeRaw() const {
  termios raw = attributes_;
  ::cfmakeraw(&raw);
  if (::tcsetattr(fd_, TCSANOW, &raw) != 0) return failure("tcsetattr(" + std::to_string(fd_) + ", raw)");
  return std::nullopt;
}

void SavedTerminal::restore() const noexcept {
  if (fd_ < 0) return;
  (void)::tcsetattr(fd_, TCSANOW, &attributes_);
  if (flags_ >= 0) (void)::fcntl(fd_, F_SETFL, flags_);
  // Only when it changed: a resize signals the terminal's foreground group.
  if (const auto now = windowSize(fd_); size_ && now && (now->cols != size_->cols || now->rows != size_->rows))
    (void)setWindowSize(fd_, *size_);
}

}  // namespace stockade::platform
