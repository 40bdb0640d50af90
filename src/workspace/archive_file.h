// Archives on the host's disk (checkpoints, snapshots): a tree exported into
// a file with its size and SHA-256 computed on the way, made durable; and the
// reading side, hashing what the importer pulls so the stored SHA-256 can be
// checked before anything is placed.
#pragma once

#include <functional>
#include <string>

#include "src/workspace/durable.h"
#include "src/workspace/tree_export.h"

namespace stockade::workspace {

struct StoredArchive {
  std::string path;  // the file written
  std::uint64_t size = 0;
  std::string sha256;
  ExportSummary summary;
};

// The export of `path` written to `dir`/`name` (created exclusively),
// fsync()ed with its directory. Over `maxBytes` (0: no limit) the file is
// removed and the error is kLimitExceeded; past `deadline` kTimeout; a host
// failure kUnavailable; the export's own errors as they are. `afterRead`
// runs once the whole tree has been read, before the (slower) fsync().
WorkspaceResult<StoredArchive> captureArchive(const Workspace::Impl& ws, const SandboxPath& path,
                                              const ExportOptions& options, const std::string& dir,
                                              const std::string& name, std::uint64_t maxBytes, Deadline deadline,
                                              const std::function<void()>& afterRead = {});

// An archive file read for import: what was read, hashed and counted.
class HashingFileSource final : public ByteSource {
 public:
  explicit HashingFileSource(platform::UniqueFd fd) : fd_(std::move(fd)) {}
  WorkspaceResult<std::size_t> read(std::span<char> buf) override;
  // Reads (and hashes) whatever the importer left unread.
  WorkspaceStatus drain();
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::string sha256() { return sha_.hex(); }

 private:
  platform::UniqueFd fd_;
  Sha256 sha_;
  std::uint64_t bytes_ = 0;
};

}  // namespace stockade::workspace
