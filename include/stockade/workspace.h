// Workspaces (shared/seeds/000_* and 002_*): the files of one sandbox, moved
// in and out by the host through an API as strict as the sandbox itself.
//
// A Workspace is bound to a host directory (the one a sandbox sees at
// /workspace), pinned by an fd when it is opened, and to the sandbox's live
// rules. Paths are absolute paths inside the sandbox: "/workspace" and what
// lies beneath it. Every name is resolved by the kernel beneath the pinned
// directory (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), and every
// operation acts on fds from that resolution, never on a path string again:
// a symlink swapped in between a check and a use cannot make a read or a
// write land outside.
//
// Errors are values with the seeds' codes (WorkspaceError):
//   invalid_path       not an absolute path beneath /workspace: "..", a NUL
//                      byte, another absolute path, an over-long name, or a
//                      symlink anywhere along it that leads out (an absolute
//                      symlink always does: the host does not resolve the
//                      sandbox's "/")
//   not_found          nothing at the path
//   is_directory       a directory where a file is wanted
//   not_directory      a non-directory where a directory is wanted
//   too_large          over the size limit (WorkspaceOptions::maxFileBytes,
//                      and the policy's limits.fileSizeBytes)
//   permission_denied  the sandbox's policy denies it: a read of a denyRead
//                      path, a write of a path outside allowWrite, a
//                      denyWrite path or a protected name (.git/hooks,
//                      .bashrc, ...): the API refuses what the sandbox would
//   invalid_archive    importTree refused the archive; `entry` names the
//                      entry, `reason` says why; the workspace is unchanged
//   stale_epoch        the sandbox is gone (WorkspaceOptions::live)
//   unavailable        a host-side failure (the message names the call and errno)
// Caller bugs (missing rules) throw std::invalid_argument.
//
// Thread-safety: every member function may be called from any thread,
// concurrently with any other; a Workspace is a cheap copyable view. A
// FileReader, FileWriter, Watch or TreeExport is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "stockade/rules.h"

namespace stockade {

enum class WorkspaceErrorCode {
  kInvalidPath,
  kNotFound,
  kIsDirectory,
  kNotDirectory,
  kTooLarge,
  kPermissionDenied,
  kInvalidArchive,
  kStaleEpoch,
  kUnavailable,
  kTimeout,
  kNotQuiescent,
  kLimitExceeded,    // SANDBOX_LIMIT_EXCEEDED (seed 002)
  kConflict,         // SANDBOX_CONFLICT
  kDataCorrupted,    // SANDBOX_DATA_CORRUPTED
  kFailedOperation,  // SANDBOX_FAILED_OPERATION
};
inline constexpr WorkspaceErrorCode kAllWorkspaceErrorCodes[] = {
    WorkspaceErrorCode::kInvalidPath,    WorkspaceErrorCode::kNotFound,        WorkspaceErrorCode::kIsDirectory,
    WorkspaceErrorCode::kNotDirectory,   WorkspaceErrorCode::kTooLarge,        WorkspaceErrorCode::kPermissionDenied,
    WorkspaceErrorCode::kInvalidArchive, WorkspaceErrorCode::kStaleEpoch,      WorkspaceErrorCode::kUnavailable,
    WorkspaceErrorCode::kTimeout,        WorkspaceErrorCode::kNotQuiescent,    WorkspaceErrorCode::kLimitExceeded,
    WorkspaceErrorCode::kConflict,       WorkspaceErrorCode::kDataCorrupted,   WorkspaceErrorCode::kFailedOperation,
};
// The seeds' strings: "invalid_path", "not_found", "is_directory",
// "not_directory", "too_large", "permission_denied", "invalid_archive",
// "stale_epoch", "unavailable", "timeout", "not_quiescent",
// "SANDBOX_LIMIT_EXCEEDED", "SANDBOX_CONFLICT", "SANDBOX_DATA_CORRUPTED",
// "SANDBOX_FAILED_OPERATION".
std::string_view workspaceErrorCodeName(WorkspaceErrorCode code) noexcept;

struct WorkspaceError {
  WorkspaceErrorCode code = WorkspaceErrorCode::kUnavailable;
  std::string message;  // what, where and why; names the path (or entry) and the rule
  std::string entry;    // archive refusals: the entry's name as the archive spells it
  std::string reason;   // archive refusals: "dot_dot", "link_outside", ... (tree_import.h lists them)
  std::string_view codeName() const noexcept { return workspaceErrorCodeName(code); }
};

template <typename T>
using WorkspaceResult = std::variant<T, WorkspaceError>;
// For calls with nothing to return: nullopt on success.
using WorkspaceStatus = std::optional<WorkspaceError>;

// Bytes flowing into the workspace. read() fills up to buf.size() bytes and
// returns how many; 0 at the end. An error aborts the operation.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual WorkspaceResult<std::size_t> read(std::span<char> buf) = 0;
};
// Bytes flowing out. An error aborts the operation.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual WorkspaceStatus write(std::string_view bytes) = 0;
};
// A ByteSource over bytes in memory (they must outlive it).
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  WorkspaceResult<std::size_t> read(std::span<char> buf) override;

 private:
  std::string_view bytes_;
};

enum class EntryType { kFile, kDirectory, kSymlink, kOther };
// "file", "dir", "symlink", "other".
std::string_view entryTypeName(EntryType type) noexcept;

// One name in a directory (seed 002's EntryInfo).
struct EntryInfo {
  std::string name;
  EntryType type = EntryType::kFile;
  std::string path;  // absolute, in the sandbox: "/workspace/src/main.c"
  bool operator==(const EntryInfo&) const = default;
};

// What importTree() accepts; beyond any of them the archive is refused.
struct ImportLimits {
  std::uint64_t maxEntries = 200'000;
  std::uint64_t maxEntryBytes = std::uint64_t{4} << 30;   // one file's size
  std::uint64_t maxTotalBytes = std::uint64_t{16} << 30;  // every file's size, added up
};

struct WorkspaceOptions {
  std::string hostPath;  // an existing host directory; its real path is pinned by open()
  // The sandbox's live rules, asked once per operation (a narrowing holds
  // from the next call on). Required.
  std::function<DerivedRules()> rules;
  // False once the sandbox is gone: every call then answers stale_epoch.
  // Empty: always live.
  std::function<bool()> live;
  // upload()/download(): a file over this is too_large (so is one over the
  // policy's limits.fileSizeBytes, when set: the sandbox could not write it).
  std::uint64_t maxFileBytes = std::uint64_t{8} << 30;
  ImportLimits importLimits;
  std::size_t maxWatchEvents = 4096;       // queued per watch; beyond, one overflow event
  std::size_t maxWatchDirectories = 8192;  // watched per recursive watch; beyond, an overflow event
};

// An open file being read (download). Bounded memory: the caller's buffer.
class FileReader {
 public:
  FileReader(FileReader&&) noexcept;
  FileReader& operator=(FileReader&&) noexcept;
  ~FileReader();
  // The size when it was opened; read() returns exactly this many bytes in
  // all (a file that shrinks meanwhile is unavailable, one that grows is cut).
  std::uint64_t size() const noexcept;
  // Up to buf.size() bytes; 0 at the end.
  WorkspaceResult<std::size_t> read(std::span<char> buf);

 private:
  friend class Workspace;
  struct State;
  explicit FileReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A file being written (upload): the bytes go to a temporary file in the
// target's directory, which commit() renames onto the target (create or
// replace, atomically). Destroyed without commit(), the temporary is removed
// and the target is untouched.
class FileWriter {
 public:
  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) noexcept;
  ~FileWriter();
  // too_large once the bytes written pass the limit (the temporary is removed).
  WorkspaceStatus write(std::string_view bytes);
  WorkspaceStatus commit();
  std::uint64_t written() const noexcept;

 private:
  friend class Workspace;
  struct State;
  explicit FileWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct WatchEvent {
  enum class Type { kCreate, kModify, kDelete, kRename, kOverflow };
  Type type = Type::kModify;
  std::string path;     // absolute, in the sandbox ("" for kOverflow)
  std::string oldPath;  // kRename: where it was
  bool isDirectory = false;
  std::string detail;   // kOverflow: what was lost and why
  bool operator==(const WatchEvent&) const = default;
};
// "create", "modify", "delete", "rename", "overflow".
std::string_view watchEventTypeName(WatchEvent::Type type) noexcept;

// A stream of changes beneath a directory (inotify). Events queue up to
// WorkspaceOptions::maxWatchEvents; past that, and whenever the kernel's own
// queue overflows or a directory cannot be watched, the stream carries one
// kOverflow event at the point where events were lost: a loss is never
// hidden. Events for read-denied paths are not reported.
class Watch {
 public:
  Watch(Watch&&) noexcept;
  Watch& operator=(Watch&&) noexcept;
  ~Watch();
  // Readable when events may be waiting (poll/epoll it, then call next()).
  int fd() const noexcept;
  // The events queued now, waiting up to `timeout` for the first one; empty
  // when none came. unavailable when the watched directory itself is gone
  // (after a final kDelete event for it).
  WorkspaceResult<std::vector<WatchEvent>> next(std::chrono::milliseconds timeout);

 private:
  friend class Workspace;
  struct State;
  explicit Watch(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// What an export wrote.
struct ExportSummary {
  std::uint64_t entries = 0;  // headers written (directories, files, links)
  std::uint64_t bytes = 0;    // archive bytes
  std::uint64_t omitted = 0;  // entries left out: read-denied, sockets, fifos, devices
};

// A POSIX tar stream (ustar, pax records where a name, size or id needs one)
// of a directory tree, produced as it is read: bounded memory whatever the
// tree. Modes are as the files have them, set-id and sticky bits included.
// Symlinks are archived as links (never followed), hard links as links to
// the first name. Read-denied entries, sockets, fifos and devices are left
// out (ExportSummary::omitted).
class TreeExport {
 public:
  TreeExport(TreeExport&&) noexcept;
  TreeExport& operator=(TreeExport&&) noexcept;
  ~TreeExport();
  // Up to buf.size() archive bytes; 0 at the end.
  WorkspaceResult<std::size_t> read(std::span<char> buf);
  const ExportSummary& summary() const noexcept;

  struct State;  // opaque (src/workspace)

 private:
  friend class Workspace;
  friend struct WorkspaceInternals;
  explicit TreeExport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Workspace {
 public:
  // Opens and pins `options.hostPath` (which must be an existing directory).
  // Throws std::invalid_argument without options.rules.
  static WorkspaceResult<Workspace> open(WorkspaceOptions options);

  // The real host path pinned at open().
  const std::string& hostPath() const noexcept;

  // Creates or replaces the file at `path`, creating missing parent
  // directories; atomic (a temporary in the same directory, then rename).
  // A final symlink is written through to the file it names beneath
  // /workspace; one that leads out (or to a directory) is invalid_path
  // (is_directory), never replaced. Every name it would create is decided
  // before the first is made: a refusal leaves no new directory behind.
  WorkspaceResult<FileWriter> openWrite(std::string_view path);
  WorkspaceStatus upload(std::string_view path, ByteSource& data);
  WorkspaceStatus upload(std::string_view path, std::string_view data);

  // Reads the regular file at `path` (a final symlink is followed as long as
  // it stays beneath /workspace).
  WorkspaceResult<FileReader> openRead(std::string_view path);
  WorkspaceStatus download(std::string_view path, ByteSink& out);
  WorkspaceResult<std::string> download(std::string_view path);

  // The names in the directory at `path`, unsorted.
  WorkspaceResult<std::vector<EntryInfo>> list(std::string_view path);
  // Creates the directory and its missing parents: true when it created the
  // last one, false when a directory was already there.
  WorkspaceResult<bool> makeDir(std::string_view path);
  // False when nothing is at `path` (a dangling final symlink is something).
  WorkspaceResult<bool> exists(std::string_view path);
  // Removes a file, a symlink (not what it points to) or a whole directory
  // tree. A tree holding anything the policy protects is refused whole
  // (permission_denied) before anything is removed.
  WorkspaceStatus remove(std::string_view path);

  // Changes beneath the directory at `path`; `recursive` follows new
  // subdirectories as they appear.
  WorkspaceResult<Watch> watch(std::string_view path, bool recursive);

  // The tree at `path` (default: the whole workspace) as a tar stream.
  WorkspaceResult<TreeExport> exportTree(std::string_view path = "/workspace");
  WorkspaceStatus exportTree(ByteSink& out, std::string_view path = "/workspace");

  // Extracts a tar archive into the directory at `path` (created when
  // missing), parsing it strictly: refused, naming the entry, are absolute
  // names, ".." components, symlinks whose target leads outside the
  // destination, entries written through a symlink of the same archive, hard
  // links to anything but an earlier file of the archive, devices, fifos and
  // sockets, entries and totals over ImportLimits, too many entries, names
  // the policy protects, and malformed archives (bad checksums, truncation,
  // bad pax records, data after the end). Modes are applied as mode & 0777;
  // owners never. Existing files at the archive's names are replaced (an
  // existing directory is kept and merged into). The archive is extracted
  // into a staging directory on the same filesystem and only then moved into
  // place, so a refused archive leaves the workspace exactly as it was.
  WorkspaceStatus importTree(ByteSource& tar, std::string_view path = "/workspace");

  struct Impl;  // opaque (src/workspace)

 private:
  friend struct WorkspaceInternals;
  explicit Workspace(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace stockade
