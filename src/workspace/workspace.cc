// The file API: upload, download, list, makeDir, exists, remove. Every
// object is reached through resolve() (openat2 beneath the pinned root) and
// then used only through its fd or an *at() call on one component in a
// directory fd, and every object is judged by the access rules with the real
// path the kernel has for it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "src/workspace/tree_walk.h"
#include "src/workspace/workspace_impl.h"

namespace stockade {

using platform::SysError;
using platform::UniqueFd;

namespace workspace {

WorkspaceStatus fence(const Workspace::Impl& ws) {
  if (ws.options.live && !ws.options.live())
    return makeError(WorkspaceErrorCode::kStaleEpoch, "the sandbox of workspace " + quoteValue(ws.realPath) +
                                                          " is gone; create a new sandbox");
  return std::nullopt;
}

AccessRules accessRules(const Workspace::Impl& ws) { return AccessRules(ws.options.rules()); }

WorkspaceError resolutionError(const SysError& e, const std::string& path, WorkspaceErrorCode notDir) {
  std::string p = "path " + quoteValue(path);
  switch (e.error) {
    case EXDEV:
    case ELOOP:
      return makeError(WorkspaceErrorCode::kInvalidPath,
                       p + " leads outside the workspace through a symlink (an absolute symlink, or one that climbs "
                           "out); give a path whose every component stays beneath /workspace");
    case ENOENT: return makeError(WorkspaceErrorCode::kNotFound, p + ": no such file or directory");
    case ENOTDIR:
      return makeError(notDir, p + ": a component of it is not a directory");
    case EACCES:
    case EPERM: return makeError(WorkspaceErrorCode::kPermissionDenied, p + ": the host refused access (" + e.message() + ")");
    case ENAMETOOLONG: return makeError(WorkspaceErrorCode::kInvalidPath, p + " is too long");
    default: return ioError(e, p);
  }
}

WorkspaceError ioError(const SysError& e, const std::string& what) {
  return makeError(WorkspaceErrorCode::kUnavailable, what + ": " + e.message());
}
WorkspaceError ioError(const char* call, int error, const std::string& what) {
  return ioError(SysError{call, error}, what);
}

WorkspaceResult<Resolved> resolve(const Workspace::Impl& ws, const SandboxPath& path, int flags,
                                  WorkspaceErrorCode notDir) {
  auto fd = platform::openBeneath(ws.root.get(), "workspace", path.rel, O_PATH | flags);
  if (auto* e = std::get_if<SysError>(&fd)) return resolutionError(*e, path.text(), notDir);
  Resolved r;
  r.fd = std::get<UniqueFd>(std::move(fd));
  if (::fstat(r.fd.get(), &r.st) != 0) return ioError("fstat", errno, path.text());
  auto real = platform::fdPath(r.fd.get());
  if (auto* e = std::get_if<SysError>(&real)) return ioError(*e, path.text());
  r.real = std::get<std::string>(std::move(real));
  return r;
}

namespace {

// The first refusal among the names ensureDirectory() would create beneath
// `existing` (the deepest directory of `path` there is): `missing`, the
// components of `path` after it, then `leaf` (a file).
std::optional<WorkspaceError> refusalAhead(const AccessRules& rules, const std::string& existingReal,
                                           const SandboxPath& existing, std::string_view missing,
                                           std::string_view leaf) {
  std::string real = existingReal;
  SandboxPath at = existing;
  auto refuse = [&](ObjectKind kind) -> std::optional<WorkspaceError> {
    if (auto rule = rules.writeRefusal(real, WriteOp::kCreate, kind))
      return makeError(WorkspaceErrorCode::kPermissionDenied, "path " + quoteValue(at.text()) +
                                                                   ": the sandbox's policy does not let it be created (" +
                                                                   *rule + ")");
    return std::nullopt;
  };
  for (auto name : policy::pathComponents(missing)) {
    real += "/" + std::string(name);
    at = SandboxPath{joinRel(at.rel, name)};
    if (auto e = refuse(ObjectKind::kDirectory)) return e;
  }
  if (leaf.empty()) return std::nullopt;
  real += "/" + std::string(leaf);
  at = SandboxPath{joinRel(at.rel, leaf)};
  return refuse(ObjectKind::kOther);
}

}  // namespace

WorkspaceResult<Resolved> ensureDirectory(const Workspace::Impl& ws, const AccessRules& rules, const SandboxPath& path,
                                          bool* created, std::string_view leaf) {
  if (created) *created = false;
  SandboxPath at;
  auto root = resolve(ws, at, O_DIRECTORY);
  if (auto* e = std::get_if<WorkspaceError>(&root)) return std::move(*e);
  Resolved current = std::get<Resolved>(std::move(root));
  // The deepest directory of `path` there is, each component resolved once;
  // `rest` is what is missing after it.
  std::string_view rest = path.rel;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    SandboxPath next{joinRel(at.rel, rest.substr(0, slash))};
    auto r = resolve(ws, next, O_DIRECTORY, WorkspaceErrorCode::kNotDirectory);
    if (auto* e = std::get_if<WorkspaceError>(&r)) {
      if (e->code != WorkspaceErrorCode::kNotFound) return std::move(*e);
      break;
    }
    current = std::get<Resolved>(std::move(r));
    at = std::move(next);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  if (rest.empty()) return current;
  // Decided before anything is made: every name after it, and the leaf.
  if (auto e = refusalAhead(rules, current.real, at, rest, leaf)) return std::move(*e);
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string name(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    SandboxPath next{joinRel(at.rel, name)};
    // Made, then resolved beneath the root again: what is there now (one
    // made meanwhile by the sandbox, or a symlink swapped in) is judged by
    // the kernel like any other path.
    for (int attempt = 0;; ++attempt) {
      if (auto rule = rules.writeRefusal(current.real + "/" + name, WriteOp::kCreate, ObjectKind::kDirectory))
        return makeError(WorkspaceErrorCode::kPermissionDenied,
                         "path " + quoteValue(next.text()) + ": the sandbox's policy does not let it be created (" +
                             *rule + ")");
      bool made = ::mkdirat(current.fd.get(), name.c_str(), 0755) == 0;
      if (!made && errno != EEXIST)
        return resolutionError(SysError{"mkdirat(" + quoteValue(next.text()) + ")", errno}, next.text(),
                               WorkspaceErrorCode::kNotDirectory);
      auto r = resolve(ws, next, O_DIRECTORY, WorkspaceErrorCode::kNotDirectory);
      if (auto* ok = std::get_if<Resolved>(&r)) {
        current = std::move(*ok);
        if (created) *created = made;
        break;
      }
      auto& err = std::get<WorkspaceError>(r);
      if (err.code != WorkspaceErrorCode::kNotFound || attempt > 3) return std::move(err);  // removed meanwhile: again
    }
    at = std::move(next);
  }
  return current;
}

std::string temporaryName(std::string_view prefix) {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != sizeof bytes) throw std::runtime_error("getrandom failed");
  std::string out(prefix);
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

void sweepStaleStaging(int dirFd) {
  UniqueFd listing(::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = listing ? ::fdopendir(listing.get()) : nullptr;
  if (!d) return;
  listing.release();
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(kStagingPrefix)) continue;
    UniqueFd held(::openat(dirFd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    // Held by its importer (LOCK_EX until it is done): not ours to touch.
    if (held && ::flock(held.get(), LOCK_EX | LOCK_NB) == 0) stale.emplace_back(name);
  }
  ::closedir(d);
  // Locked again while removed: an importer that made one by this name meanwhile checks its lock's name.
  for (const auto& name : stale) {
    UniqueFd held(::openat(dirFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (held && ::flock(held.get(), LOCK_EX | LOCK_NB) == 0) (void)removeTree(dirFd, name);
  }
}

std::optional<SysError> removeTree(int parentFd, const std::string& name) {
  int fd = ::openat(parentFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ENOTDIR || errno == ELOOP) {
      if (::unlinkat(parentFd, name.c_str(), 0) == 0 || errno == ENOENT) return std::nullopt;
      return SysError{"unlinkat(" + quoteValue(name) + ")", errno};
    }
    return SysError{"openat(" + quoteValue(name) + ", O_DIRECTORY|O_NOFOLLOW)", errno};
  }
  TreeWalker walk(UniqueFd(fd), /*postOrder=*/true);
  for (;;) {
    auto item = walk.next();
    if (auto* e = std::get_if<SysError>(&item)) return *e;
    auto& it = std::get<std::optional<TreeWalker::Item>>(item);
    if (!it) break;
    if (S_ISDIR(it->st.st_mode)) {
      if (!it->post) continue;
      if (::unlinkat(it->parentFd, it->name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        return SysError{"unlinkat(" + quoteValue(it->rel) + ", AT_REMOVEDIR)", errno};
    } else if (::unlinkat(it->parentFd, it->name.c_str(), 0) != 0 && errno != ENOENT) {
      return SysError{"unlinkat(" + quoteValue(it->rel) + ")", errno};
    }
  }
  if (::unlinkat(parentFd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    return SysError{"unlinkat(" + quoteValue(name) + ", AT_REMOVEDIR)", errno};
  return std::nullopt;
}

namespace {
const char* kindText(mode_t mode);
WorkspaceError denied(const std::string& path, const char* what, const std::string& rule);
}  // namespace

WorkspaceResult<Resolved> readableDirectory(const Workspace::Impl& ws, const AccessRules& rules,
                                            const SandboxPath& path, const char* verb) {
  auto r = resolve(ws, path, 0);
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  Resolved& obj = std::get<Resolved>(r);
  if (!S_ISDIR(obj.st.st_mode))
    return makeError(WorkspaceErrorCode::kNotDirectory, "path " + quoteValue(path.text()) + " is " +
                                                            kindText(obj.st.st_mode) + ", not a directory to be " +
                                                            verb);
  if (auto rule = rules.readRefusal(obj.real)) return denied(path.text(), verb, *rule);
  return std::move(obj);
}

namespace {

std::uint64_t fileLimit(const Workspace::Impl& ws, const AccessRules& rules) {
  std::uint64_t limit = ws.options.maxFileBytes;
  if (rules.fileSizeLimit() && rules.fileSizeLimit() < limit) limit = rules.fileSizeLimit();
  return limit;
}

std::string limitText(const Workspace::Impl& ws, const AccessRules& rules) {
  std::uint64_t limit = fileLimit(ws, rules);
  return std::to_string(limit) + " bytes (" +
         (limit == ws.options.maxFileBytes ? std::string("the workspace's file size limit")
                                           : std::string("the policy's limits.fileSizeBytes")) +
         ")";
}

// Parses and fences in one.
WorkspaceResult<SandboxPath> begin(const Workspace::Impl& ws, std::string_view path) {
  if (auto e = fence(ws)) return std::move(*e);
  auto parsed = parseSandboxPath(path);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  return std::get<SandboxPath>(std::move(parsed));
}

SandboxPath parentOf(const SandboxPath& p) { return SandboxPath{std::string(p.parent())}; }

WorkspaceError denied(const std::string& path, const char* what, const std::string& rule) {
  return makeError(WorkspaceErrorCode::kPermissionDenied,
                   "path " + quoteValue(path) + ": the sandbox's policy does not let it be " + what + " (" + rule + ")");
}

EntryType typeOf(mode_t mode) {
  if (S_ISREG(mode)) return EntryType::kFile;
  if (S_ISDIR(mode)) return EntryType::kDirectory;
  if (S_ISLNK(mode)) return EntryType::kSymlink;
  return EntryType::kOther;
}

const char* kindText(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "a regular file";
}

}  // namespace
}  // namespace workspace

using namespace workspace;

// --- MemorySource, names --------------------------------------------------

WorkspaceResult<std::size_t> MemorySource::read(std::span<char> buf) {
  std::size_t n = std::min(buf.size(), bytes_.size());
  std::memcpy(buf.data(), bytes_.data(), n);
  bytes_.remove_prefix(n);
  return n;
}

std::string_view workspaceErrorCodeName(WorkspaceErrorCode code) noexcept {
  switch (code) {
    case WorkspaceErrorCode::kInvalidPath: return "invalid_path";
    case WorkspaceErrorCode::kNotFound: return "not_found";
    case WorkspaceErrorCode::kIsDirectory: return "is_directory";
    case WorkspaceErrorCode::kNotDirectory: return "not_directory";
    case WorkspaceErrorCode::kTooLarge: return "too_large";
    case WorkspaceErrorCode::kPermissionDenied: return "permission_denied";
    case WorkspaceErrorCode::kInvalidArchive: return "invalid_archive";
    case WorkspaceErrorCode::kStaleEpoch: return "stale_epoch";
    case WorkspaceErrorCode::kUnavailable: return "unavailable";
    case WorkspaceErrorCode::kTimeout: return "timeout";
    case WorkspaceErrorCode::kNotQuiescent: return "not_quiescent";
    case WorkspaceErrorCode::kLimitExceeded: return "SANDBOX_LIMIT_EXCEEDED";
    case WorkspaceErrorCode::kConflict: return "SANDBOX_CONFLICT";
    case WorkspaceErrorCode::kDataCorrupted: return "SANDBOX_DATA_CORRUPTED";
    case WorkspaceErrorCode::kFailedOperation: return "SANDBOX_FAILED_OPERATION";
  }
  return "unknown";
}

std::string_view entryTypeName(EntryType type) noexcept {
  switch (type) {
    case EntryType::kFile: return "file";
    case EntryType::kDirectory: return "dir";
    case EntryType::kSymlink: return "symlink";
    case EntryType::kOther: return "other";
  }
  return "other";
}

// --- open -------------------------------------------------------------------

WorkspaceResult<Workspace> Workspace::open(WorkspaceOptions options) {
  if (!options.rules) throw std::invalid_argument("WorkspaceOptions.rules: required (the sandbox's live rules)");
  if (options.hostPath.empty() || options.hostPath.front() != '/')
    throw std::invalid_argument("WorkspaceOptions.hostPath: " + quoteValue(options.hostPath) +
                                " is not an absolute path; give the host directory mounted at /workspace");
  auto impl = std::make_shared<Impl>();
  int fd = ::open(options.hostPath.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return resolutionError(SysError{"open(" + quoteValue(options.hostPath) + ", O_PATH|O_DIRECTORY)", errno},
                           options.hostPath);
  impl->root.reset(fd);
  // What an import killed by SIGKILL left (in the workspace, or beside it):
  // nothing of stockade's stays on the host after its next start.
  sweepStaleStaging(fd);
  if (UniqueFd parent(::openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC)); parent) sweepStaleStaging(parent.get());
  auto real = platform::fdPath(fd);
  if (auto* e = std::get_if<SysError>(&real)) return ioError(*e, "workspace " + quoteValue(options.hostPath));
  impl->realPath = std::get<std::string>(std::move(real));
  impl->options = std::move(options);
  return Workspace(std::move(impl));
}

const std::string& Workspace::hostPath() const noexcept { return impl_->realPath; }

// --- download ---------------------------------------------------------------

struct FileReader::State {
  UniqueFd fd;
  std::uint64_t size = 0;
  std::uint64_t remaining = 0;
  std::string path;
};
FileReader::FileReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
FileReader::FileReader(FileReader&&) noexcept = default;
FileReader& FileReader::operator=(FileReader&&) noexcept = default;
FileReader::~FileReader() = default;
std::uint64_t FileReader::size() const noexcept { return state_->size; }

WorkspaceResult<std::size_t> FileReader::read(std::span<char> buf) {
  State& s = *state_;
  if (s.remaining == 0 || buf.empty()) return std::size_t{0};
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), s.remaining));
  for (;;) {
    ssize_t n = ::read(s.fd.get(), buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ioError("read", errno, "download of " + quoteValue(s.path));
    if (n == 0)
      return makeError(WorkspaceErrorCode::kUnavailable,
                       "download of " + quoteValue(s.path) + ": the file shrank while it was read (" +
                           std::to_string(s.size - s.remaining) + " of " + std::to_string(s.size) + " bytes)");
    s.remaining -= static_cast<std::uint64_t>(n);
    return static_cast<std::size_t>(n);
  }
}

WorkspaceResult<FileReader> Workspace::openRead(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  auto r = resolve(*impl_, path, 0);
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  Resolved& obj = std::get<Resolved>(r);
  if (S_ISDIR(obj.st.st_mode))
    return makeError(WorkspaceErrorCode::kIsDirectory,
                     "path " + quoteValue(path.text()) + " is a directory; download a file, or list the directory");
  if (!S_ISREG(obj.st.st_mode))
    return makeError(WorkspaceErrorCode::kInvalidPath, "path " + quoteValue(path.text()) + " is " +
                                                           kindText(obj.st.st_mode) +
                                                           "; only regular files can be downloaded");
  AccessRules rules = accessRules(*impl_);
  if (auto rule = rules.readRefusal(obj.real)) return denied(path.text(), "read", *rule);
  std::uint64_t size = static_cast<std::uint64_t>(obj.st.st_size);
  if (size > fileLimit(*impl_, rules))
    return makeError(WorkspaceErrorCode::kTooLarge, "path " + quoteValue(path.text()) + ": " + std::to_string(size) +
                                                        " bytes is over the limit of " + limitText(*impl_, rules));
  auto fd = platform::reopen(obj.fd.get(), O_RDONLY | O_NOCTTY);
  if (auto* e = std::get_if<SysError>(&fd)) return resolutionError(*e, path.text());
  auto state = std::make_unique<FileReader::State>();
  state->fd = std::get<UniqueFd>(std::move(fd));
  ::posix_fadvise(state->fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  state->size = state->remaining = size;
  state->path = path.text();
  return FileReader(std::move(state));
}

WorkspaceStatus Workspace::download(std::string_view path, ByteSink& out) {
  auto reader = openRead(path);
  if (auto* e = std::get_if<WorkspaceError>(&reader)) return std::move(*e);
  auto& r = std::get<FileReader>(reader);
  return pumpBytes([&](std::span<char> b) { return r.read(b); }, [&](std::string_view b) { return out.write(b); });
}

WorkspaceResult<std::string> Workspace::download(std::string_view path) {
  auto reader = openRead(path);
  if (auto* e = std::get_if<WorkspaceError>(&reader)) return std::move(*e);
  auto& r = std::get<FileReader>(reader);
  std::string out(static_cast<std::size_t>(r.size()), '\0');
  std::size_t at = 0;
  while (at < out.size()) {
    auto n = r.read(std::span<char>(out.data() + at, out.size() - at));
    if (auto* e = std::get_if<WorkspaceError>(&n)) return std::move(*e);
    at += std::get<std::size_t>(n);
  }
  return out;
}

// --- upload -----------------------------------------------------------------

struct FileWriter::State {
  UniqueFd dir;   // the target's directory (O_PATH)
  UniqueFd file;  // the temporary: unnamed (O_TMPFILE) until it is committed, where the filesystem can
  std::string temp, leaf, path;  // temp: the temporary's name; empty while it has none
  std::uint64_t written = 0;
  std::uint64_t limit = 0;
  std::string limitText;
  bool done = false;
  ~State() { discard(); }
  void discard() {
    if (!temp.empty()) ::unlinkat(dir.get(), temp.c_str(), 0);
    temp.clear();
  }
};
FileWriter::FileWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
FileWriter::FileWriter(FileWriter&&) noexcept = default;
FileWriter& FileWriter::operator=(FileWriter&&) noexcept = default;
FileWriter::~FileWriter() = default;
std::uint64_t FileWriter::written() const noexcept { return state_->written; }

WorkspaceStatus FileWriter::write(std::string_view bytes) {
  State& s = *state_;
  if (s.done) return makeError(WorkspaceErrorCode::kUnavailable, "upload of " + quoteValue(s.path) + " already ended");
  if (bytes.size() > s.limit - s.written) {
    s.done = true;
    s.discard();
    return makeError(WorkspaceErrorCode::kTooLarge, "upload of " + quoteValue(s.path) + ": more than " + s.limitText +
                                                        "; nothing was written");
  }
  while (!bytes.empty()) {
    ssize_t n = ::write(s.file.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      s.done = true;
      s.discard();
      if (e == EFBIG)
        return makeError(WorkspaceErrorCode::kTooLarge, "upload of " + quoteValue(s.path) + ": write: EFBIG");
      return ioError("write", e, "upload of " + quoteValue(s.path));
    }
    s.written += static_cast<std::uint64_t>(n);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return std::nullopt;
}

WorkspaceStatus FileWriter::commit() {
  State& s = *state_;
  if (s.done) return makeError(WorkspaceErrorCode::kUnavailable, "upload of " + quoteValue(s.path) + " already ended");
  s.done = true;
  auto fail = [&](WorkspaceError e) {
    s.discard();
    return e;
  };
  if (s.temp.empty()) {
    // The unnamed file gets a name only now, for the rename that replaces the target.
    for (int attempt = 0; s.temp.empty(); ++attempt) {
      std::string name = temporaryName(".stockade-upload-");
      if (::linkat(AT_FDCWD, ("/proc/self/fd/" + std::to_string(s.file.get())).c_str(), s.dir.get(), name.c_str(),
                   AT_SYMLINK_FOLLOW) == 0)
        s.temp = std::move(name);
      else if (errno != EEXIST || attempt > 3)
        return fail(ioError(SysError{"linkat(O_TMPFILE, " + quoteValue(name) + ")", errno}, "upload of " + quoteValue(s.path)));
    }
  }
  if (::close(s.file.release()) != 0) return fail(ioError("close", errno, "upload of " + quoteValue(s.path)));
  auto r = platform::renameAt(s.dir.get(), s.temp, s.dir.get(), s.leaf, platform::RenameMode::kReplace);
  if (auto* e = std::get_if<SysError>(&r)) {
    if (e->error == EISDIR || e->error == ENOTEMPTY || e->error == EEXIST)
      return fail(makeError(WorkspaceErrorCode::kIsDirectory, "path " + quoteValue(s.path) + " is a directory"));
    return fail(ioError(*e, "upload of " + quoteValue(s.path)));
  }
  s.temp.clear();  // it is the target now
  return std::nullopt;
}

WorkspaceResult<FileWriter> Workspace::openWrite(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  if (path.isRoot())
    return makeError(WorkspaceErrorCode::kIsDirectory, "path \"/workspace\" is the workspace directory; name a file in it");
  AccessRules rules = accessRules(*impl_);
  auto dir = ensureDirectory(*impl_, rules, parentOf(path), nullptr, path.leaf());
  if (auto* e = std::get_if<WorkspaceError>(&dir)) return std::move(*e);
  Resolved& parent = std::get<Resolved>(dir);
  std::string leaf(path.leaf());
  struct stat st {};
  bool exists = ::fstatat(parent.fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return ioError("fstatat", errno, "upload of " + quoteValue(path.text()));
  if (exists && S_ISLNK(st.st_mode)) {
    // Written through, as the sandbox's own write would be -- when the link
    // leads to a file beneath the workspace: the file's real place becomes
    // the target (its directory resolved again without any symlink).
    auto target = resolve(*impl_, path, 0);
    if (auto* e = std::get_if<WorkspaceError>(&target)) {
      if (e->code == WorkspaceErrorCode::kNotFound)
        e->message = "path " + quoteValue(path.text()) + " is a dangling symlink; upload to the name it points to";
      return std::move(*e);
    }
    Resolved& file = std::get<Resolved>(target);
    if (S_ISDIR(file.st.st_mode))
      return makeError(WorkspaceErrorCode::kIsDirectory,
                       "path " + quoteValue(path.text()) + " is a symlink to a directory; upload to a file name");
    if (!file.real.starts_with(impl_->realPath + "/"))
      return makeError(WorkspaceErrorCode::kInvalidPath, "path " + quoteValue(path.text()) + " leads outside the workspace");
    SandboxPath real{file.real.substr(impl_->realPath.size() + 1)};
    auto fd = platform::openBeneath(impl_->root.get(), "workspace", std::string(real.parent()), O_PATH | O_DIRECTORY,
                                    platform::Symlinks::kRefuse);
    if (auto* e = std::get_if<SysError>(&fd)) return resolutionError(*e, path.text());
    parent.fd = std::get<UniqueFd>(std::move(fd));
    parent.real = file.real.substr(0, file.real.rfind('/'));
    leaf = std::string(real.leaf());
    if (::fstatat(parent.fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != file.st.st_ino ||
        st.st_dev != file.st.st_dev)
      return makeError(WorkspaceErrorCode::kUnavailable,
                       "upload of " + quoteValue(path.text()) + ": the file its symlink names moved meanwhile; retry");
  }
  if (exists && S_ISDIR(st.st_mode))
    return makeError(WorkspaceErrorCode::kIsDirectory,
                     "path " + quoteValue(path.text()) + " is a directory; upload to a file name");
  if (auto rule = rules.writeRefusal(parent.real + "/" + leaf, exists ? WriteOp::kReplace : WriteOp::kCreate,
                                     ObjectKind::kOther))
    return denied(path.text(), "written", *rule);

  auto state = std::make_unique<FileWriter::State>();
  state->leaf = leaf;
  state->path = path.text();
  state->limit = fileLimit(*impl_, rules);
  state->limitText = limitText(*impl_, rules);
  // A replaced file keeps its permissions, as a write to it in the sandbox would.
  mode_t mode = exists && S_ISREG(st.st_mode) ? (st.st_mode & 0777) : 0644;
  // Unnamed until committed, so that a process killed meanwhile leaves
  // nothing in the workspace; a named temporary where the filesystem has no
  // O_TMPFILE (exFAT, NFS before 4.2 ...).
  state->file.reset(::openat(parent.fd.get(), ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600));
  for (int attempt = 0; !state->file; ++attempt) {
    std::string temp = temporaryName(".stockade-upload-");
    int fd = ::openat(parent.fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      state->file.reset(fd);
      state->temp = std::move(temp);
      break;
    }
    if (errno != EEXIST || attempt > 3)
      return resolutionError(SysError{"openat(" + quoteValue(temp) + ", O_CREAT|O_EXCL)", errno}, path.text(),
                             WorkspaceErrorCode::kNotDirectory);
  }
  state->dir = std::move(parent.fd);
  if (::fchmod(state->file.get(), mode) != 0) return ioError("fchmod", errno, "upload of " + quoteValue(path.text()));
  return FileWriter(std::move(state));
}

WorkspaceStatus Workspace::upload(std::string_view path, ByteSource& data) {
  auto writer = openWrite(path);
  if (auto* e = std::get_if<WorkspaceError>(&writer)) return std::move(*e);
  auto& w = std::get<FileWriter>(writer);
  if (auto e = pumpBytes([&](std::span<char> b) { return data.read(b); }, [&](std::string_view b) { return w.write(b); }))
    return e;
  return w.commit();
}

WorkspaceStatus Workspace::upload(std::string_view path, std::string_view data) {
  MemorySource source(data);
  return upload(path, source);
}

// --- list, makeDir, exists, remove -----------------------------------------

WorkspaceResult<std::vector<EntryInfo>> Workspace::list(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  auto r = readableDirectory(*impl_, accessRules(*impl_), path, "listed");
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  Resolved& obj = std::get<Resolved>(r);
  auto fd = platform::reopen(obj.fd.get(), O_RDONLY | O_DIRECTORY);
  if (auto* e = std::get_if<SysError>(&fd)) return resolutionError(*e, path.text());
  DIR* d = ::fdopendir(std::get<UniqueFd>(fd).get());
  if (!d) return ioError("fdopendir", errno, "list of " + quoteValue(path.text()));
  std::get<UniqueFd>(fd).release();
  std::vector<EntryInfo> out;
  std::string base = path.text();
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    EntryType type = EntryType::kOther;
    switch (e->d_type) {
      case DT_REG: type = EntryType::kFile; break;
      case DT_DIR: type = EntryType::kDirectory; break;
      case DT_LNK: type = EntryType::kSymlink; break;
      case DT_UNKNOWN: {
        struct stat st {};
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = typeOf(st.st_mode);
        break;
      }
      default: break;
    }
    out.push_back(EntryInfo{std::string(name), type, base + "/" + std::string(name)});
  }
  ::closedir(d);
  return out;
}

WorkspaceResult<bool> Workspace::makeDir(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  bool created = false;
  auto r = ensureDirectory(*impl_, accessRules(*impl_), std::get<SandboxPath>(parsed), &created);
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  return created;
}

WorkspaceResult<bool> Workspace::exists(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  if (path.isRoot()) return true;
  auto dir = resolve(*impl_, parentOf(path), O_DIRECTORY);
  if (auto* e = std::get_if<WorkspaceError>(&dir)) {
    if (e->code == WorkspaceErrorCode::kNotFound) return false;
    return std::move(*e);
  }
  Resolved& parent = std::get<Resolved>(dir);
  if (auto rule = accessRules(*impl_).readRefusal(parent.real)) return denied(path.text(), "read", *rule);
  struct stat st {};
  if (::fstatat(parent.fd.get(), std::string(path.leaf()).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno == ENOENT) return false;
  return ioError("fstatat", errno, "exists of " + quoteValue(path.text()));
}

WorkspaceStatus Workspace::remove(std::string_view pathText) {
  auto parsed = begin(*impl_, pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  if (path.isRoot())
    return makeError(WorkspaceErrorCode::kInvalidPath,
                     "path \"/workspace\" is the workspace itself; remove the names in it instead");
  auto dir = resolve(*impl_, parentOf(path), O_DIRECTORY);
  if (auto* e = std::get_if<WorkspaceError>(&dir)) return std::move(*e);
  Resolved& parent = std::get<Resolved>(dir);
  std::string leaf(path.leaf());
  struct stat st {};
  if (::fstatat(parent.fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return resolutionError(SysError{"fstatat", errno}, path.text());
  AccessRules rules = accessRules(*impl_);
  const std::string real = parent.real + "/" + leaf;
  auto check = [&](const std::string& objectReal, const std::string& shown, mode_t mode) -> WorkspaceStatus {
    ObjectKind kind = S_ISDIR(mode) ? ObjectKind::kDirectory : ObjectKind::kOther;
    if (auto rule = rules.writeRefusal(objectReal, WriteOp::kRemove, kind)) return denied(shown, "removed", *rule);
    // A read-denied object is a mount in the sandbox's view: it cannot remove it either.
    if (auto rule = rules.readRefusal(objectReal)) return denied(shown, "removed", *rule);
    return std::nullopt;
  };
  if (auto e = check(real, path.text(), st.st_mode)) return e;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(parent.fd.get(), leaf.c_str(), 0) != 0)
      return resolutionError(SysError{"unlinkat", errno}, path.text());
    return std::nullopt;
  }
  // A tree: every object in it is judged before anything is removed.
  int fd = ::openat(parent.fd.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return resolutionError(SysError{"openat", errno}, path.text());
  TreeWalker walk(UniqueFd(fd), false);
  for (;;) {
    auto item = walk.next();
    if (auto* e = std::get_if<SysError>(&item)) return ioError(*e, "remove of " + quoteValue(path.text()));
    auto& it = std::get<std::optional<TreeWalker::Item>>(item);
    if (!it) break;
    if (auto e = check(real + "/" + it->rel, path.text() + "/" + it->rel, it->st.st_mode)) return e;
  }
  if (auto e = removeTree(parent.fd.get(), leaf)) return ioError(*e, "remove of " + quoteValue(path.text()));
  return std::nullopt;
}

}  // namespace stockade
