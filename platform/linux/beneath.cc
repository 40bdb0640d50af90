#include "platform/linux/beneath.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "platform/linux/kernel_abi.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string procFd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

SysResult<UniqueFd> openBeneath(int dirFd, const char* what, const std::string& rel, int flags,
                                Symlinks symlinks) {
  std::uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  if (symlinks == Symlinks::kRefuse) resolve |= RESOLVE_NO_SYMLINKS;
  const char* path = rel.empty() ? "." : rel.c_str();
  // EAGAIN: "a rename or mount happened during resolution" of a ".." (the
  // kernel cannot then prove the walk stayed beneath). Bounded retries.
  for (int attempt = 0;; ++attempt) {
    int fd = abi::openat2(dirFd, path, static_cast<std::uint64_t>(flags | O_CLOEXEC), resolve);
    if (fd >= 0) return UniqueFd(fd);
    if (errno == EAGAIN && attempt < 16) continue;
    return SysError{std::string("openat2(") + what + ", " + quoted(path) + ", RESOLVE_BENEATH" +
                        (symlinks == Symlinks::kRefuse ? "|RESOLVE_NO_SYMLINKS" : "") + ")",
                    errno};
  }
}

SysResult<std::string> fdPath(int fd) {
  std::string link = procFd(fd);
  std::string out(256, '\0');
  for (;;) {
    ssize_t n = ::readlink(link.c_str(), out.data(), out.size());
    if (n < 0) return SysError{"readlink(" + quoted(link) + ")", errno};
    if (static_cast<std::size_t>(n) < out.size()) {
      out.resize(static_cast<std::size_t>(n));
      return out;
    }
    out.resize(out.size() * 2);
  }
}

SysResult<UniqueFd> reopen(int pathFd, int flags) {
  std::string link = procFd(pathFd);
  int fd = ::open(link.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return SysError{"open(" + quoted(link) + ")", errno};
  return UniqueFd(fd);
}

SysResult<std::uint64_t> mountId(int fd) {
  struct statx stx = {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0)
    return SysError{"statx(" + std::to_string(fd) + ", AT_EMPTY_PATH, STATX_MNT_ID)", errno};
  if (!(stx.stx_mask & STATX_MNT_ID)) return SysError{"statx(STATX_MNT_ID) (Linux 5.8)", ENOSYS};
  return static_cast<std::uint64_t>(stx.stx_mnt_id);
}

SysResult<std::monostate> renameAt(int fromDir, const std::string& from, int toDir, const std::string& to,
                                   RenameMode mode) {
  unsigned flags = 0;
  if (mode == RenameMode::kNoReplace) flags = RENAME_NOREPLACE;
  if (mode == RenameMode::kExchange) flags = RENAME_EXCHANGE;
  if (::renameat2(fromDir, from.c_str(), toDir, to.c_str(), flags) != 0) {
    const char* name = mode == RenameMode::kExchange ? ", RENAME_EXCHANGE)" : mode == RenameMode::kNoReplace ? ", RENAME_NOREPLACE)" : ")";
    return SysError{"renameat2(" + quoted(from) + ", " + quoted(to) + name, errno};
  }
  return std::monostate{};
}

}  // namespace stockade::platform
