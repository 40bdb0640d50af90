// Pseudo-terminals and the state of real terminals: the only code that
// calls the tty ioctls and termios.
//
// A PTY process (the process service's PtyService, `stockade run -t`) gets a
// fresh pair: the slave is its stdin, stdout, stderr and controlling
// terminal, the supervisor reads and writes the master. The operator's own
// terminal, when stockade relays to it, is put in raw mode and restored.
#pragma once

#include <termios.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "platform/unique_fd.h"

namespace stockade::platform {

struct WindowSize {
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
};

struct PtyPair {
  UniqueFd master;  // O_CLOEXEC; the supervisor's end
  UniqueFd slave;   // O_CLOEXEC, not a controlling terminal of the caller (O_NOCTTY)
};

// posix_openpt() + grantpt() + unlockpt() + the slave opened, sized `size`.
// The error names the call and errno.
std::variant<PtyPair, std::string> openPty(WindowSize size);

// TIOCSWINSZ on a terminal (a PTY master or slave): the foreground process
// group of that terminal gets SIGWINCH.
std::optional<std::string> setWindowSize(int fd, WindowSize size);
// TIOCGWINSZ; nullopt when `fd` is not a terminal.
std::optional<WindowSize> windowSize(int fd);

bool isTerminal(int fd) noexcept;

// A new open file description of the terminal `fd` (reopened through
// /proc/self/fd, same access mode and status flags, O_NOCTTY|O_CLOEXEC), or
// an invalid fd when it cannot be reopened as the same device (a terminal
// of another user's; a PTY master, whose reopening makes a new PTY).
// The file status flags -- O_NONBLOCK, O_APPEND, O_ASYNC and F_SETOWN's
// owner -- belong to the description, which the operator's shell shares with
// every descriptor it dup'd: a child given its own description changes only
// its own (a child that set O_NONBLOCK on the shared one left the operator's
// shell reading EAGAIN after it exited).
UniqueFd ownDescription(int fd) noexcept;

// A terminal's attributes (termios) and the status flags (F_GETFL) of the
// descriptor saved, as they were when saved -- and, for a terminal handed to
// a child, its window size; restore() puts them back (TCSANOW, F_SETFL, and
// TIOCSWINSZ when the size differs). Move-only; the destructor restores.
class SavedTerminal {
 public:
  // Whether the window size is saved too: for a terminal the child gets
  // (`stockade run -T`), whose size the child may set (TIOCSWINSZ is in the
  // terminal ioctl allow-list: a PTY of the program's own needs it). Nothing
  // tells the child's resize from the operator's meanwhile, so either is
  // undone; a terminal stockade only relays (-t) keeps the operator's.
  enum class Window : bool { kKeep, kRestore };
  // nullopt when `fd` is not a terminal.
  static std::optional<SavedTerminal> save(int fd, Window window = Window::kKeep);
  SavedTerminal(SavedTerminal&& other) noexcept;
  SavedTerminal& operator=(SavedTerminal&&) = delete;
  SavedTerminal(const SavedTerminal&) = delete;
  ~SavedTerminal();

  // cfmakeraw(): no echo, no line editing, no signals from keys (the
  // child's own terminal makes them), 8-bit clean.
  std::optional<std::string> makeRaw() const;
  void restore() const noexcept;

 private:
  SavedTerminal(int fd, const termios& attributes, int flags, std::optional<WindowSize> size)
      : fd_(fd), attributes_(attributes), flags_(flags), size_(size) {}
  int fd_ = -1;
  termios attributes_{};
  int flags_ = -1;                  // F_GETFL; -1: not known
  std::optional<WindowSize> size_;  // Window::kRestore: the size to put back
};

}  // namespace stockade::platform
