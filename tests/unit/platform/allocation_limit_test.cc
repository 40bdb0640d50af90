// decideFallocate(): the supervisor's answer to a fallocate() under
// limits.fileSizeBytes, for every mode the kernel knows, without spawning.
#include "platform/linux/allocation_limit.h"

#include <gtest/gtest.h>
#include <linux/falloc.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace stockade::platform {
namespace {

constexpr std::uint64_t kLimit = 1 << 20;  // limits.fileSizeBytes: 1 MiB
constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kWriteZeroes = 0x80;  // FALLOC_FL_WRITE_ZEROES, Linux 6.17

struct FallocateCase {
  const char* name;
  std::uint64_t mode, offset, len;
  bool allowed;
  int error;
};

class DecideFallocateTest : public ::testing::TestWithParam<FallocateCase> {};

TEST_P(DecideFallocateTest, AllocationEndingBeyondTheLimitIsRefusedEverythingElseGoesToTheKernel) {
  const auto& c = GetParam();
  const auto verdict = decideFallocate(c.mode, c.offset, c.len, kLimit);
  EXPECT_EQ(verdict.allowed, c.allowed);
  if (!c.allowed) {
    EXPECT_EQ(verdict.error, c.error) << strerrorname_np(verdict.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, DecideFallocateTest,
    ::testing::Values(
        // The case: 1 GiB kept at size 0.
        FallocateCase{"KeepSizeOneGiB", FALLOC_FL_KEEP_SIZE, 0, kGiB, false, EFBIG},
        FallocateCase{"KeepSizeWithin", FALLOC_FL_KEEP_SIZE, 0, kLimit / 2, true, 0},
        FallocateCase{"KeepSizeEndingExactlyAtTheLimit", FALLOC_FL_KEEP_SIZE, kLimit / 2, kLimit / 2, true, 0},
        FallocateCase{"KeepSizeOneByteOver", FALLOC_FL_KEEP_SIZE, kLimit / 2, kLimit / 2 + 1, false, EFBIG},
        FallocateCase{"KeepSizeStartingBeyond", FALLOC_FL_KEEP_SIZE, kLimit, 1, false, EFBIG},
        FallocateCase{"PlainAllocateOver", 0, 0, 2 * kLimit, false, EFBIG},
        FallocateCase{"PlainAllocateWithin", 0, 4096, 4096, true, 0},
        FallocateCase{"ZeroRangeKeepSizeOver", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, kGiB, false, EFBIG},
        FallocateCase{"ZeroRangeOver", FALLOC_FL_ZERO_RANGE, 0, kGiB, false, EFBIG},
        FallocateCase{"UnshareRangeOver", FALLOC_FL_UNSHARE_RANGE, 0, kGiB, false, EFBIG},
        FallocateCase{"WriteZeroesOver", kWriteZeroes, 0, kGiB, false, EFBIG},
        FallocateCase{"WriteZeroesWithin", kWriteZeroes, 0, 4096, true, 0},
        // Freeing space is never refused, wherever it is.
        FallocateCase{"PunchHole", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kGiB, true, 0},
        FallocateCase{"CollapseRange", FALLOC_FL_COLLAPSE_RANGE, 0, kGiB, true, 0},
        // INSERT_RANGE grows the file by len from a size the registers do not show.
        FallocateCase{"InsertRange", FALLOC_FL_INSERT_RANGE, 0, 4096, false, EOPNOTSUPP},
        // Combinations and unknown bits: refused as the kernel would.
        FallocateCase{"TwoOperations", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE, 0, 4096, false, EOPNOTSUPP},
        FallocateCase{"UnknownBit", 0x100, 0, 4096, false, EOPNOTSUPP},
        FallocateCase{"ReservedNoHideStale", 0x04, 0, 4096, false, EOPNOTSUPP},
        // Bits above the int the kernel reads are not part of the mode.
        FallocateCase{"HighBitsIgnored", (1ULL << 40) | FALLOC_FL_KEEP_SIZE, 0, kGiB, false, EFBIG},
        // Arguments the kernel refuses itself (EINVAL): passed on.
        FallocateCase{"NegativeOffset", FALLOC_FL_KEEP_SIZE, ~0ULL, kGiB, true, 0},
        FallocateCase{"ZeroLength", FALLOC_FL_KEEP_SIZE, 0, 0, true, 0},
        FallocateCase{"NegativeLength", FALLOC_FL_KEEP_SIZE, 0, ~0ULL, true, 0},
        // The largest offset and length: no overflow lets them through.
        FallocateCase{"HugeRange", FALLOC_FL_KEEP_SIZE, (1ULL << 63) - 1, (1ULL << 63) - 1, false, EFBIG}),
    [](const ::testing::TestParamInfo<FallocateCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace stockade::platform
