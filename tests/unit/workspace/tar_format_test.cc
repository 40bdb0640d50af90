// The writer's output read back by libarchive (the reader the importer uses)
// and checked field by field; long names, links and huge sizes take pax.
#include "src/workspace/tar_format.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stockade::workspace {
namespace {

struct ReadBack {
  std::string name, link, hardlink;
  int type = 0;
  unsigned mode = 0;
  std::int64_t size = 0, mtime = 0, uid = 0;
  std::string data;
};

std::vector<ReadBack> readBack(const std::string& tar, int* finalStatus = nullptr) {
  std::vector<ReadBack> out;
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  EXPECT_EQ(archive_read_open_memory(a, tar.data(), tar.size()), ARCHIVE_OK);
  archive_entry* e;
  int r;
  while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
    ReadBack b;
    b.name = archive_entry_pathname(e);
    if (archive_entry_symlink(e)) b.link = archive_entry_symlink(e);
    if (archive_entry_hardlink(e)) b.hardlink = archive_entry_hardlink(e);
    b.type = static_cast<int>(archive_entry_filetype(e));
    b.mode = static_cast<unsigned>(archive_entry_mode(e) & 07777);
    b.size = archive_entry_size(e);
    b.mtime = archive_entry_mtime(e);
    b.uid = archive_entry_uid(e);
    char buf[4096];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) b.data.append(buf, static_cast<std::size_t>(n));
    out.push_back(std::move(b));
  }
  if (finalStatus) *finalStatus = r;
  archive_read_free(a);
  return out;
}

std::string archiveOf(const std::vector<std::pair<TarEntry, std::string>>& entries) {
  std::string out;
  for (const auto& [e, data] : entries) {
    out += encodeTarHeader(e);
    out += data;
    out.append(tarPadding(data.size()), '\0');
  }
  out += tarTrailer(out.size());
  return out;
}

TEST(TarFormatTest, UstarEntriesReadBackExactly) {
  std::string tar = archiveOf({
      {{.name = "dir", .type = TarType::kDirectory, .mode = 01777, .mtime = 1700000000}, ""},
      {{.name = "dir/setuid", .type = TarType::kFile, .mode = 04755, .uid = 1000, .size = 5, .mtime = 1}, "hello"},
      {{.name = "dir/link", .type = TarType::kSymlink, .mode = 0777, .linkName = "../elsewhere"}, ""},
      {{.name = "dir/hard", .type = TarType::kHardLink, .mode = 0644, .linkName = "dir/setuid"}, ""},
  });
  EXPECT_EQ(tar.size() % kTarRecord, 0u);
  int status = 0;
  auto got = readBack(tar, &status);
  EXPECT_EQ(status, ARCHIVE_EOF);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].name, "dir/");
  EXPECT_EQ(got[0].type, AE_IFDIR);
  EXPECT_EQ(got[0].mode, 01777u);  // the sticky bit reported as present
  EXPECT_EQ(got[1].name, "dir/setuid");
  EXPECT_EQ(got[1].mode, 04755u);  // and the set-id bits
  EXPECT_EQ(got[1].data, "hello");
  EXPECT_EQ(got[1].uid, 1000);
  EXPECT_EQ(got[1].mtime, 1);
  EXPECT_EQ(got[2].link, "../elsewhere");
  EXPECT_EQ(got[3].hardlink, "dir/setuid");
}

TEST(TarFormatTest, LongNamesAndTargetsSplitOrTakePax) {
  std::string splittable = std::string(150, 'p') + "/" + std::string(99, 'n');  // fits prefix + name
  std::string longName = std::string(300, 'a') + "/" + std::string(200, 'b');
  std::string longLink(500, 'l');
  std::string binary = std::string(120, 'x') + "\xff\xfe";
  std::string tar = archiveOf({
      {{.name = splittable, .size = 1}, "1"},
      {{.name = longName, .size = 2}, "22"},
      {{.name = "s", .type = TarType::kSymlink, .linkName = longLink}, ""},
      {{.name = binary, .size = 0}, ""},
  });
  EXPECT_EQ(encodeTarHeader({.name = splittable}).size(), kTarBlock);  // no pax header
  auto got = readBack(tar);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].name, splittable);
  EXPECT_EQ(got[1].name, longName);
  EXPECT_EQ(got[1].data, "22");
  EXPECT_EQ(got[2].link, longLink);
  EXPECT_EQ(got[3].name, binary);  // not UTF-8: hdrcharset=BINARY keeps the bytes
}

TEST(TarFormatTest, SizesOf8GiBAndMoreTakeAPaxSizeRecord) {
  std::uint64_t huge = (std::uint64_t{8} << 30) + 3;
  std::string header = encodeTarHeader({.name = "big", .size = huge});
  EXPECT_GT(header.size(), kTarBlock);
  EXPECT_NE(header.find(paxRecord("size", std::to_string(huge))), std::string::npos);
  // Read the header alone (the data is not there): the size comes through.
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  std::string tar = header + std::string(kTarBlock, '\0');
  ASSERT_EQ(archive_read_open_memory(a, tar.data(), tar.size()), ARCHIVE_OK);
  archive_entry* e;
  ASSERT_EQ(archive_read_next_header(a, &e), ARCHIVE_OK);
  EXPECT_EQ(static_cast<std::uint64_t>(archive_entry_size(e)), huge);
  archive_read_free(a);
}

TEST(TarFormatTest, PaxRecordLengthCountsItself) {
  EXPECT_EQ(paxRecord("path", "a"), "9 path=a\n");
  std::string r = paxRecord("path", std::string(93, 'x'));  // length crosses 99 -> 100
  EXPECT_EQ(r.size(), static_cast<std::size_t>(std::stoul(r.substr(0, r.find(' ')))));
}

TEST(TarFormatTest, TrailerEndsOnAWholeRecordWithTwoZeroBlocksAtLeast) {
  EXPECT_EQ(tarTrailer(0).size(), kTarRecord);
  EXPECT_EQ(tarTrailer(kTarRecord - kTarBlock).size(), kTarRecord + kTarBlock);
  EXPECT_EQ(tarTrailer(kTarRecord - 2 * kTarBlock).size(), 2 * kTarBlock);
}

}  // namespace
}  // namespace stockade::workspace
