#include "src/workspace/tree_walk.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/workspace/sandbox_path.h"

namespace stockade::workspace {

using platform::SysError;
using platform::UniqueFd;

TreeWalker::TreeWalker(UniqueFd dirFd, bool postOrder) : postOrder_(postOrder) {
  DIR* d = ::fdopendir(dirFd.get());
  if (d) {
    dirFd.release();
    levels_.push_back({d, ""});
  }
}

TreeWalker::TreeWalker(TreeWalker&& o) noexcept
    : levels_(std::move(o.levels_)),
      pendingDir_(std::move(o.pendingDir_)),
      posts_(std::move(o.posts_)),
      postOrder_(o.postOrder_),
      skip_(o.skip_) {
  o.levels_.clear();
}

TreeWalker& TreeWalker::operator=(TreeWalker&& o) noexcept {
  if (this != &o) {
    for (auto& l : levels_) ::closedir(l.dir);
    levels_ = std::move(o.levels_);
    o.levels_.clear();
    pendingDir_ = std::move(o.pendingDir_);
    posts_ = std::move(o.posts_);
    postOrder_ = o.postOrder_;
    skip_ = o.skip_;
  }
  return *this;
}

TreeWalker::~TreeWalker() {
  for (auto& l : levels_) ::closedir(l.dir);
}

int TreeWalker::rootFd() const noexcept { return levels_.empty() ? -1 : ::dirfd(levels_.front().dir); }

platform::SysResult<std::optional<TreeWalker::Item>> TreeWalker::next() {
  if (levels_.empty()) return SysError{"fdopendir(walk root)", EBADF};
  // Enter the directory reported last, unless told not to.
  if (pendingDir_) {
    Item dir = std::move(*pendingDir_);
    pendingDir_.reset();
    if (!skip_) {
      if (levels_.size() >= kMaxDepth) return SysError{"walking " + quoteValue(dir.rel) + " (deeper than 512 levels)", ELOOP};
      int fd = ::openat(dir.parentFd, dir.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) return SysError{"openat(" + quoteValue(dir.rel) + ", O_DIRECTORY|O_NOFOLLOW)", errno};
      struct stat st {};
      if (::fstat(fd, &st) != 0 || st.st_dev != dir.st.st_dev || st.st_ino != dir.st.st_ino) {
        ::close(fd);
        return SysError{"openat(" + quoteValue(dir.rel) + "): replaced while it was walked", ESTALE};
      }
      DIR* d = ::fdopendir(fd);
      if (!d) {
        int e = errno;
        ::close(fd);
        return SysError{"fdopendir(" + quoteValue(dir.rel) + ")", e};
      }
      levels_.push_back({d, dir.rel});
      if (postOrder_) {
        dir.post = true;
        posts_.push_back(std::move(dir));
      }
    } else if (postOrder_) {
      // Not entered: its post-order item comes right away.
      skip_ = false;
      dir.post = true;
      dir.parentFd = ::dirfd(levels_.back().dir);
      return std::optional<Item>(std::move(dir));
    }
    skip_ = false;
  }
  while (!levels_.empty()) {
    Level& level = levels_.back();
    errno = 0;
    dirent* e = ::readdir(level.dir);
    if (!e) {
      if (errno != 0) return SysError{"readdir(" + quoteValue(level.rel) + ")", errno};
      if (levels_.size() == 1) return std::optional<Item>();  // the root stays open
      ::closedir(level.dir);
      levels_.pop_back();
      if (postOrder_ && !posts_.empty()) {
        Item post = std::move(posts_.back());
        posts_.pop_back();
        post.parentFd = ::dirfd(levels_.back().dir);
        return std::optional<Item>(std::move(post));
      }
      continue;
    }
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    Item item;
    item.name = std::string(name);
    item.rel = joinRel(level.rel, name);
    item.parentFd = ::dirfd(level.dir);
    if (::fstatat(item.parentFd, e->d_name, &item.st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since it was listed
      return SysError{"fstatat(" + quoteValue(item.rel) + ", AT_SYMLINK_NOFOLLOW)", errno};
    }
    if (S_ISDIR(item.st.st_mode)) pendingDir_ = item;
    return std::optional<Item>(std::move(item));
  }
  return std::optional<Item>();
}

}  // namespace stockade::workspace
