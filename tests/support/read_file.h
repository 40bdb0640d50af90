// The whole content of a file ("" when it cannot be read; what was read
// before an error, such as a /proc/<pid> file whose process exited meanwhile).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace stockade::testing {

// read(2), not an ifstream: libstdc++'s filebuf throws from underflow when a
// read fails (ESRCH from a vanished /proc/<pid>/stat), whatever the stream's
// exception mask.
inline std::string readWholeFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace stockade::testing
