#include "src/workspace/tar_format.h"

#include <cstring>

namespace stockade::workspace {
namespace {

// Offsets and sizes of the ustar header fields.
struct Field {
  std::size_t offset, size;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kUid{108, 8}, kGid{116, 8}, kSize{124, 12}, kMtime{136, 12},
    kChecksum{148, 8}, kTypeflag{156, 1}, kLinkname{157, 100}, kMagic{257, 6}, kVersion{263, 2}, kPrefix{345, 155};

// The largest value an octal field of `size` bytes holds (size-1 digits and a NUL).
std::uint64_t octalMax(const Field& f) { return (std::uint64_t{1} << (3 * (f.size - 1))) - 1; }

void putOctal(std::string& h, const Field& f, std::uint64_t value) {
  // size-1 zero-padded digits and a NUL.
  for (std::size_t i = f.size - 1; i-- > 0;) {
    h[f.offset + i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  h[f.offset + f.size - 1] = '\0';
}

void putText(std::string& h, const Field& f, const std::string& s) { std::memcpy(&h[f.offset], s.data(), s.size()); }

// Well-formed UTF-8 sequences (lengths only): decides whether pax records
// need hdrcharset=BINARY.
bool validUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 4;
    if (n == 4 || s.size() - i - 1 < n) return false;
    for (std::size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n + 1;
  }
  return true;
}

// Splits `name` into ustar's prefix (<= 155) and name (<= 100) at a slash;
// false when it cannot be.
bool splitUstarName(const std::string& name, std::string& prefix, std::string& rest) {
  if (name.size() <= kName.size) {
    prefix.clear();
    rest = name;
    return true;
  }
  for (std::size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    if (slash > kPrefix.size) break;
    if (name.size() - slash - 1 <= kName.size && name.size() - slash - 1 > 0) {
      prefix = name.substr(0, slash);
      rest = name.substr(slash + 1);
      return true;
    }
  }
  return false;
}

std::string ustarHeader(const TarEntry& e, const std::string& prefix, const std::string& name,
                        const std::string& link, bool sizeFits, bool uidFits, bool gidFits, bool mtimeFits) {
  std::string h(kTarBlock, '\0');
  putText(h, kName, name);
  putOctal(h, kMode, e.mode & 07777);
  putOctal(h, kUid, uidFits ? e.uid : 0);
  putOctal(h, kGid, gidFits ? e.gid : 0);
  putOctal(h, kSize, sizeFits ? e.size : 0);
  putOctal(h, kMtime, mtimeFits ? static_cast<std::uint64_t>(e.mtime) : 0);
  h[kTypeflag.offset] = static_cast<char>(e.type);
  putText(h, kLinkname, link);
  putText(h, kMagic, std::string("ustar\0", 6));
  putText(h, kVersion, "00");
  putText(h, kPrefix, prefix);
  // The checksum is computed with its own field as spaces.
  std::memset(&h[kChecksum.offset], ' ', kChecksum.size);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  for (std::size_t i = 6; i-- > 0;) {
    h[kChecksum.offset + i] = static_cast<char>('0' + (sum & 7));
    sum >>= 3;
  }
  h[kChecksum.offset + 6] = '\0';
  h[kChecksum.offset + 7] = ' ';
  return h;
}

}  // namespace

std::string paxRecord(const std::string& key, const std::string& value) {
  std::size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

std::size_t tarPadding(std::uint64_t size) noexcept {
  return static_cast<std::size_t>((kTarBlock - size % kTarBlock) % kTarBlock);
}

std::string encodeTarHeader(const TarEntry& entry) {
  std::string fullName = entry.name;
  if (entry.type == TarType::kDirectory && !fullName.ends_with('/')) fullName += '/';
  const std::uint64_t size = entry.type == TarType::kFile ? entry.size : 0;

  std::string records;
  bool binary = false;
  std::string prefix, name;
  if (!splitUstarName(fullName, prefix, name)) {
    records += paxRecord("path", fullName);
    binary |= !validUtf8(fullName);
    // A readable fallback name in the ustar header (ignored by pax readers).
    name = fullName.substr(0, kName.size);
    prefix.clear();
  }
  std::string link = entry.linkName;
  if (link.size() > kLinkname.size) {
    records += paxRecord("linkpath", link);
    binary |= !validUtf8(link);
    link = link.substr(0, kLinkname.size);
  }
  const bool sizeFits = size <= octalMax(kSize);
  if (!sizeFits) records += paxRecord("size", std::to_string(size));
  const bool uidFits = entry.uid <= octalMax(kUid);
  if (!uidFits) records += paxRecord("uid", std::to_string(entry.uid));
  const bool gidFits = entry.gid <= octalMax(kGid);
  if (!gidFits) records += paxRecord("gid", std::to_string(entry.gid));
  const bool mtimeFits = entry.mtime >= 0 && static_cast<std::uint64_t>(entry.mtime) <= octalMax(kMtime);
  if (!mtimeFits) records += paxRecord("mtime", std::to_string(entry.mtime));
  // Names that are not UTF-8 travel as the bytes they are (POSIX: hdrcharset
  // names the encoding of the records that follow it).
  if (binary) records = paxRecord("hdrcharset", "BINARY") + records;

  TarEntry e = entry;
  e.size = size;
  std::string out;
  if (!records.empty()) {
    TarEntry pax;
    pax.type = static_cast<TarType>('x');
    pax.mode = 0644;
    pax.size = records.size();
    pax.mtime = mtimeFits ? entry.mtime : 0;
    std::string leaf = fullName;
    while (leaf.ends_with('/')) leaf.pop_back();
    if (auto slash = leaf.rfind('/'); slash != std::string::npos) leaf = leaf.substr(slash + 1);
    std::string paxName = ("PaxHeaders/" + leaf).substr(0, kName.size);
    out += ustarHeader(pax, "", paxName, "", true, true, true, true);
    out += records;
    out.append(tarPadding(records.size()), '\0');
  }
  out += ustarHeader(e, prefix, name, link, sizeFits, uidFits, gidFits, mtimeFits);
  return out;
}

std::string tarTrailer(std::uint64_t bytesSoFar) {
  std::uint64_t end = bytesSoFar + 2 * kTarBlock;
  end += (kTarRecord - end % kTarRecord) % kTarRecord;
  return std::string(static_cast<std::size_t>(end - bytesSoFar), '\0');
}

}  // namespace stockade::workspace
