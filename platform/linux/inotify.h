// inotify for directory watches, apart from what the events mean
// (src/workspace/watch.cc). Directories are watched through the fd that pins
// them (/proc/self/fd/N), never through a path walked again.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "platform/sys_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

struct InotifyEvent {
  int wd = -1;
  std::uint32_t cookie = 0;  // pairs a movedFrom with its movedTo
  std::string name;          // the entry in the watched directory ("" for the directory itself)
  bool created = false, modified = false, deleted = false, movedFrom = false, movedTo = false;
  bool isDirectory = false;
  bool selfGone = false;     // the watched directory itself was deleted or moved
  bool ignored = false;      // the watch is gone (the kernel removed it)
  bool overflow = false;     // the kernel's queue overflowed: events were lost
};

// Pure: the events in a buffer read from an inotify fd.
std::vector<InotifyEvent> decodeInotifyEvents(std::span<const char> buffer);

class Inotify {
 public:
  // inotify_init1(IN_NONBLOCK | IN_CLOEXEC).
  static SysResult<Inotify> create();

  int fd() const noexcept { return fd_.get(); }
  // Watches the directory `dirFd` pins for creates, deletes, writes and
  // moves of its entries, and its own deletion or move. Returns the wd.
  SysResult<int> watchDirectory(int dirFd);
  void unwatch(int wd) noexcept;
  // What is queued now; empty when nothing is (never blocks).
  SysResult<std::vector<InotifyEvent>> read();

 private:
  UniqueFd fd_;
};

}  // namespace stockade::platform
