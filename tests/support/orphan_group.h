// A process group a crashed daemon would leave: a `sleep 600` in a session
// of its own whose parent has exited, so that it is nobody's child here and
// only its identity (pid, start time, boot) can reach it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace stockade::testing {

inline pid_t spawnOrphanGroup() {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  pid_t mid = ::fork();
  if (mid == 0) {
    ::setsid();
    pid_t leaf = ::fork();
    if (leaf == 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
      _exit(127);
    }
    (void)!::write(fds[1], &leaf, sizeof leaf);
    _exit(0);
  }
  ::close(fds[1]);
  pid_t leaf = 0;
  (void)!::read(fds[0], &leaf, sizeof leaf);
  ::close(fds[0]);
  ::waitpid(mid, nullptr, 0);
  return leaf;
}

}  // namespace stockade::testing
