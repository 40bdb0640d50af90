// Persist and restore (shared/seeds/002_*): a project directory inside a
// workspace saved as a checkpoint under the host's state directory, and put
// back -- into the same sandbox or a later one -- after its size and SHA-256
// are verified.
//
//   persist({path, exclude, timeout}) archives the directory (tar), leaving
//     out the default excludes (node_modules .next .git dist build out
//     coverage .cache .turbo .vite .parcel-cache __pycache__ .venv venv
//     .edgeone) and `exclude`, directory names matched at any depth; the
//     archive may be at most Options::maxArchiveBytes (25 MiB). It is written
//     beside the checkpoint it replaces and made current only once complete
//     and on disk (fsync of the file and its directory).
//   restore({path, timeout}) replaces the target directory with the
//     checkpoint's content, only after everything read matched the recorded
//     size and SHA-256; {restored: false, reason: "not_found"} when there is
//     no checkpoint for that path.
// Checkpoints are keyed by (scope, path): the scope is the caller's (the
// daemon's "default", a conversation id), so a later sandbox of the same
// scope restores what an earlier one persisted.
//
// Errors (WorkspaceError, seed 002's codes):
//   SANDBOX_LIMIT_EXCEEDED    the archive is over the limit (nothing stored)
//   SANDBOX_CONFLICT          a persist or restore is already running for this
//                             workspace, or for this checkpoint in another process
//   SANDBOX_DATA_CORRUPTED    the stored checkpoint does not match its size or
//                             SHA-256, or cannot be read as an archive; the
//                             target is left untouched
//   SANDBOX_FAILED_OPERATION  anything else that failed during the operation
//                             (an I/O error, the timeout)
// and, for the path itself, the file API's invalid_path, not_found,
// not_directory and permission_denied (the workspace root is invalid_path:
// a project directory is never the root). Caller bugs (a timeout that is not
// a positive number of seconds, an exclude that is not a plain directory
// name) throw std::invalid_argument naming the field.
//
// Thread-safety: a CheckpointStore may be used from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/workspace.h"

namespace stockade {

// node_modules, .next, .git, dist, build, out, coverage, .cache, .turbo,
// .vite, .parcel-cache, __pycache__, .venv, venv, .edgeone.
std::span<const std::string_view> defaultPersistExcludes() noexcept;

struct PersistOptions {
  std::string path;                   // "/workspace/app", or "app" (relative to /workspace)
  std::vector<std::string> exclude;   // more directory names to leave out
  std::chrono::seconds timeout{180};  // for the whole operation; positive
};

struct Checkpoint {
  std::uint64_t size = 0;   // bytes of the archive
  std::string sha256;       // lower-case hex of the archive
  std::string etag;         // identifies this checkpoint's content
  std::string persistedAt;  // ISO 8601 UTC, "2025-01-02T03:04:05.678Z"
  bool operator==(const Checkpoint&) const = default;
};

struct RestoreOptions {
  std::string path;                   // the target directory, as PersistOptions::path
  std::chrono::seconds timeout{180};  // positive
};

struct RestoreResult {
  bool restored = false;
  std::string reason;                   // "not_found" when there was no checkpoint
  std::optional<Checkpoint> checkpoint;  // when restored
};

class CheckpointStore {
 public:
  struct Options {
    std::string stateDir;  // checkpoints live in <stateDir>/checkpoints (created 0700)
    std::uint64_t maxArchiveBytes = std::uint64_t{25} << 20;
  };
  static WorkspaceResult<CheckpointStore> open(Options options);

  WorkspaceResult<Checkpoint> persist(Workspace& workspace, std::string_view scope, const PersistOptions& options);
  WorkspaceResult<RestoreResult> restore(Workspace& workspace, std::string_view scope, const RestoreOptions& options);

  // Where the checkpoint of (scope, path) is kept (tests corrupt it there).
  std::string checkpointDir(std::string_view scope, std::string_view path) const;

  struct Impl;  // opaque (src/workspace)

 private:
  explicit CheckpointStore(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace stockade
