#include "src/audit/file_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/linux/mountinfo.h"
#include "policy/paths.h"
#include "src/audit/event.h"

namespace stockade::audit {
namespace {

std::string errnoText(int err) { return std::string(strerrorname_np(err) ? strerrorname_np(err) : "?") + " (" + std::strerror(err) + ")"; }

struct Tree {
  std::string path;
  platform::FilesystemLocation location;
};

// Where each writable tree that exists lies in its filesystem.
std::variant<std::vector<Tree>, std::string> locateTrees(const std::vector<std::string>& trees) {
  std::vector<Tree> out;
  for (const auto& tree : trees) {
    platform::UniqueFd fd(::open(tree.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) continue;  // not there: nothing of it can be reached another way
    struct stat st;
    // Only files and directories have places in a filesystem ("/dev/stderr" may be a pipe).
    if (::fstat(fd.get(), &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) continue;
    auto located = platform::filesystemLocation(fd.get());
    if (auto* err = std::get_if<std::string>(&located)) return "locating the writable tree " + printable(tree) + ": " + *err;
    out.push_back({tree, std::get<platform::FilesystemLocation>(std::move(located))});
  }
  return out;
}

// The writable tree the file or directory open as `fd` lies in, whatever
// path reached it (a bind mount shows a tree at a second place), or an error.
std::variant<const Tree*, std::string> treeHolding(int fd, const std::vector<Tree>& trees) {
  auto located = platform::filesystemLocation(fd);
  if (auto* err = std::get_if<std::string>(&located)) return *err;
  const auto& here = std::get<platform::FilesystemLocation>(located);
  for (const auto& tree : trees)
    if (tree.location.device == here.device && policy::isWithin(here.path, tree.location.path)) return &tree;
  return static_cast<const Tree*>(nullptr);
}

std::string insideTree(const std::string& path, const std::string& tree, const std::string& how) {
  return printable(path) + " lies inside the writable tree " + printable(tree) + " of the policy" + how +
         ", where the sandboxed program could replace it (with a symlink to a file of yours, or a FIFO) or rewrite "
         "it; put the audit log outside every writable path";
}

}  // namespace

std::variant<FileSink, std::string> FileSink::open(const std::string& given,
                                                   const std::vector<std::string>& writableTrees) {
  if (given.empty()) return std::string("the audit path is empty; name a file");
  if (given.find('\0') != std::string::npos) return std::string("the audit path contains NUL");
  std::string absolute = given;
  if (absolute.front() != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) return std::string("getcwd() failed: ") + errnoText(errno);
    absolute = std::string(cwd) + "/" + absolute;
  }
  // No symlink is followed below, so the lexical form is the real path.
  const std::string path = policy::lexicallyNormal(absolute);
  const auto slash = path.rfind('/');
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  if (name.empty()) return printable(given) + " names a directory; name a file";

  for (const auto& tree : writableTrees)
    if (policy::isWithin(path, tree)) return insideTree(path, tree, "");
  auto located = locateTrees(writableTrees);
  if (auto* err = std::get_if<std::string>(&located)) return *err;
  const auto& trees = std::get<std::vector<Tree>>(located);
  constexpr const char* kOtherPath = " (reached here through another path to it: a bind mount)";

  platform::UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return std::string("open(\"/\", O_PATH|O_DIRECTORY) failed: ") + errnoText(errno);
  std::string walked;
  for (std::size_t start = 1; start <= parent.size() && parent != "/";) {
    std::size_t end = parent.find('/', start);
    if (end == std::string::npos) end = parent.size();
    const std::string component = parent.substr(start, end - start);
    walked += "/" + component;
    platform::UniqueFd next(::openat(dir.get(), component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      int err = errno;
      struct stat st;
      if ((err == ENOTDIR || err == ELOOP) && ::fstatat(dir.get(), component.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode))
        return "the directory of " + printable(path) + " is not a real directory: " + printable(walked) +
               " is a symlink; name the audit file by its real path";
      return "openat(" + printable(walked) + ", O_PATH|O_DIRECTORY|O_NOFOLLOW) failed: " + errnoText(err);
    }
    dir = std::move(next);
    start = end + 1;
  }
  auto holder = treeHolding(dir.get(), trees);
  if (auto* err = std::get_if<std::string>(&holder)) return "locating the directory of " + printable(path) + ": " + *err;
  if (auto* tree = std::get<const Tree*>(holder)) return insideTree(path, tree->path, kOtherPath);
  platform::UniqueFd fd(
      ::openat(dir.get(), name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd) {
    int err = errno;
    if (err == ELOOP)
      return printable(path) + " is a symlink; refusing to write audit events through it (name the real file)";
    struct stat st;
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
      return printable(path) + " is not a regular file; name a regular file for the audit log";
    return "open(" + printable(path) + ", O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW) failed: " + errnoText(err);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return "fstat(" + printable(path) + ") failed: " + errnoText(errno);
  if (!S_ISREG(st.st_mode)) return printable(path) + " is not a regular file; name a regular file for the audit log";
  // Another name of the same file could be inside a writable tree.
  if (st.st_nlink > 1)
    return printable(path) + " has " + std::to_string(st.st_nlink) +
           " hard links, and the sandboxed program could write it through another of them; name a file of its own";
  holder = treeHolding(fd.get(), trees);  // a tree naming this very file, reached through a bind of it
  if (auto* err = std::get_if<std::string>(&holder)) return "locating " + printable(path) + ": " + *err;
  if (auto* tree = std::get<const Tree*>(holder)) return insideTree(path, tree->path, kOtherPath);
  // Opened non-blocking only so that a FIFO could not hang the open; a regular file never blocks.
  if (::fcntl(fd.get(), F_SETFL, O_APPEND) != 0) return "fcntl(F_SETFL, O_APPEND) failed: " + errnoText(errno);
  FileSink sink;
  sink.fd_ = std::move(fd);
  sink.path_ = path;
  return sink;
}

void FileSink::write(const std::string& line) {
  std::string text = line + "\n";
  if (::write(fd_.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) || warned_) return;
  warned_ = true;
  std::string warning = "stockade: warning: writing the audit log " + printable(path_) + " failed: " + errnoText(errno) + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, warning.data(), warning.size());
  (void)ignored;
}

}  // namespace stockade::audit
