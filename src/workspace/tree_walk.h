// A depth-first walk of a directory tree through fds: every directory is
// opened relative to its parent's fd with O_NOFOLLOW and checked to be the
// object that was listed, so no symlink (planted before or during the walk)
// is ever followed, and memory stays bounded by the depth, not the tree.
// Symlinks are reported as symlinks, never entered.
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "platform/sys_error.h"
#include "platform/unique_fd.h"

namespace stockade::workspace {

class TreeWalker {
 public:
  static constexpr std::size_t kMaxDepth = 512;

  struct Item {
    std::string rel;   // relative to the walk's root: "a/b"
    std::string name;  // the last component
    int parentFd = -1; // the directory holding it (valid until the next call to next())
    struct stat st {};  // lstat of the entry
    bool post = false; // a directory again, after everything beneath it (with `postOrder`)
  };

  // Walks beneath `dirFd` (an O_RDONLY | O_DIRECTORY fd, taken over).
  // `postOrder`: directories are reported again once their entries are.
  TreeWalker(platform::UniqueFd dirFd, bool postOrder);
  TreeWalker(TreeWalker&&) noexcept;
  TreeWalker& operator=(TreeWalker&&) noexcept;
  ~TreeWalker();

  // The next entry; nullopt at the end. After a directory's pre-order item,
  // its entries follow unless skipChildren() is called first.
  platform::SysResult<std::optional<Item>> next();
  void skipChildren() noexcept { skip_ = true; }
  // The fd of the walk's root directory.
  int rootFd() const noexcept;

 private:
  struct Level {
    DIR* dir = nullptr;
    std::string rel;
  };
  std::vector<Level> levels_;
  std::optional<Item> pendingDir_;  // a directory just reported, to enter on the next call
  std::vector<Item> posts_;         // post-order items for open levels
  bool postOrder_ = false;
  bool skip_ = false;
};

}  // namespace stockade::workspace
