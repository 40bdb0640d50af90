// The audit file (`stockade run --audit FILE`): a sink that nothing inside a
// sandbox can redirect.
//
// The file is opened once, before any child runs, and only written through
// that descriptor: a child that later renames or replaces the path changes
// nothing. At the open: the parent directory is reached from "/" one
// component at a time with O_NOFOLLOW (a symlink anywhere on the way is
// refused, so the parent is a real directory), the file itself is opened
// with O_NOFOLLOW|O_APPEND|O_CREAT|O_CLOEXEC and must be a regular file with
// no other hard link, and a path inside any tree the sandbox may write is
// refused: a child could otherwise rewrite the log, or plant a symlink or
// FIFO there before the next run opens it. "Inside" is decided by the path
// and again by place in the filesystem (platform/linux/mountinfo.h), so a
// tree reached through a bind mount of it (or of a directory in it) is
// inside it too.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "platform/unique_fd.h"

namespace stockade::audit {

class FileSink {
 public:
  // `path`: absolute, or relative to the current directory. `writableTrees`:
  // real paths of every tree the sandbox may write (DerivedRules' allowWrite
  // and defaultWrite). The error says what is wrong and what to do.
  static std::variant<FileSink, std::string> open(const std::string& path,
                                                  const std::vector<std::string>& writableTrees);

  // Appends one line and a newline in one write(): O_APPEND keeps lines of
  // concurrent writers whole. A failed write is reported once on stderr.
  void write(const std::string& line);

  const std::string& path() const noexcept { return path_; }

 private:
  platform::UniqueFd fd_;
  std::string path_;
  bool warned_ = false;
};

}  // namespace stockade::audit
