// Names as a case-insensitive filesystem compares them: one key for every
// spelling such a directory takes for the same entry, so that a rule on a
// name (the protected-name table, denyWrite, a read mask) holds however the
// child spells it.
//
// Filesystems that compare names case-insensitively: ext4, f2fs and tmpfs
// directories with the casefold attribute (Unicode NFD + full case folding,
// and before Linux 6.13 default-ignorable code points dropped), vfat, exfat,
// ntfs3 and SMB shares (case-insensitive; vfat and exfat also drop trailing
// dots, Windows servers trailing spaces). Whether a directory is one is not
// looked up: the key is used for every name, whatever the filesystem -- a
// name is then taken for a protected one in more spellings than a
// case-sensitive directory would (`.BashRC` is refused on ext4 too), never
// in fewer. Pure; no allocation when `name` is its own key.
#pragma once

#include <string>
#include <string_view>

namespace stockade::policy {

// The key of one path component: ASCII lowercased, the non-ASCII characters
// whose folding is ASCII (U+017F long s, U+212A Kelvin sign, U+00DF sharp s,
// the fi/fl/st ligatures, ...) folded, default-ignorable code points (zero
// width spaces and joiners, variation selectors, soft hyphen, ...) dropped,
// and trailing dots and spaces dropped (not from "." or ".."). Returns `name`
// itself when nothing changes, else a view of `storage`. Bytes that are not
// UTF-8 are kept as they are.
std::string_view foldedName(std::string_view name, std::string& storage);

// The key of every component of an absolute path ("/A/B." -> "/a/b"):
// `path` itself when it is its own key, else a view of `storage`.
std::string_view foldedPath(std::string_view path, std::string& storage);
inline std::string foldedPath(std::string_view path) {
  std::string storage;
  return std::string(foldedPath(path, storage));
}

}  // namespace stockade::policy
