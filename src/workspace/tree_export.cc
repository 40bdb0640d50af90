#include "src/workspace/tree_export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "src/workspace/tar_format.h"
#include "src/workspace/tree_walk.h"

namespace stockade {

using platform::SysError;
using platform::UniqueFd;
using namespace workspace;

struct TreeExport::State {
  State(TreeWalker w, AccessRules r) : walker(std::move(w)), rules(std::move(r)) {}

  TreeWalker walker;
  AccessRules rules;
  std::string rootReal;
  std::string what;  // "export of \"/workspace/src\"", for errors
  std::set<std::string, std::less<>> excluded;
  std::map<std::pair<dev_t, ino_t>, std::string> firstNames;  // files with more than one link

  std::string pending;  // header (or trailer) bytes not yet handed out
  std::size_t pendingAt = 0;
  UniqueFd file;
  std::uint64_t fileRemaining = 0;
  std::size_t padding = 0;
  bool shrank = false;
  bool finished = false;
  ExportSummary summary;

  // Queues the next entry's header (or, after `emitted` archive bytes, the trailer).
  WorkspaceStatus advance(std::uint64_t emitted);
};

TreeExport::TreeExport(std::unique_ptr<State> state) : state_(std::move(state)) {}
TreeExport WorkspaceInternals::makeExport(std::unique_ptr<TreeExport::State> state) {
  return TreeExport(std::move(state));
}
TreeExport::TreeExport(TreeExport&&) noexcept = default;
TreeExport& TreeExport::operator=(TreeExport&&) noexcept = default;
TreeExport::~TreeExport() = default;
const ExportSummary& TreeExport::summary() const noexcept { return state_->summary; }

WorkspaceStatus TreeExport::State::advance(std::uint64_t emitted) {
  for (;;) {
    auto next = walker.next();
    if (auto* e = std::get_if<SysError>(&next)) return ioError(*e, what);
    auto& item = std::get<std::optional<TreeWalker::Item>>(next);
    if (!item) {
      pending = tarTrailer(emitted);
      pendingAt = 0;
      finished = true;
      return std::nullopt;
    }
    const struct stat& st = item->st;
    const bool dir = S_ISDIR(st.st_mode);
    if (dir && excluded.count(item->name)) {
      walker.skipChildren();
      continue;
    }
    if (rules.readRefusal(rootReal + "/" + item->rel)) {
      ++summary.omitted;
      if (dir) walker.skipChildren();
      continue;
    }
    TarEntry e;
    e.name = item->rel;
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime = st.st_mtim.tv_sec;
    if (dir) {
      e.type = TarType::kDirectory;
    } else if (S_ISLNK(st.st_mode)) {
      e.type = TarType::kSymlink;
      std::string target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 0)) + 1, '\0');
      ssize_t n = ::readlinkat(item->parentFd, item->name.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size()) continue;  // changed since it was listed
      target.resize(static_cast<std::size_t>(n));
      e.linkName = std::move(target);
    } else if (S_ISREG(st.st_mode)) {
      if (st.st_nlink > 1) {
        if (auto it = firstNames.find({st.st_dev, st.st_ino}); it != firstNames.end()) {
          e.type = TarType::kHardLink;
          e.linkName = it->second;
        }
      }
      if (e.type == TarType::kFile) {
        int fd = ::openat(item->parentFd, item->name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
          if (errno == ENOENT) continue;  // removed since it was listed
          return ioError(SysError{"openat(" + quoteValue(item->rel) + ", O_RDONLY|O_NOFOLLOW)", errno}, what);
        }
        UniqueFd owned(fd);
        struct stat now {};
        if (::fstat(fd, &now) != 0) return ioError("fstat", errno, what);
        if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino || now.st_dev != st.st_dev) continue;  // swapped
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        e.size = static_cast<std::uint64_t>(now.st_size);
        if (st.st_nlink > 1) firstNames.emplace(std::make_pair(st.st_dev, st.st_ino), item->rel);
        file = std::move(owned);
        fileRemaining = e.size;
        padding = tarPadding(e.size);
        shrank = false;
      }
    } else {
      ++summary.omitted;  // fifos, sockets, devices: no content to carry
      continue;
    }
    pending = encodeTarHeader(e);
    pendingAt = 0;
    ++summary.entries;
    return std::nullopt;
  }
}

WorkspaceResult<std::size_t> TreeExport::read(std::span<char> buf) {
  State& s = *state_;
  std::size_t out = 0;
  while (out < buf.size()) {
    const std::size_t space = buf.size() - out;
    if (s.pendingAt < s.pending.size()) {
      std::size_t n = std::min(space, s.pending.size() - s.pendingAt);
      std::memcpy(buf.data() + out, s.pending.data() + s.pendingAt, n);
      s.pendingAt += n;
      out += n;
      continue;
    }
    if (s.fileRemaining > 0) {
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(space, s.fileRemaining));
      if (!s.shrank) {
        ssize_t n = ::read(s.file.get(), buf.data() + out, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return ioError("read", errno, s.what);
        if (n > 0) {
          out += static_cast<std::size_t>(n);
          s.fileRemaining -= static_cast<std::uint64_t>(n);
          continue;
        }
        s.shrank = true;  // the header promised more: the rest is zeros, as tar(1) does
      }
      std::memset(buf.data() + out, 0, want);
      out += want;
      s.fileRemaining -= want;
      continue;
    }
    if (s.padding > 0) {
      std::size_t n = std::min(space, s.padding);
      std::memset(buf.data() + out, 0, n);
      s.padding -= n;
      out += n;
      continue;
    }
    s.file.reset();
    if (s.finished) break;
    if (auto e = s.advance(s.summary.bytes + out)) return std::move(*e);
  }
  s.summary.bytes += out;
  return out;
}

namespace workspace {

WorkspaceResult<TreeExport> exportTreeAt(const Workspace::Impl& ws, const SandboxPath& path,
                                         const ExportOptions& options) {
  AccessRules rules = accessRules(ws);
  auto r = readableDirectory(ws, rules, path, "exported");
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  Resolved& obj = std::get<Resolved>(r);
  auto fd = platform::reopen(obj.fd.get(), O_RDONLY | O_DIRECTORY);
  if (auto* e = std::get_if<SysError>(&fd)) return resolutionError(*e, path.text());
  auto state = std::make_unique<TreeExport::State>(TreeWalker(std::get<UniqueFd>(std::move(fd)), false),
                                                   std::move(rules));
  state->rootReal = obj.real;
  state->what = "export of " + quoteValue(path.text());
  state->excluded.insert(options.excludeDirectoryNames.begin(), options.excludeDirectoryNames.end());
  return WorkspaceInternals::makeExport(std::move(state));
}

}  // namespace workspace

WorkspaceResult<TreeExport> Workspace::exportTree(std::string_view pathText) {
  if (auto e = fence(*impl_)) return std::move(*e);
  auto parsed = parseSandboxPath(pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  return exportTreeAt(*impl_, std::get<SandboxPath>(parsed), {});
}

WorkspaceStatus Workspace::exportTree(ByteSink& out, std::string_view path) {
  auto tree = exportTree(path);
  if (auto* e = std::get_if<WorkspaceError>(&tree)) return std::move(*e);
  auto& t = std::get<TreeExport>(tree);
  return pumpBytes([&](std::span<char> b) { return t.read(b); }, [&](std::string_view b) { return out.write(b); });
}

}  // namespace stockade
