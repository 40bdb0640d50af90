#include "src/workspace/archive_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace stockade::workspace {

using platform::SysError;

WorkspaceResult<StoredArchive> captureArchive(const Workspace::Impl& ws, const SandboxPath& path,
                                              const ExportOptions& options, const std::string& dir,
                                              const std::string& name, std::uint64_t maxBytes, Deadline deadline,
                                              const std::function<void()>& afterRead) {
  auto tree = exportTreeAt(ws, path, options);
  if (auto* e = std::get_if<WorkspaceError>(&tree)) return std::move(*e);
  StoredArchive out;
  out.path = dir + "/" + name;
  int fd = ::open(out.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ioError(SysError{"open(" + quoteValue(out.path) + ", O_CREAT|O_EXCL)", errno}, "archive");
  platform::UniqueFd file(fd);
  bool keep = false;
  struct Remove {
    const std::string& path;
    bool& keep;
    ~Remove() {
      if (!keep) ::unlink(path.c_str());
    }
  } remove{out.path, keep};

  Sha256 sha;
  std::string buf(1 << 18, '\0');
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline)
      return makeError(WorkspaceErrorCode::kTimeout, "archiving " + quoteValue(path.text()) + " timed out after " +
                                                         std::to_string(out.size) + " bytes");
    auto n = std::get<TreeExport>(tree).read(buf);
    if (auto* e = std::get_if<WorkspaceError>(&n)) return std::move(*e);
    std::size_t got = std::get<std::size_t>(n);
    if (got == 0) break;
    out.size += got;
    if (maxBytes && out.size > maxBytes)
      return makeError(WorkspaceErrorCode::kLimitExceeded,
                       "the archive of " + quoteValue(path.text()) + " is over the limit of " +
                           std::to_string(maxBytes) + " bytes (" + std::to_string(out.size) +
                           " bytes so far); leave out more directories (exclude) or persist a smaller directory");
    sha.update(std::string_view(buf.data(), got));
    for (std::size_t at = 0; at < got;) {
      ssize_t w = ::write(fd, buf.data() + at, got - at);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return ioError(SysError{"write(" + quoteValue(out.path) + ")", errno}, "archive");
      at += static_cast<std::size_t>(w);
    }
  }
  if (afterRead) afterRead();
  if (auto e = syncFd(fd, quoteValue(out.path))) return ioError(*e, "archive");
  if (auto e = syncDirectory(dir)) return ioError(*e, "archive");
  out.sha256 = sha.hex();
  out.summary = std::get<TreeExport>(tree).summary();
  keep = true;
  return out;
}

WorkspaceResult<std::size_t> HashingFileSource::read(std::span<char> buf) {
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ioError("read", errno, "stored archive");
    sha_.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    bytes_ += static_cast<std::uint64_t>(n);
    return static_cast<std::size_t>(n);
  }
}

WorkspaceStatus HashingFileSource::drain() {
  std::string buf(1 << 16, '\0');
  for (;;) {
    auto n = read(buf);
    if (auto* e = std::get_if<WorkspaceError>(&n)) return std::move(*e);
    if (std::get<std::size_t>(n) == 0) return std::nullopt;
  }
}

}  // namespace stockade::workspace
