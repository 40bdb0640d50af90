// Host objects held open for as long as something built from them lives, one
// descriptor per object in the whole process.
//
// A prepared sandbox (HostSnapshot, mounts.h) pins every host object its
// mounts bind or cover, so that none can be freed and its inode number handed
// to a new file while the sandbox waits for its program; and it watches the
// supervisor's mount table. Every sandbox of a supervisor pins nearly the
// same objects (the host root's top-level entries, the denied files of the
// same policy): one O_PATH descriptor each would cost a daemon ~35
// descriptors per idle sandbox. So a pin is shared by identity: every holder
// of the object (device, inode) holds the same descriptor, closed with its
// last holder. An identity is unique among live inodes, and the shared
// descriptor keeps its inode alive, so the object a shared pin holds is
// exactly the one its holder opened and identified; fstat() through it answers
// the same (its link count included) as through a descriptor of the holder's
// own. Likewise one descriptor of /proc/self/mountinfo serves every watcher
// (MountTableWatch).
//
// Thread-safe: pins are taken and dropped from any thread (a mutex guards the
// table of shared descriptors). Parent side only: nothing here may run between
// clone and exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace stockade::platform {

class HostPin {
 public:
  HostPin() = default;
  // The object at `path` itself (O_PATH|O_NOFOLLOW: a symlink is its own
  // object): an empty pin when there is none (or it cannot be opened or
  // stat'ed). The identity and link count are those seen at this call.
  static HostPin open(const char* path);

  explicit operator bool() const noexcept { return held_ != nullptr; }
  // The shared O_PATH descriptor; -1 for an empty pin. Never close it.
  int fd() const noexcept;
  dev_t device() const noexcept { return device_; }
  ino_t inode() const noexcept { return inode_; }
  nlink_t links() const noexcept { return links_; }  // at open()
  mode_t mode() const noexcept { return mode_; }

  struct Held;  // one shared descriptor (host_pins.cc)

 private:
  std::shared_ptr<const Held> held_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  nlink_t links_ = 0;
  mode_t mode_ = 0;
};

// The supervisor's mount table, watched through one shared descriptor of
// /proc/self/mountinfo (poll() says POLLPRI once per change seen, to the
// descriptor: so the changes are counted here, for every watcher at once).
class MountTableWatch {
 public:
  // A count that grows with every change of the mount table seen since the
  // first call; nullopt when the table cannot be watched (the caller must then
  // assume it changed). Two calls answer the same count only if no mount came
  // or went in between.
  static std::optional<std::uint64_t> generation();
};

}  // namespace stockade::platform
