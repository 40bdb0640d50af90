// The import policy: which entries of a tar archive may enter a workspace,
// and as what. Pure -- no system call: tree_import.cc parses the archive with
// libarchive, asks admit() about each entry header in order, and creates only
// what comes back as a PlannedEntry, beneath its pinned staging directory.
//
// An archive is judged on its own structure, entry by entry, in order:
//   names      relative, at most 4095 bytes, 255 per component and 256
//              components deep; "." and
//              empty components are dropped; "/"-leading names are
//              absolute_name, ".." components dot_dot; a name whose parent is
//              a symlink entry of the archive is through_symlink, one whose
//              parent is a file entry conflicting_entry, as is a directory
//              over a non-directory entry or the reverse (a file over a file
//              replaces it).
//   symlinks   the target is walked from the link's directory: an absolute
//              target, or a ".." above the destination, is link_outside; so
//              is a ".." after a component the archive has not made a
//              directory (a symlink there would make ".." lead elsewhere).
//              Hence every link stays inside, also through other links of
//              the archive, which were judged the same way.
//   hard links only to an earlier regular-file entry (hardlink_outside).
//   types      devices, fifos and sockets are special_file; unknown types
//              and data on a hard link are malformed.
//   limits     ImportLimits: too_many_entries, entry_too_large, total_too_large.
//   policy     every name the archive creates (its implicit parents too) is
//              asked of the WriteCheck: permission_denied with the rule.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "src/workspace/access.h"
#include "stockade/workspace.h"

namespace stockade::workspace {

enum class ImportRefusal {
  kMalformed,
  kBadName,
  kAbsoluteName,
  kDotDot,
  kLinkOutside,
  kThroughSymlink,
  kHardLinkOutside,
  kSpecialFile,
  kEntryTooLarge,
  kTotalTooLarge,
  kTooManyEntries,
  kConflictingEntry,
  kPermissionDenied,
};
inline constexpr ImportRefusal kAllImportRefusals[] = {
    ImportRefusal::kMalformed,       ImportRefusal::kBadName,          ImportRefusal::kAbsoluteName,
    ImportRefusal::kDotDot,          ImportRefusal::kLinkOutside,      ImportRefusal::kThroughSymlink,
    ImportRefusal::kHardLinkOutside, ImportRefusal::kSpecialFile,      ImportRefusal::kEntryTooLarge,
    ImportRefusal::kTotalTooLarge,   ImportRefusal::kTooManyEntries,   ImportRefusal::kConflictingEntry,
    ImportRefusal::kPermissionDenied,
};
// "malformed", "bad_name", "absolute_name", "dot_dot", "link_outside",
// "through_symlink", "hardlink_outside", "special_file", "entry_too_large",
// "total_too_large", "too_many_entries", "conflicting_entry", "permission_denied".
std::string_view importRefusalName(ImportRefusal reason) noexcept;

enum class ArchiveEntryType { kFile, kDirectory, kSymlink, kHardLink, kCharDevice, kBlockDevice, kFifo, kSocket, kUnknown };

// An entry's header as the archive gives it.
struct ArchiveEntry {
  std::string name;  // as spelled in the archive
  ArchiveEntryType type = ArchiveEntryType::kFile;
  std::string linkName;  // kSymlink: the target; kHardLink: the earlier entry's name
  std::uint64_t size = 0;
  std::uint32_t mode = 0;
  std::int64_t mtime = 0;
};

// What to create for an admitted entry.
struct PlannedEntry {
  std::string rel;  // normalised, relative to the destination; "" for the destination itself
  ArchiveEntryType type = ArchiveEntryType::kFile;  // kFile, kDirectory, kSymlink or kHardLink
  std::string target;      // kSymlink: as written; kHardLink: the normalised earlier entry
  std::uint32_t mode = 0;  // & 0777
  std::int64_t mtime = 0;
  std::uint64_t size = 0;
  bool replaces = false;   // an earlier non-directory entry had this name: remove it first
};

// A refusal, naming the entry.
struct Refusal {
  ImportRefusal reason = ImportRefusal::kMalformed;
  std::string entry;    // as the archive spells it
  std::string message;  // `entry "a/../../x": ...`
};
WorkspaceError toError(const Refusal& refusal);

// Where symlink targets may point.
enum class SymlinkTargets {
  kBeneathDestination,   // host-built archives (importTree): the rule above
  // Archives the host captured from the sandbox itself (checkpoints,
  // snapshots: their sha256 was verified first): links are restored as the
  // sandbox made them, pointing anywhere -- as it could make them itself.
  // The host's own reads never follow them out (RESOLVE_BENEATH).
  kAsTheSandboxMadeThem,
};

// Components a name may have (so that every staged tree can be walked, and
// removed, within TreeWalker::kMaxDepth).
inline constexpr std::size_t kMaxArchiveDepth = 256;
// Bytes of names an import keeps while it runs (too_many_entries beyond).
inline constexpr std::size_t kMaxNameBytesHeld = std::size_t{64} << 20;

class ImportChecker {
 public:
  // The rule that refuses creating an object of `kind` at `rel` (relative to
  // the destination), or nullopt.
  using WriteCheck = std::function<std::optional<std::string>(const std::string& rel, ObjectKind kind)>;

  ImportChecker(ImportLimits limits, SymlinkTargets symlinks, WriteCheck writeCheck);

  std::variant<PlannedEntry, Refusal> admit(const ArchiveEntry& entry);

  // Directories the archive implies without naming them (parents of its
  // entries), in the order they first appeared.
  const std::vector<std::string>& implicitDirectories() const noexcept { return implicit_; }
  std::uint64_t entries() const noexcept { return entries_; }
  std::uint64_t totalBytes() const noexcept { return total_; }

 private:
  enum class Seen : std::uint8_t { kDirectory, kImplicitDirectory, kFile, kSymlink };
  std::optional<Refusal> checkSymlinkTarget(const ArchiveEntry& e, const std::string& rel) const;

  ImportLimits limits_;
  SymlinkTargets symlinks_;
  WriteCheck writeCheck_;
  std::unordered_map<std::string, Seen> seen_;
  std::vector<std::string> implicit_;
  std::uint64_t entries_ = 0;
  std::uint64_t total_ = 0;
  std::size_t nameBytes_ = 0;
};

// The archive name normalised ("./a//b/" -> "a/b"), or the refusal
// (bad_name, absolute_name, dot_dot). `what` is "name" or "link target".
std::variant<std::string, Refusal> normaliseArchiveName(const std::string& entryName, const std::string& name,
                                                        std::string_view what);

}  // namespace stockade::workspace
