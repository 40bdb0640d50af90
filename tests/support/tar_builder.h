// Hand-built tar archives for tests, written field by field (independently
// of src/workspace/tar_format.cc), so that tests can make every malformed
// or hostile shape an importer must refuse: any typeflag, name, link, mode,
// a wrong checksum, raw pax records, truncation, data after the end.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace stockade::testing {

struct TarHeader {
  std::string name;
  char type = '0';
  std::uint32_t mode = 0644;
  std::uint64_t size = 0;  // what the header says (the data added is separate)
  std::string linkName;
  std::string prefix;
  std::uint64_t mtime = 1700000000;
  std::uint32_t devMajor = 0, devMinor = 0;
  int checksumDelta = 0;   // added to the correct checksum: non-zero makes it wrong
};

inline std::string tarHeaderBlock(const TarHeader& h) {
  std::string b(512, '\0');
  auto put = [&](std::size_t off, std::size_t len, const std::string& s) {
    std::memcpy(&b[off], s.data(), std::min(len, s.size()));
  };
  auto octal = [&](std::size_t off, std::size_t len, std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(len - 1), static_cast<unsigned long long>(v));
    put(off, len - 1, buf);
  };
  put(0, 100, h.name);
  octal(100, 8, h.mode);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, h.size);
  octal(136, 12, h.mtime);
  b[156] = h.type;
  put(157, 100, h.linkName);
  put(257, 6, std::string("ustar\0", 6));
  put(263, 2, "00");
  octal(329, 8, h.devMajor);
  octal(337, 8, h.devMinor);
  put(345, 155, h.prefix);
  std::memset(&b[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : b) sum += c;
  sum = static_cast<unsigned>(static_cast<int>(sum) + h.checksumDelta);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", sum & 0777777);
  std::memcpy(&b[148], buf, 6);
  b[154] = '\0';
  b[155] = ' ';
  return b;
}

inline std::string paxRecordText(const std::string& key, const std::string& value) {
  std::size_t body = key.size() + value.size() + 3;
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

class TarBuilder {
 public:
  TarBuilder& entry(const TarHeader& h, const std::string& data = "") {
    out_ += tarHeaderBlock(h);
    out_ += data;
    out_.append((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  TarBuilder& file(const std::string& name, const std::string& data, std::uint32_t mode = 0644) {
    return entry({.name = name, .type = '0', .mode = mode, .size = data.size()}, data);
  }
  TarBuilder& dir(const std::string& name, std::uint32_t mode = 0755) {
    return entry({.name = name, .type = '5', .mode = mode});
  }
  TarBuilder& symlink(const std::string& name, const std::string& target) {
    return entry({.name = name, .type = '2', .mode = 0777, .linkName = target});
  }
  TarBuilder& hardlink(const std::string& name, const std::string& target) {
    return entry({.name = name, .type = '1', .linkName = target});
  }
  // A pax extended header ('x') with these records, for the next entry.
  TarBuilder& pax(const std::string& records) {
    return entry({.name = "PaxHeaders/x", .type = 'x', .size = records.size()}, records);
  }
  TarBuilder& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }
  // Two zero blocks, padded to a 10240-byte record.
  TarBuilder& end() {
    out_.append(1024, '\0');
    out_.append((10240 - out_.size() % 10240) % 10240, '\0');
    return *this;
  }
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace stockade::testing
