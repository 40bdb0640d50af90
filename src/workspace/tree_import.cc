#include "src/workspace/tree_import.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <locale.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "src/workspace/tree_walk.h"

namespace stockade::workspace {
namespace {

using platform::RenameMode;
using platform::SysError;

constexpr std::size_t kFeedChunk = 256 << 10;
constexpr std::size_t kEndMarker = 1024;              // two zero blocks
constexpr std::uint64_t kMaxTrailingBytes = 1 << 20;  // zero padding allowed after them

// libarchive decodes pax names (UTF-8) into the current locale's charset;
// under "C" every non-ASCII name would fail. The import runs in C.UTF-8, on
// this thread only, so names arrive as the bytes they are.
class Utf8Locale {
 public:
  Utf8Locale() {
    locale_ = ::newlocale(LC_ALL_MASK, "C.UTF-8", static_cast<locale_t>(0));
    if (locale_) previous_ = ::uselocale(locale_);
  }
  ~Utf8Locale() {
    if (locale_) {
      ::uselocale(previous_);
      ::freelocale(locale_);
    }
  }
  Utf8Locale(const Utf8Locale&) = delete;
  Utf8Locale& operator=(const Utf8Locale&) = delete;

 private:
  locale_t locale_ = static_cast<locale_t>(0);
  locale_t previous_ = static_cast<locale_t>(0);
};

// The archive bytes as libarchive pulls them: whole chunks from the source,
// alternating between two buffers so the last two stay readable (the end
// marker is checked in them).
struct Feed {
  explicit Feed(ByteSource& s) : source(s) {
    for (auto& b : buffers) b.resize(kFeedChunk);
  }
  ByteSource& source;
  std::array<std::vector<char>, 2> buffers;
  int current = 1;
  std::size_t lastLen = 0, prevLen = 0;
  std::uint64_t delivered = 0;
  bool ended = false;
  std::optional<WorkspaceError> error;

  // Fills `buf` as far as the source goes; nullopt after a source error.
  std::optional<std::size_t> fill(std::span<char> buf) {
    std::size_t n = 0;
    while (n < buf.size() && !ended) {
      auto r = source.read(buf.subspan(n));
      if (auto* e = std::get_if<WorkspaceError>(&r)) {
        error = std::move(*e);
        return std::nullopt;
      }
      std::size_t got = std::get<std::size_t>(r);
      if (got == 0) ended = true;
      n += got;
    }
    return n;
  }

  static la_ssize_t read(struct archive* a, void* client, const void** out) {
    auto* f = static_cast<Feed*>(client);
    f->current ^= 1;
    auto& buf = f->buffers[f->current];
    auto n = f->fill(buf);
    if (!n) {
      archive_set_error(a, EIO, "the archive's source failed");
      return -1;
    }
    f->prevLen = f->lastLen;
    f->lastLen = *n;
    f->delivered += *n;
    *out = buf.data();
    return static_cast<la_ssize_t>(*n);
  }

  // The byte at stream offset `at`, if it is still in one of the buffers.
  std::optional<char> byteAt(std::uint64_t at) const {
    std::uint64_t lastStart = delivered - lastLen;
    if (at >= delivered) return std::nullopt;
    if (at >= lastStart) return buffers[current][static_cast<std::size_t>(at - lastStart)];
    std::uint64_t prevStart = lastStart - prevLen;
    if (at >= prevStart) return buffers[current ^ 1][static_cast<std::size_t>(at - prevStart)];
    return std::nullopt;
  }
};

Refusal malformed(const std::string& entry, const std::string& why) {
  return Refusal{ImportRefusal::kMalformed, entry,
                 (entry.empty() ? std::string("the archive") : "entry " + quoteValue(entry)) + ": " + why};
}

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

ArchiveEntry describe(struct archive_entry* e) {
  ArchiveEntry out;
  out.name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
  out.size = archive_entry_size_is_set(e) && archive_entry_size(e) > 0 ? static_cast<std::uint64_t>(archive_entry_size(e)) : 0;
  out.mode = static_cast<std::uint32_t>(archive_entry_perm(e));
  out.mtime = archive_entry_mtime(e);
  if (const char* hard = archive_entry_hardlink(e)) {
    out.type = ArchiveEntryType::kHardLink;
    out.linkName = hard;
    return out;
  }
  switch (archive_entry_filetype(e)) {
    case AE_IFREG: out.type = ArchiveEntryType::kFile; break;
    case AE_IFDIR: out.type = ArchiveEntryType::kDirectory; break;
    case AE_IFLNK:
      out.type = ArchiveEntryType::kSymlink;
      out.linkName = archive_entry_symlink(e) ? archive_entry_symlink(e) : "";
      break;
    case AE_IFCHR: out.type = ArchiveEntryType::kCharDevice; break;
    case AE_IFBLK: out.type = ArchiveEntryType::kBlockDevice; break;
    case AE_IFIFO: out.type = ArchiveEntryType::kFifo; break;
    case AE_IFSOCK: out.type = ArchiveEntryType::kSocket; break;
    default: out.type = ArchiveEntryType::kUnknown; break;
  }
  return out;
}

// The directory a staged archive is extracted into, removed with whatever is
// left in it (the replaced originals after a merge) when it goes.
class Staging {
 public:
  static WorkspaceResult<std::unique_ptr<Staging>> create(const Workspace::Impl& ws) {
    auto s = std::make_unique<Staging>();
    // The workspace's parent, when it is on the same mount: out of the sandbox's sight.
    int parent = ::openat(ws.root.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent >= 0) {
      platform::UniqueFd p(parent);
      auto a = platform::mountId(parent), b = platform::mountId(ws.root.get());
      if (std::holds_alternative<std::uint64_t>(a) && std::holds_alternative<std::uint64_t>(b) &&
          std::get<std::uint64_t>(a) == std::get<std::uint64_t>(b) && s->make(std::move(p)))
        return s;
    }
    int root = ::fcntl(ws.root.get(), F_DUPFD_CLOEXEC, 0);
    if (root < 0) return ioError("fcntl(F_DUPFD_CLOEXEC)", errno, "import staging");
    if (!s->make(platform::UniqueFd(root)))
      return ioError(SysError{"mkdirat(workspace, " + quoteValue(s->name_) + ", 0700)", s->error_}, "import staging");
    return s;
  }
  ~Staging() {
    if (dir_) removeTree(parent_.get(), name_);
  }
  int fd() const noexcept { return dir_.get(); }
  int parentFd() const noexcept { return parent_.get(); }
  const std::string& name() const noexcept { return name_; }

 private:
  // Made and held (flock) for as long as the import runs: a process killed
  // meanwhile releases it, and the next sweep there removes what it left.
  bool make(platform::UniqueFd parent) {
    sweepStaleStaging(parent.get());
    for (int attempt = 0; attempt < 4; ++attempt) {
      name_ = temporaryName(kStagingPrefix);
      if (::mkdirat(parent.get(), name_.c_str(), 0700) != 0) {
        error_ = errno;
        return false;
      }
      platform::UniqueFd fd(::openat(parent.get(), name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) {
        error_ = errno;
        ::unlinkat(parent.get(), name_.c_str(), AT_REMOVEDIR);
        return false;
      }
      // A sweep that took it for a dead importer's between mkdirat and here
      // holds it, or has removed it: another name.
      struct stat mine {}, named {};
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 || ::fstat(fd.get(), &mine) != 0 ||
          ::fstatat(parent.get(), name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || mine.st_ino != named.st_ino ||
          mine.st_dev != named.st_dev)
        continue;
      parent_ = std::move(parent);
      dir_ = std::move(fd);
      return true;
    }
    error_ = EAGAIN;
    return false;
  }
  platform::UniqueFd parent_, dir_;
  std::string name_;
  int error_ = 0;
};

struct DirMeta {
  std::uint32_t mode = 0755;
  std::optional<std::int64_t> mtime;
};

// Extracts admitted entries beneath the staging directory.
class Extractor {
 public:
  Extractor(int stageFd, Deadline deadline) : stage_(stageFd), deadline_(deadline) {}

  std::map<std::string, DirMeta> dirs;  // explicit directories and their final metadata

  // nullopt on success; a refusal (malformed data) or an error.
  std::variant<std::monostate, Refusal, WorkspaceError> create(struct archive* a, const PlannedEntry& p,
                                                               const std::string& entryName) {
    auto parent = parentOf(p.rel);
    if (auto* e = std::get_if<WorkspaceError>(&parent)) return std::move(*e);
    int dir = std::get<int>(parent);
    std::string leaf = p.rel.substr(p.rel.rfind('/') == std::string::npos ? 0 : p.rel.rfind('/') + 1);
    if (p.replaces && ::unlinkat(dir, leaf.c_str(), 0) != 0 && errno != ENOENT)
      return fail("unlinkat", p.rel);
    switch (p.type) {
      case ArchiveEntryType::kDirectory: {
        if (::mkdirat(dir, leaf.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdirat", p.rel);
        dirs[p.rel] = DirMeta{p.mode, p.mtime};
        return std::monostate{};
      }
      case ArchiveEntryType::kSymlink:
        if (::symlinkat(p.target.c_str(), dir, leaf.c_str()) != 0) return fail("symlinkat", p.rel);
        return std::monostate{};
      case ArchiveEntryType::kHardLink: {
        auto tparent = parentOf(p.target);
        if (auto* e = std::get_if<WorkspaceError>(&tparent)) return std::move(*e);
        std::string tleaf = p.target.substr(p.target.rfind('/') == std::string::npos ? 0 : p.target.rfind('/') + 1);
        // parentOf() may have replaced the cached fd: resolve the entry's own parent again.
        platform::UniqueFd tdir(::fcntl(std::get<int>(tparent), F_DUPFD_CLOEXEC, 0));
        auto again = parentOf(p.rel);
        if (auto* e = std::get_if<WorkspaceError>(&again)) return std::move(*e);
        if (::linkat(tdir.get(), tleaf.c_str(), std::get<int>(again), leaf.c_str(), 0) != 0)
          return fail("linkat", p.rel);
        return std::monostate{};
      }
      case ArchiveEntryType::kFile: return writeFile(a, dir, leaf, p, entryName);
      default: return fail("(entry type)", p.rel);
    }
  }

 private:
  std::variant<std::monostate, Refusal, WorkspaceError> writeFile(struct archive* a, int dir, const std::string& leaf,
                                                                  const PlannedEntry& p, const std::string& entryName) {
    int fd = ::openat(dir, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return fail("openat(O_CREAT|O_EXCL)", p.rel);
    platform::UniqueFd file(fd);
    std::uint64_t end = 0;
    for (;;) {
      const void* buf = nullptr;
      std::size_t len = 0;
      la_int64_t offset = 0;
      int r = archive_read_data_block(a, &buf, &len, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r != ARCHIVE_OK) return malformed(entryName, archive_error_string(a) ? archive_error_string(a) : "bad data");
      if (offset < 0 || static_cast<std::uint64_t>(offset) + len > p.size)
        return malformed(entryName, "data beyond the entry's size");
      const char* bytes = static_cast<const char*>(buf);
      std::uint64_t at = static_cast<std::uint64_t>(offset);
      while (len > 0) {
        ssize_t n = ::pwrite(fd, bytes, len, static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("pwrite", p.rel);
        bytes += n;
        len -= static_cast<std::size_t>(n);
        at += static_cast<std::uint64_t>(n);
      }
      end = std::max(end, at);
      if (std::chrono::steady_clock::now() > deadline_)
        return makeError(WorkspaceErrorCode::kTimeout, "the import timed out while extracting " + quoteValue(entryName));
    }
    if (end < p.size && ::ftruncate(fd, static_cast<off_t>(p.size)) != 0) return fail("ftruncate", p.rel);
    if (::fchmod(fd, p.mode) != 0) return fail("fchmod", p.rel);
    struct timespec times[2] = {{p.mtime, 0}, {p.mtime, 0}};
    if (::futimens(fd, times) != 0) return fail("futimens", p.rel);
    return std::monostate{};
  }

  // The staged directory holding `rel` (created, 0700, as needed), as an fd
  // cached for the entries of one directory.
  std::variant<int, WorkspaceError> parentOf(const std::string& rel) {
    auto slash = rel.rfind('/');
    std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
    if (cached_ && cachedRel_ == parent) return cached_.get();
    std::string at;
    platform::UniqueFd fd(::fcntl(stage_, F_DUPFD_CLOEXEC, 0));
    std::string_view rest = parent;
    while (!rest.empty()) {
      auto s = rest.find('/');
      std::string name(rest.substr(0, s));
      rest = s == std::string_view::npos ? std::string_view() : rest.substr(s + 1);
      at = joinRel(at, name);
      if (::mkdirat(fd.get(), name.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdirat", at);
      int next = ::openat(fd.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0) return fail("openat(O_DIRECTORY|O_NOFOLLOW)", at);
      fd.reset(next);
    }
    cached_ = std::move(fd);
    cachedRel_ = parent;
    return cached_.get();
  }

  WorkspaceError fail(const char* call, const std::string& rel) {
    return ioError(SysError{std::string(call) + "(staged " + quoteValue(rel) + ")", errno}, "import");
  }

  int stage_;
  Deadline deadline_;
  platform::UniqueFd cached_;
  std::string cachedRel_;
};

// The journal of a merge: undone in reverse on failure.
struct Journal {
  enum class Kind { kMovedIn, kExchanged };
  struct Step {
    Kind kind;
    std::shared_ptr<platform::UniqueFd> stageDir, destDir;
    std::string name;
  };
  std::vector<Step> steps;
  std::vector<std::string> movedInDirectories;  // rel paths

  void rollback() {
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (it->kind == Kind::kMovedIn)
        (void)platform::renameAt(it->destDir->get(), it->name, it->stageDir->get(), it->name, RenameMode::kNoReplace);
      else
        (void)platform::renameAt(it->destDir->get(), it->name, it->stageDir->get(), it->name, RenameMode::kExchange);
    }
    steps.clear();
  }
};

std::variant<std::vector<std::string>, SysError> namesIn(int dirFd) {
  int fd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError{"openat(staged directory)", errno};
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return SysError{"fdopendir(staged directory)", errno};
  }
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

// Moves the staged tree in `stage` into `dest`, recursively.
WorkspaceStatus merge(std::shared_ptr<platform::UniqueFd> stage, std::shared_ptr<platform::UniqueFd> dest,
                      const std::string& rel, const std::string& destText, Journal& journal) {
  auto names = namesIn(stage->get());
  if (auto* e = std::get_if<SysError>(&names)) return ioError(*e, "import");
  for (const auto& name : std::get<std::vector<std::string>>(names)) {
    const std::string childRel = joinRel(rel, name);
    struct stat sst {};
    if (::fstatat(stage->get(), name.c_str(), &sst, AT_SYMLINK_NOFOLLOW) != 0)
      return ioError("fstatat(staged)", errno, "import");
    for (int attempt = 0;; ++attempt) {
      struct stat dst {};
      if (::fstatat(dest->get(), name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) return ioError("fstatat", errno, "import into " + quoteValue(destText));
        auto r = platform::renameAt(stage->get(), name, dest->get(), name, RenameMode::kNoReplace);
        if (auto* e = std::get_if<SysError>(&r)) {
          if (e->error == EEXIST && attempt < 3) continue;  // the sandbox made one meanwhile: decide again
          return ioError(*e, "import into " + quoteValue(destText));
        }
        journal.steps.push_back({Journal::Kind::kMovedIn, stage, dest, name});
        if (S_ISDIR(sst.st_mode)) journal.movedInDirectories.push_back(childRel);
        break;
      }
      if (S_ISDIR(sst.st_mode) && S_ISDIR(dst.st_mode)) {
        int s = ::openat(stage->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s < 0) return ioError("openat(staged)", errno, "import");
        auto stageChild = std::make_shared<platform::UniqueFd>(s);
        int d = ::openat(dest->get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0) {
          if ((errno == ENOENT || errno == ENOTDIR || errno == ELOOP) && attempt < 3) continue;  // raced
          return ioError("openat", errno, "import into " + quoteValue(destText));
        }
        auto destChild = std::make_shared<platform::UniqueFd>(d);
        if (auto e = merge(stageChild, destChild, childRel, destText, journal)) return e;
        break;
      }
      if (S_ISDIR(dst.st_mode)) {
        Refusal r{ImportRefusal::kConflictingEntry, childRel,
                  "entry " + quoteValue(childRel) + ": the destination has a directory there; an archive replaces "
                                                   "files, never directories"};
        return toError(r);
      }
      auto r = platform::renameAt(stage->get(), name, dest->get(), name, RenameMode::kExchange);
      if (auto* e = std::get_if<SysError>(&r)) {
        if (e->error == ENOENT && attempt < 3) continue;  // the file went meanwhile: decide again
        return ioError(*e, "import into " + quoteValue(destText));
      }
      journal.steps.push_back({Journal::Kind::kExchanged, stage, dest, name});
      if (S_ISDIR(sst.st_mode)) journal.movedInDirectories.push_back(childRel);
      break;
    }
  }
  return std::nullopt;
}

bool beneathAny(const std::string& rel, const std::vector<std::string>& roots) {
  for (const auto& r : roots)
    if (rel == r || (rel.size() > r.size() && rel.compare(0, r.size(), r) == 0 && rel[r.size()] == '/')) return true;
  return false;
}

// Final modes and times of directories, deepest first, through the
// destination (no symlink followed).
void applyDirectoryModes(int destFd, std::vector<std::pair<std::string, DirMeta>> dirs) {
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) {
    return std::count(a.first.begin(), a.first.end(), '/') > std::count(b.first.begin(), b.first.end(), '/');
  });
  for (const auto& [rel, meta] : dirs) {
    auto fd = platform::openBeneath(destFd, "destination", rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
                                    platform::Symlinks::kRefuse);
    if (!std::holds_alternative<platform::UniqueFd>(fd)) continue;  // the sandbox moved it meanwhile
    int f = std::get<platform::UniqueFd>(fd).get();
    ::fchmod(f, meta.mode);
    if (meta.mtime) {
      struct timespec times[2] = {{*meta.mtime, 0}, {*meta.mtime, 0}};
      ::futimens(f, times);
    }
  }
}

// The real host path `path` would have: its longest existing prefix's real
// path, then the rest as written.
WorkspaceResult<std::string> realPathFor(const Workspace::Impl& ws, const SandboxPath& path) {
  std::string rest;
  SandboxPath at = path;
  for (;;) {
    auto r = resolve(ws, at, O_DIRECTORY, WorkspaceErrorCode::kNotDirectory);
    if (auto* ok = std::get_if<Resolved>(&r)) return ok->real + (rest.empty() ? "" : "/" + rest);
    auto& e = std::get<WorkspaceError>(r);
    if (e.code != WorkspaceErrorCode::kNotFound || at.isRoot()) return std::move(e);
    rest = rest.empty() ? std::string(at.leaf()) : std::string(at.leaf()) + "/" + rest;
    at = SandboxPath{std::string(at.parent())};
  }
}

}  // namespace

WorkspaceStatus importTreeAt(const Workspace::Impl& ws, ByteSource& tar, const SandboxPath& dest,
                             const ImportPlan& plan) {
  if (auto e = fence(ws)) return e;
  if (plan.placement == Placement::kReplace && dest.isRoot())
    return makeError(WorkspaceErrorCode::kInvalidPath, "path \"/workspace\": the workspace itself cannot be replaced; "
                                                       "name a directory in it");
  AccessRules rules = accessRules(ws);
  const std::string destText = dest.text();

  // The destination: an existing directory, or nothing yet. One to be
  // replaced whole is the object at the name itself (a symlink there is not
  // a directory to replace).
  std::optional<Resolved> existing;
  {
    auto r = resolve(ws, dest, plan.placement == Placement::kReplace ? O_NOFOLLOW : 0, WorkspaceErrorCode::kNotDirectory);
    if (auto* ok = std::get_if<Resolved>(&r)) {
      if (!S_ISDIR(ok->st.st_mode))
        return makeError(WorkspaceErrorCode::kNotDirectory,
                         "path " + quoteValue(destText) + " is not a directory; import into a directory");
      existing = std::move(*ok);
    } else if (std::get<WorkspaceError>(r).code != WorkspaceErrorCode::kNotFound) {
      return std::move(std::get<WorkspaceError>(r));
    }
  }
  std::string destReal;
  if (existing) {
    destReal = existing->real;
  } else {
    auto real = realPathFor(ws, dest);
    if (auto* e = std::get_if<WorkspaceError>(&real)) return std::move(*e);
    destReal = std::get<std::string>(std::move(real));
  }
  if (existing)
    if (auto rule = rules.readRefusal(destReal))
      return makeError(WorkspaceErrorCode::kPermissionDenied,
                       "path " + quoteValue(destText) + ": the sandbox's policy does not let it be read (" + *rule + ")");

  auto staging = Staging::create(ws);
  if (auto* e = std::get_if<WorkspaceError>(&staging)) return std::move(*e);
  Staging& stage = *std::get<std::unique_ptr<Staging>>(staging);
  // What is extracted lands in a subdirectory of the staging directory: the
  // tree that kReplace swaps in, or whose names kMerge moves.
  if (::mkdirat(stage.fd(), "tree", 0700) != 0) return ioError("mkdirat(staging, \"tree\")", errno, "import");
  auto treeFd = std::make_shared<platform::UniqueFd>(
      ::openat(stage.fd(), "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!*treeFd) return ioError("openat(staging, \"tree\")", errno, "import");

  ImportChecker checker(ws.options.importLimits, plan.symlinks,
                        [&](const std::string& rel, ObjectKind kind) -> std::optional<std::string> {
                          return rules.writeRefusal(destReal + "/" + rel, WriteOp::kCreate, kind);
                        });
  Extractor extractor(treeFd->get(), plan.deadline);

  // Parse and extract, entry by entry.
  {
    Utf8Locale utf8;
    std::unique_ptr<struct archive, ArchiveDeleter> a(archive_read_new());
    if (!a) return makeError(WorkspaceErrorCode::kUnavailable, "archive_read_new() failed");
    archive_read_support_format_tar(a.get());
    archive_read_support_filter_none(a.get());
    Feed feed(tar);
    if (archive_read_open(a.get(), &feed, nullptr, &Feed::read, nullptr) != ARCHIVE_OK) {
      if (feed.error) return std::move(*feed.error);
      if (feed.delivered == 0)
        return toError(malformed("", "the body is empty; an empty archive is two zero blocks"));
      return toError(malformed("", std::string("not a tar archive (") +
                                       (archive_error_string(a.get()) ? archive_error_string(a.get()) : "?") + ")"));
    }
    std::string last;
    for (;;) {
      if (std::chrono::steady_clock::now() > plan.deadline)
        return makeError(WorkspaceErrorCode::kTimeout, "the import of " + quoteValue(destText) + " timed out");
      struct archive_entry* e = nullptr;
      int r = archive_read_next_header(a.get(), &e);
      if (r == ARCHIVE_EOF) break;
      if (feed.error) return std::move(*feed.error);
      if (r != ARCHIVE_OK) {
        std::string why = archive_error_string(a.get()) ? archive_error_string(a.get()) : "a bad header";
        std::string name = e && r == ARCHIVE_WARN && archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
        if (name.empty())
          return toError(malformed("", why + (last.empty() ? " (at the first header)"
                                                           : " (in the header after entry " + quoteValue(last) + ")")));
        return toError(malformed(name, why));
      }
      ArchiveEntry entry = describe(e);
      if (!archive_entry_pathname(e)) return toError(malformed("", "an entry whose name cannot be read"));
      last = entry.name;
      auto admitted = checker.admit(entry);
      if (auto* refusal = std::get_if<Refusal>(&admitted)) return toError(*refusal);
      const PlannedEntry& planned = std::get<PlannedEntry>(admitted);
      if (planned.rel.empty()) {
        if (archive_read_data_skip(a.get()) != ARCHIVE_OK) return toError(malformed(entry.name, "bad data"));
        continue;
      }
      auto made = extractor.create(a.get(), planned, entry.name);
      if (auto* refusal = std::get_if<Refusal>(&made)) return feed.error ? std::move(*feed.error) : toError(*refusal);
      if (auto* err = std::get_if<WorkspaceError>(&made)) return std::move(*err);
    }
    // The end: two zero blocks where libarchive stopped, then only zeros.
    std::uint64_t consumed = static_cast<std::uint64_t>(archive_filter_bytes(a.get(), -1));
    if (consumed < kEndMarker) return toError(malformed("", "no end-of-archive marker (two zero blocks)"));
    for (std::uint64_t at = consumed - kEndMarker; at < feed.delivered; ++at) {
      auto byte = feed.byteAt(at);
      if (!byte || *byte != 0) {
        bool inMarker = at < consumed;
        return toError(malformed("", inMarker ? "truncated: it ends without its end-of-archive marker (two zero "
                                                "blocks), after entry " + quoteValue(last)
                                              : "data after the end-of-archive marker"));
      }
    }
    std::uint64_t trailing = feed.delivered - consumed;
    std::array<char, 8192> rest{};
    while (!feed.ended) {
      auto n = feed.fill(rest);
      if (!n) return std::move(*feed.error);
      trailing += *n;
      if (trailing > kMaxTrailingBytes || std::any_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(*n),
                                                      [](char c) { return c != 0; }))
        return toError(malformed("", "data after the end-of-archive marker"));
    }
  }

  if (plan.beforePlacement)
    if (auto e = plan.beforePlacement()) return e;
  if (std::chrono::steady_clock::now() > plan.deadline)
    return makeError(WorkspaceErrorCode::kTimeout, "the import of " + quoteValue(destText) + " timed out");

  // Place it.
  std::vector<std::pair<std::string, DirMeta>> modes(extractor.dirs.begin(), extractor.dirs.end());
  std::vector<std::string> newDirectories;  // roots of what was moved in whole
  if (!existing || plan.placement == Placement::kReplace) {
    // The destination's parent exists from here on (it may be created now: the archive passed).
    SandboxPath parentPath{std::string(dest.parent())};
    auto parent = ensureDirectory(ws, rules, parentPath);
    if (auto* e = std::get_if<WorkspaceError>(&parent)) return std::move(*e);
    int parentFd = std::get<Resolved>(parent).fd.get();
    std::string leaf(dest.leaf());
    if (existing) {
      // kReplace: what goes must be removable by the sandbox, as remove() asks.
      int old = ::openat(parentFd, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (old < 0) return ioError("openat", errno, "restore of " + quoteValue(destText));
      TreeWalker walk(platform::UniqueFd(old), false);
      for (;;) {
        auto item = walk.next();
        if (auto* e = std::get_if<SysError>(&item)) return ioError(*e, "restore of " + quoteValue(destText));
        auto& it = std::get<std::optional<TreeWalker::Item>>(item);
        if (!it) break;
        std::string real = destReal + "/" + it->rel;
        auto rule = rules.writeRefusal(real, WriteOp::kRemove,
                                       S_ISDIR(it->st.st_mode) ? ObjectKind::kDirectory : ObjectKind::kOther);
        if (!rule) rule = rules.readRefusal(real);
        if (rule)
          return makeError(WorkspaceErrorCode::kPermissionDenied,
                           "path " + quoteValue(destText + "/" + it->rel) +
                               ": replacing the directory would remove it, and the sandbox's policy does not let it "
                               "be removed (" + *rule + ")");
      }
      struct stat oldSt {};
      if (::fstatat(parentFd, leaf.c_str(), &oldSt, AT_SYMLINK_NOFOLLOW) == 0) ::fchmod(treeFd->get(), oldSt.st_mode & 0777);
      auto x = platform::renameAt(stage.fd(), "tree", parentFd, leaf, platform::RenameMode::kExchange);
      if (auto* e = std::get_if<SysError>(&x)) return ioError(*e, "restore of " + quoteValue(destText));
    } else {
      ::fchmod(treeFd->get(), 0755);
      auto x = platform::renameAt(stage.fd(), "tree", parentFd, leaf, platform::RenameMode::kNoReplace);
      if (auto* e = std::get_if<SysError>(&x)) return ioError(*e, "import into " + quoteValue(destText));
    }
    newDirectories.push_back("");  // everything is new
  } else {
    auto destFd = std::make_shared<platform::UniqueFd>(std::move(existing->fd));
    Journal journal;
    if (auto e = merge(treeFd, destFd, "", destText, journal)) {
      journal.rollback();
      return e;
    }
    newDirectories = std::move(journal.movedInDirectories);
  }

  // Directory modes: the archive's for its directories, 0755 for the new
  // directories it implied (they were 0700 while staged).
  for (const auto& rel : checker.implicitDirectories())
    if (!extractor.dirs.count(rel) && (newDirectories == std::vector<std::string>{""} || beneathAny(rel, newDirectories)))
      modes.push_back({rel, DirMeta{0755, std::nullopt}});
  auto destNow = resolve(ws, dest, O_DIRECTORY);
  if (auto* d = std::get_if<Resolved>(&destNow)) applyDirectoryModes(d->fd.get(), std::move(modes));
  return std::nullopt;
}

}  // namespace stockade::workspace

namespace stockade {

WorkspaceStatus Workspace::importTree(ByteSource& tar, std::string_view pathText) {
  if (auto e = workspace::fence(*impl_)) return e;
  auto parsed = workspace::parseSandboxPath(pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  return workspace::importTreeAt(*impl_, tar, std::get<workspace::SandboxPath>(parsed), {});
}

}  // namespace stockade
