// Persist/restore (seed 002). A checkpoint is a directory of the state dir:
//   current.json   {scope, path, size, sha256, etag, persistedAt, archive}
//   <archive>      the tar the record names
//   lock           flock()ed for the length of a persist or restore
// A persist writes a new archive beside the current one and then replaces
// current.json durably, so a crash leaves either the old checkpoint or the
// new one, never a mix; the archive the old record named is removed after.
#include "stockade/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "src/audit/event.h"
#include "src/workspace/archive_file.h"
#include "src/workspace/tree_import.h"

namespace stockade {

using namespace workspace;
using platform::SysError;

namespace {

constexpr std::array<std::string_view, 15> kDefaultExcludes = {
    "node_modules", ".next",        ".git",        "dist", "build", "out",  "coverage", ".cache",
    ".turbo",       ".vite",        ".parcel-cache", "__pycache__", ".venv", "venv", ".edgeone"};

WorkspaceError failed(const std::string& what, const WorkspaceError& cause) {
  return makeError(WorkspaceErrorCode::kFailedOperation, what + ": " + cause.message);
}

// "/workspace/app" or "app": a directory beneath the workspace, never the root.
WorkspaceResult<SandboxPath> projectPath(std::string_view text) {
  std::string absolute = text.starts_with("/") ? std::string(text) : "/workspace/" + std::string(text);
  auto parsed = parseSandboxPath(absolute, "path");
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  auto& p = std::get<SandboxPath>(parsed);
  if (p.isRoot())
    return makeError(WorkspaceErrorCode::kInvalidPath, "path: " + quoteValue(text) +
                                                           " is the workspace root; name a project directory in it, "
                                                           "such as \"/workspace/app\"");
  return std::move(p);
}

void checkTimeout(std::chrono::seconds timeout) {
  if (timeout.count() <= 0)
    throw std::invalid_argument("timeout: " + std::to_string(timeout.count()) +
                                " is not a positive number of seconds; give one such as 180");
}

// One persist or restore at a time per workspace (this process), and per
// checkpoint (any process: flock).
class Exclusive {
 public:
  static WorkspaceResult<std::unique_ptr<Exclusive>> take(Workspace::Impl& ws, const std::string& dir) {
    auto x = std::make_unique<Exclusive>();
    if (ws.checkpointBusy.exchange(true))
      return makeError(WorkspaceErrorCode::kConflict,
                       "a persist or restore is already running for this sandbox; wait for it to finish");
    x->busy_ = &ws.checkpointBusy;
    if (auto e = makeStateDirectory(dir)) return ioError(*e, "checkpoint");
    int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return ioError("open(checkpoint lock)", errno, "checkpoint");
    x->lock_.reset(fd);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
      return makeError(WorkspaceErrorCode::kConflict,
                       errno == EWOULDBLOCK ? "another persist or restore of this checkpoint is running (in another "
                                              "process); wait for it to finish"
                                            : "flock(checkpoint lock) failed: " + platform::errnoName(errno));
    return x;
  }
  ~Exclusive() {
    if (busy_) *busy_ = false;
  }

 private:
  std::atomic<bool>* busy_ = nullptr;
  platform::UniqueFd lock_;
};

struct Record {
  Checkpoint checkpoint;
  std::string archive;
};

// current.json; nullopt when there is none; kDataCorrupted when unreadable.
WorkspaceResult<std::optional<Record>> readRecord(const std::string& dir) {
  auto text = readSmallFile(dir + "/current.json");
  if (!text) {
    if (errno == ENOENT) return std::optional<Record>();
    return makeError(WorkspaceErrorCode::kDataCorrupted,
                     "the checkpoint's record cannot be read: " + platform::errnoName(errno));
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  auto bad = [] {
    return makeError(WorkspaceErrorCode::kDataCorrupted, "the checkpoint's record (current.json) is not valid");
  };
  if (!j.is_object()) return bad();
  Record r;
  try {
    r.checkpoint.size = j.at("size").get<std::uint64_t>();
    r.checkpoint.sha256 = j.at("sha256").get<std::string>();
    r.checkpoint.etag = j.at("etag").get<std::string>();
    r.checkpoint.persistedAt = j.at("persistedAt").get<std::string>();
    r.archive = j.at("archive").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return bad();
  }
  if (r.archive.empty() || r.archive.find('/') != std::string::npos || r.archive.front() == '.') return bad();
  return std::optional<Record>(std::move(r));
}

}  // namespace

std::span<const std::string_view> defaultPersistExcludes() noexcept { return kDefaultExcludes; }

struct CheckpointStore::Impl {
  Options options;
  std::string root;  // <stateDir>/checkpoints
};

WorkspaceResult<CheckpointStore> CheckpointStore::open(Options options) {
  if (options.stateDir.empty() || options.stateDir.front() != '/')
    throw std::invalid_argument("CheckpointStore::Options.stateDir: " + quoteValue(options.stateDir) +
                                " is not an absolute path");
  auto impl = std::make_shared<Impl>();
  impl->root = options.stateDir + "/checkpoints";
  if (auto e = makeStateDirectory(impl->root)) return ioError(*e, "checkpoint store");
  impl->options = std::move(options);
  return CheckpointStore(std::move(impl));
}

std::string CheckpointStore::checkpointDir(std::string_view scope, std::string_view path) const {
  auto p = projectPath(path);
  std::string rel = std::holds_alternative<SandboxPath>(p) ? std::get<SandboxPath>(p).rel : std::string(path);
  return impl_->root + "/" + sha256Hex(scope).substr(0, 32) + "/" + sha256Hex(rel).substr(0, 32);
}

WorkspaceResult<Checkpoint> CheckpointStore::persist(Workspace& workspace, std::string_view scope,
                                                     const PersistOptions& options) {
  checkTimeout(options.timeout);
  ExportOptions exportOptions;
  exportOptions.excludeDirectoryNames.assign(kDefaultExcludes.begin(), kDefaultExcludes.end());
  for (std::size_t i = 0; i < options.exclude.size(); ++i) {
    const std::string& name = options.exclude[i];
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos)
      throw std::invalid_argument("exclude[" + std::to_string(i) + "]: " + quoteValue(name) +
                                  " is not a directory name; give a name such as \"tmp\" (it is left out at any depth)");
    exportOptions.excludeDirectoryNames.push_back(name);
  }
  const Deadline deadline = std::chrono::steady_clock::now() + options.timeout;
  Workspace::Impl& ws = WorkspaceInternals::impl(workspace);
  if (auto e = fence(ws)) return std::move(*e);
  auto path = projectPath(options.path);
  if (auto* e = std::get_if<WorkspaceError>(&path)) return std::move(*e);
  const SandboxPath& project = std::get<SandboxPath>(path);
  const std::string dir = checkpointDir(scope, project.text());
  auto exclusive = Exclusive::take(ws, dir);
  if (auto* e = std::get_if<WorkspaceError>(&exclusive)) return std::move(*e);
  auto previous = readRecord(dir);

  const std::string name = temporaryName("archive-") + ".tar";
  auto stored = captureArchive(ws, project, exportOptions, dir, name, impl_->options.maxArchiveBytes, deadline);
  if (auto* e = std::get_if<WorkspaceError>(&stored)) {
    switch (e->code) {
      case WorkspaceErrorCode::kLimitExceeded:
      case WorkspaceErrorCode::kInvalidPath:
      case WorkspaceErrorCode::kNotFound:
      case WorkspaceErrorCode::kNotDirectory:
      case WorkspaceErrorCode::kPermissionDenied:
      case WorkspaceErrorCode::kStaleEpoch: return std::move(*e);
      case WorkspaceErrorCode::kTimeout:
        return failed("persist of " + quoteValue(project.text()) + " timed out after " +
                          std::to_string(options.timeout.count()) + " s",
                      *e);
      default: return failed("persist of " + quoteValue(project.text()), *e);
    }
  }
  StoredArchive& archive = std::get<StoredArchive>(stored);
  Checkpoint cp{.size = archive.size,
                .sha256 = archive.sha256,
                .etag = archive.sha256.substr(0, 32),
                .persistedAt = audit::timestamp(std::chrono::system_clock::now())};
  nlohmann::json record = {{"scope", std::string(scope)}, {"path", project.text()}, {"size", cp.size},
                           {"sha256", cp.sha256},         {"etag", cp.etag},       {"persistedAt", cp.persistedAt},
                           {"archive", name}};
  if (auto e = writeDurably(dir, "current.json", record.dump())) {
    ::unlink(archive.path.c_str());
    return failed("persist of " + quoteValue(project.text()), ioError(*e, "checkpoint record"));
  }
  if (auto* old = std::get_if<std::optional<Record>>(&previous); old && *old && (*old)->archive != name)
    ::unlink((dir + "/" + (*old)->archive).c_str());
  return cp;
}

WorkspaceResult<RestoreResult> CheckpointStore::restore(Workspace& workspace, std::string_view scope,
                                                        const RestoreOptions& options) {
  checkTimeout(options.timeout);
  const Deadline deadline = std::chrono::steady_clock::now() + options.timeout;
  Workspace::Impl& ws = WorkspaceInternals::impl(workspace);
  if (auto e = fence(ws)) return std::move(*e);
  auto path = projectPath(options.path);
  if (auto* e = std::get_if<WorkspaceError>(&path)) return std::move(*e);
  const SandboxPath& target = std::get<SandboxPath>(path);
  const std::string dir = checkpointDir(scope, target.text());
  struct stat st {};
  if (::stat((dir + "/current.json").c_str(), &st) != 0 && errno == ENOENT)
    return RestoreResult{.restored = false, .reason = "not_found"};
  auto exclusive = Exclusive::take(ws, dir);
  if (auto* e = std::get_if<WorkspaceError>(&exclusive)) return std::move(*e);
  auto read = readRecord(dir);
  if (auto* e = std::get_if<WorkspaceError>(&read)) return std::move(*e);
  auto& record = std::get<std::optional<Record>>(read);
  if (!record) return RestoreResult{.restored = false, .reason = "not_found"};
  const Checkpoint& cp = record->checkpoint;
  const std::string what = "restore of " + quoteValue(target.text());
  auto corrupted = [&](const std::string& why) {
    return makeError(WorkspaceErrorCode::kDataCorrupted,
                     what + ": the checkpoint of " + cp.persistedAt + " " + why + "; the target was not changed");
  };

  int fd = ::open((dir + "/" + record->archive).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return corrupted("has no archive (" + platform::errnoName(errno) + ")");
  platform::UniqueFd file(fd);
  if (::fstat(fd, &st) != 0) return failed(what, ioError("fstat", errno, "checkpoint archive"));
  if (static_cast<std::uint64_t>(st.st_size) != cp.size)
    return corrupted("is " + std::to_string(st.st_size) + " bytes, not the " + std::to_string(cp.size) + " recorded");

  HashingFileSource source(std::move(file));
  std::optional<WorkspaceError> mismatch;
  ImportPlan plan{.symlinks = SymlinkTargets::kAsTheSandboxMadeThem,
                  .placement = Placement::kReplace,
                  .beforePlacement = [&]() -> WorkspaceStatus {
                    if (auto e = source.drain()) return failed(what, *e);
                    std::string sha = source.sha256();
                    if (source.bytes() != cp.size || sha != cp.sha256)
                      mismatch = corrupted("does not match its recorded SHA-256 (" + sha + " read, " + cp.sha256 +
                                           " recorded)");
                    return mismatch;
                  },
                  .deadline = deadline};
  if (auto e = importTreeAt(ws, source, target, plan)) {
    if (mismatch) return std::move(*mismatch);
    if (e->code == WorkspaceErrorCode::kInvalidArchive) {
      // Unreadable as an archive: corrupted, whether or not the hash says so.
      (void)source.drain();
      std::string sha = source.sha256();
      if (sha != cp.sha256) return corrupted("does not match its recorded SHA-256 (" + sha + " read)");
      // Intact, but the sandbox's policy refuses a name in it now.
      if (e->reason == "permission_denied") return makeError(WorkspaceErrorCode::kPermissionDenied, what + ": " + e->message);
      return corrupted("cannot be read back (" + e->message + ")");
    }
    switch (e->code) {
      case WorkspaceErrorCode::kInvalidPath:
      case WorkspaceErrorCode::kNotDirectory:
      case WorkspaceErrorCode::kPermissionDenied:
      case WorkspaceErrorCode::kStaleEpoch: return std::move(*e);
      case WorkspaceErrorCode::kTimeout:
        return failed(what + " timed out after " + std::to_string(options.timeout.count()) + " s", *e);
      default: return failed(what, *e);
    }
  }
  return RestoreResult{.restored = true, .checkpoint = cp};
}

}  // namespace stockade
