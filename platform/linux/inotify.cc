#include "platform/linux/inotify.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stockade::platform {

std::vector<InotifyEvent> decodeInotifyEvents(std::span<const char> buffer) {
  std::vector<InotifyEvent> out;
  std::size_t at = 0;
  while (at + sizeof(inotify_event) <= buffer.size()) {
    inotify_event raw;
    std::memcpy(&raw, buffer.data() + at, sizeof raw);
    std::size_t total = sizeof(inotify_event) + raw.len;
    if (at + total > buffer.size()) break;
    InotifyEvent e;
    e.wd = raw.wd;
    e.cookie = raw.cookie;
    if (raw.len) {
      const char* name = buffer.data() + at + sizeof(inotify_event);
      e.name.assign(name, strnlen(name, raw.len));
    }
    const std::uint32_t m = raw.mask;
    e.created = m & IN_CREATE;
    e.modified = m & IN_MODIFY;
    e.deleted = m & IN_DELETE;
    e.movedFrom = m & IN_MOVED_FROM;
    e.movedTo = m & IN_MOVED_TO;
    e.isDirectory = m & IN_ISDIR;
    e.selfGone = m & (IN_DELETE_SELF | IN_MOVE_SELF);
    e.ignored = m & IN_IGNORED;
    e.overflow = m & IN_Q_OVERFLOW;
    out.push_back(std::move(e));
    at += total;
  }
  return out;
}

SysResult<Inotify> Inotify::create() {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return SysError{"inotify_init1(IN_NONBLOCK|IN_CLOEXEC)", errno};
  Inotify i;
  i.fd_.reset(fd);
  return i;
}

SysResult<int> Inotify::watchDirectory(int dirFd) {
  std::string link = "/proc/self/fd/" + std::to_string(dirFd);
  int wd = ::inotify_add_watch(fd_.get(), link.c_str(),
                               IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                   IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK);
  if (wd < 0) return SysError{"inotify_add_watch(" + link + ")", errno};
  return wd;
}

void Inotify::unwatch(int wd) noexcept { ::inotify_rm_watch(fd_.get(), wd); }

SysResult<std::vector<InotifyEvent>> Inotify::read() {
  std::vector<InotifyEvent> out;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return out;
    if (n < 0) return SysError{"read(inotify)", errno};
    auto batch = decodeInotifyEvents(std::span<const char>(buf, static_cast<std::size_t>(n)));
    out.insert(out.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    if (out.size() > 4096) return out;  // enough for one call: the rest stays queued in the kernel
  }
}

}  // namespace stockade::platform
