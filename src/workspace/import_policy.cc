#include "src/workspace/import_policy.h"

#include <vector>

#include "src/workspace/sandbox_path.h"

namespace stockade::workspace {
namespace {

Refusal refuse(ImportRefusal reason, const std::string& entry, const std::string& why) {
  return Refusal{reason, entry, "entry " + quoteValue(entry) + ": " + why};
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") out.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

const char* typeText(ArchiveEntryType t) {
  switch (t) {
    case ArchiveEntryType::kCharDevice: return "a character device";
    case ArchiveEntryType::kBlockDevice: return "a block device";
    case ArchiveEntryType::kFifo: return "a fifo";
    case ArchiveEntryType::kSocket: return "a socket";
    default: return "an entry of unknown type";
  }
}

}  // namespace

std::string_view importRefusalName(ImportRefusal reason) noexcept {
  switch (reason) {
    case ImportRefusal::kMalformed: return "malformed";
    case ImportRefusal::kBadName: return "bad_name";
    case ImportRefusal::kAbsoluteName: return "absolute_name";
    case ImportRefusal::kDotDot: return "dot_dot";
    case ImportRefusal::kLinkOutside: return "link_outside";
    case ImportRefusal::kThroughSymlink: return "through_symlink";
    case ImportRefusal::kHardLinkOutside: return "hardlink_outside";
    case ImportRefusal::kSpecialFile: return "special_file";
    case ImportRefusal::kEntryTooLarge: return "entry_too_large";
    case ImportRefusal::kTotalTooLarge: return "total_too_large";
    case ImportRefusal::kTooManyEntries: return "too_many_entries";
    case ImportRefusal::kConflictingEntry: return "conflicting_entry";
    case ImportRefusal::kPermissionDenied: return "permission_denied";
  }
  return "unknown";
}

WorkspaceError toError(const Refusal& refusal) {
  return WorkspaceError{.code = WorkspaceErrorCode::kInvalidArchive,
                        .message = "archive refused: " + refusal.message + " (" +
                                   std::string(importRefusalName(refusal.reason)) + "); nothing was changed",
                        .entry = refusal.entry,
                        .reason = std::string(importRefusalName(refusal.reason))};
}

std::variant<std::string, Refusal> normaliseArchiveName(const std::string& entryName, const std::string& name,
                                                        std::string_view what) {
  if (name.empty()) return refuse(ImportRefusal::kBadName, entryName, "its " + std::string(what) + " is empty");
  if (name.size() > kMaxPathBytes)
    return refuse(ImportRefusal::kBadName, entryName,
                  "its " + std::string(what) + " is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  if (name.front() == '/')
    return refuse(ImportRefusal::kAbsoluteName, entryName,
                  "its " + std::string(what) + " " + quoteValue(name) + " is absolute; archives hold relative names");
  std::string rel;
  auto parts = components(name);
  if (parts.size() > kMaxArchiveDepth)
    return refuse(ImportRefusal::kBadName, entryName,
                  "its " + std::string(what) + " is more than " + std::to_string(kMaxArchiveDepth) +
                      " components deep");
  for (std::string_view part : parts) {
    if (part == "..")
      return refuse(ImportRefusal::kDotDot, entryName,
                    "its " + std::string(what) + " " + quoteValue(name) + " has a \"..\" component");
    if (part.size() > kMaxNameBytes)
      return refuse(ImportRefusal::kBadName, entryName,
                    "its " + std::string(what) + " has a component longer than " + std::to_string(kMaxNameBytes) +
                        " bytes");
    rel = joinRel(rel, part);
  }
  return rel;
}

ImportChecker::ImportChecker(ImportLimits limits, SymlinkTargets symlinks, WriteCheck writeCheck)
    : limits_(limits), symlinks_(symlinks), writeCheck_(std::move(writeCheck)) {}

std::optional<Refusal> ImportChecker::checkSymlinkTarget(const ArchiveEntry& e, const std::string& rel) const {
  const std::string& target = e.linkName;
  if (target.empty()) return refuse(ImportRefusal::kMalformed, e.name, "a symlink with an empty target");
  if (target.size() > kMaxPathBytes)
    return refuse(ImportRefusal::kBadName, e.name, "its link target is longer than 4095 bytes");
  if (symlinks_ == SymlinkTargets::kAsTheSandboxMadeThem) return std::nullopt;
  auto outside = [&](const std::string& why) {
    return refuse(ImportRefusal::kLinkOutside, e.name, "its symlink target " + quoteValue(target) + " " + why);
  };
  if (target.front() == '/') return outside("is absolute; it would name a path outside the destination");
  // The walk: the link's own directory first (directories of the archive,
  // real directories once extracted), then the target's components.
  struct Step {
    std::string path;
    bool knownDirectory;
  };
  std::vector<Step> stack;
  std::string at;
  auto parts = components(rel);
  parts.pop_back();  // the link's own name
  for (std::string_view p : parts) {
    at = joinRel(at, p);
    stack.push_back({at, true});
  }
  for (std::string_view part : components(target)) {
    if (part == "..") {
      if (stack.empty()) return outside("climbs above the destination");
      if (!stack.back().knownDirectory)
        return outside("climbs out of " + quoteValue(stack.back().path) +
                       ", which the archive has not made a directory before it (through a symlink, \"..\" leads "
                       "elsewhere)");
      stack.pop_back();
      continue;
    }
    std::string next = joinRel(stack.empty() ? std::string() : stack.back().path, part);
    auto it = seen_.find(next);
    bool dir = it != seen_.end() && (it->second == Seen::kDirectory || it->second == Seen::kImplicitDirectory);
    stack.push_back({std::move(next), dir});
  }
  return std::nullopt;
}

std::variant<PlannedEntry, Refusal> ImportChecker::admit(const ArchiveEntry& e) {
  if (++entries_ > limits_.maxEntries)
    return refuse(ImportRefusal::kTooManyEntries, e.name,
                  "the archive has more than " + std::to_string(limits_.maxEntries) + " entries");
  switch (e.type) {
    case ArchiveEntryType::kFile:
    case ArchiveEntryType::kDirectory:
    case ArchiveEntryType::kSymlink:
    case ArchiveEntryType::kHardLink: break;
    case ArchiveEntryType::kUnknown: return refuse(ImportRefusal::kMalformed, e.name, "an entry of unknown type");
    default:
      return refuse(ImportRefusal::kSpecialFile, e.name,
                    std::string(typeText(e.type)) + "; only files, directories and links are imported");
  }
  auto normal = normaliseArchiveName(e.name, e.name, "name");
  if (auto* r = std::get_if<Refusal>(&normal)) return std::move(*r);
  PlannedEntry out;
  out.rel = std::get<std::string>(std::move(normal));
  out.type = e.type;
  out.mode = e.mode & 0777;
  out.mtime = e.mtime;
  const bool isDir = e.type == ArchiveEntryType::kDirectory;
  if (out.rel.empty()) {
    if (!isDir) return refuse(ImportRefusal::kBadName, e.name, "a non-directory named after the destination itself");
    return out;  // the destination's own entry ("./"): nothing to create
  }

  // Sizes: data only on regular files.
  if (e.type == ArchiveEntryType::kFile) {
    out.size = e.size;
    if (e.size > limits_.maxEntryBytes)
      return refuse(ImportRefusal::kEntryTooLarge, e.name,
                    std::to_string(e.size) + " bytes is over the limit of " + std::to_string(limits_.maxEntryBytes) +
                        " bytes per entry");
    if (e.size > limits_.maxTotalBytes - total_)
      return refuse(ImportRefusal::kTotalTooLarge, e.name,
                    "the archive's files add up to more than the limit of " + std::to_string(limits_.maxTotalBytes) +
                        " bytes");
  } else if (e.type == ArchiveEntryType::kHardLink && e.size != 0) {
    return refuse(ImportRefusal::kMalformed, e.name, "a hard link carrying data");
  }

  // The parents: directories of the archive, or implied by it.
  std::vector<std::string> newParents;
  std::string parent;
  auto parts = components(out.rel);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    parent = joinRel(parent, parts[i]);
    auto it = seen_.find(parent);
    if (it == seen_.end()) {
      newParents.push_back(parent);
      continue;
    }
    if (it->second == Seen::kSymlink)
      return refuse(ImportRefusal::kThroughSymlink, e.name,
                    "it would be written through " + quoteValue(parent) + ", a symlink entry of the same archive");
    if (it->second == Seen::kFile)
      return refuse(ImportRefusal::kConflictingEntry, e.name,
                    "its parent " + quoteValue(parent) + " is a file entry of the same archive");
  }

  // The name itself: a second entry of the same name.
  if (auto it = seen_.find(out.rel); it != seen_.end()) {
    const bool wasDir = it->second == Seen::kDirectory || it->second == Seen::kImplicitDirectory;
    if (wasDir != isDir)
      return refuse(ImportRefusal::kConflictingEntry, e.name,
                    isDir ? "a directory over an earlier non-directory entry of the same name"
                          : "a non-directory over an earlier directory entry of the same name");
    out.replaces = !isDir;
  }

  if (e.type == ArchiveEntryType::kSymlink) {
    if (auto r = checkSymlinkTarget(e, out.rel)) return std::move(*r);
    out.target = e.linkName;
  }
  if (e.type == ArchiveEntryType::kHardLink) {
    auto target = normaliseArchiveName(e.name, e.linkName, "hard link target");
    if (auto* r = std::get_if<Refusal>(&target)) {
      if (r->reason == ImportRefusal::kAbsoluteName || r->reason == ImportRefusal::kDotDot)
        r->reason = ImportRefusal::kHardLinkOutside;
      return std::move(*r);
    }
    out.target = std::get<std::string>(std::move(target));
    auto it = seen_.find(out.target);
    if (out.target == out.rel || it == seen_.end() || it->second != Seen::kFile)
      return refuse(ImportRefusal::kHardLinkOutside, e.name,
                    "a hard link to " + quoteValue(e.linkName) +
                        ", which is not an earlier regular file of the same archive");
  }

  // The policy: every name this entry creates.
  for (const auto& p : newParents)
    if (auto rule = writeCheck_(p, ObjectKind::kDirectory))
      return refuse(ImportRefusal::kPermissionDenied, e.name,
                    "its directory " + quoteValue(p) + " is write-protected by the sandbox's policy (" + *rule + ")");
  const ObjectKind arriving = isDir                                   ? ObjectKind::kDirectory
                              : e.type == ArchiveEntryType::kSymlink ? ObjectKind::kSymlink
                                                                     : ObjectKind::kOther;
  if (auto rule = writeCheck_(out.rel, arriving))
    return refuse(ImportRefusal::kPermissionDenied, e.name,
                  "the name is write-protected by the sandbox's policy (" + *rule + ")");

  // Admitted: record it, within a bound on the names held.
  std::size_t names = out.rel.size();
  for (const auto& p : newParents) names += p.size();
  if (names > kMaxNameBytesHeld - nameBytes_)
    return refuse(ImportRefusal::kTooManyEntries, e.name,
                  "the archive's names add up to more than " + std::to_string(kMaxNameBytesHeld) + " bytes");
  nameBytes_ += names;
  for (auto& p : newParents) {
    seen_.emplace(p, Seen::kImplicitDirectory);
    implicit_.push_back(std::move(p));
  }
  if (e.type == ArchiveEntryType::kFile) total_ += e.size;
  Seen kind = isDir ? Seen::kDirectory : e.type == ArchiveEntryType::kSymlink ? Seen::kSymlink : Seen::kFile;
  seen_[out.rel] = kind;
  return out;
}

}  // namespace stockade::workspace
