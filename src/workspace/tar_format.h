// Writing POSIX tar (pax interchange format, IEEE 1003.1-2001): a ustar
// header per entry, preceded by a pax extended header ('x') only when a field
// does not fit ustar (a long name or link target, a size of 8 GiB or more, a
// large or negative id or time). Pure: bytes in, bytes out. Reading is
// libarchive's (tree_import.cc): this side only encodes what we produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace stockade::workspace {

inline constexpr std::size_t kTarBlock = 512;
inline constexpr std::size_t kTarRecord = 10240;  // 20 blocks: archives are padded to a whole record

enum class TarType : char {
  kFile = '0',
  kHardLink = '1',
  kSymlink = '2',
  kDirectory = '5',
};

struct TarEntry {
  std::string name;  // relative, '/'-separated, no trailing slash (added for directories)
  TarType type = TarType::kFile;
  std::uint32_t mode = 0;  // permission, set-id and sticky bits (07777)
  std::uint64_t uid = 0;
  std::uint64_t gid = 0;
  std::uint64_t size = 0;  // kFile only: the data that follows
  std::int64_t mtime = 0;  // seconds since the epoch
  std::string linkName;    // kSymlink: the target as written; kHardLink: the earlier entry's name
};

// The header blocks of one entry (a multiple of 512 bytes). Its data, if any,
// follows, then tarPadding(size) zero bytes.
std::string encodeTarHeader(const TarEntry& entry);
// Zero bytes that pad `size` bytes of data to a whole block.
std::size_t tarPadding(std::uint64_t size) noexcept;
// The end of an archive of `bytesSoFar` bytes: two zero blocks, then zeros
// up to a whole record.
std::string tarTrailer(std::uint64_t bytesSoFar);

// One pax record: "<length> <key>=<value>\n", length counting itself.
std::string paxRecord(const std::string& key, const std::string& value);

}  // namespace stockade::workspace
