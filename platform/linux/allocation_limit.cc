#include "platform/linux/allocation_limit.h"

#include <cerrno>

#include "platform/linux/kernel_abi.h"

namespace stockade::platform {

AllocationVerdict decideFallocate(std::uint64_t mode, std::uint64_t offset, std::uint64_t len,
                                  std::uint64_t limit) noexcept {
  // The kernel takes mode as an int and offset, len as loff_t. Besides
  // KEEP_SIZE a mode names one operation (vfs_fallocate() refuses the rest).
  const auto operation = static_cast<std::uint32_t>(mode) & ~static_cast<std::uint32_t>(FALLOC_FL_KEEP_SIZE);
  const auto start = static_cast<std::int64_t>(offset), size = static_cast<std::int64_t>(len);
  switch (operation) {
    case FALLOC_FL_PUNCH_HOLE:
    case FALLOC_FL_COLLAPSE_RANGE:
      return {};  // frees space
    case FALLOC_FL_INSERT_RANGE:
      return {false, EOPNOTSUPP};
    case 0:  // allocate
    case FALLOC_FL_ZERO_RANGE:
    case FALLOC_FL_UNSHARE_RANGE:
    case FALLOC_FL_WRITE_ZEROES:
      break;
    default:
      return {false, EOPNOTSUPP};
  }
  if (start < 0 || size <= 0) return {};  // EINVAL from the kernel
  // offset + len, both non-negative: no unsigned overflow.
  if (static_cast<std::uint64_t>(start) + static_cast<std::uint64_t>(size) > limit) return {false, EFBIG};
  return {};
}

}  // namespace stockade::platform
