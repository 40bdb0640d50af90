// limits.fileSizeBytes against calls that allocate file space without
// writing: RLIMIT_FSIZE (privileges.h) bounds write(), truncate() and a
// fallocate() that grows the file, but fallocate(FALLOC_FL_KEEP_SIZE) -- and
// ZERO_RANGE with KEEP_SIZE, INSERT_RANGE, UNSHARE_RANGE -- allocate without
// the size check: on ext4 a 1 GiB allocation left the file at size 0.
//
// The limit differs per policy while the seccomp filter is compiled at build
// time (seccomp.h), so the filter cannot compare the range with it. Instead,
// the filter variant for policies with limits.fileSizeBytes hands every
// fallocate() to the supervisor (SECCOMP_RET_USER_NOTIF), which decides here
// and either lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) or fails
// it. Continuing is sound for this call: its mode, offset and length are
// register values, which the kernel passes on unchanged -- the child cannot
// alter them between the check and the call as it could memory a pointer
// argument points to -- and the decision does not depend on which file the
// fd names (the limit holds for every file, like RLIMIT_FSIZE), so a dup2()
// onto the fd meanwhile changes nothing. The preallocation ioctls take their
// range from memory and are refused outright in that variant
// (seccomp_table.cc: FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE).
#pragma once

#include <cstdint>

namespace stockade::platform {

struct AllocationVerdict {
  bool allowed = true;
  int error = 0;  // when refused: EFBIG (beyond the limit) or EOPNOTSUPP (a mode it cannot check)
};

// Pure. fallocate(fd, mode, offset, len) under limits.fileSizeBytes `limit`
// (> 0), arguments as the registers hold them:
//  - freeing space (PUNCH_HOLE, COLLAPSE_RANGE), and arguments the kernel
//    refuses anyway (negative offset, len <= 0): allowed, the kernel decides;
//  - INSERT_RANGE grows the file by `len` from its current size, which the
//    registers do not show: EOPNOTSUPP (what filesystems without it say);
//  - a mode that is not one known operation (with or without KEEP_SIZE):
//    EOPNOTSUPP, as the kernel answers combinations;
//  - everything else allocates [offset, offset + len): EFBIG when that ends
//    beyond the limit -- as a write() there would fail (without SIGXFSZ).
AllocationVerdict decideFallocate(std::uint64_t mode, std::uint64_t offset, std::uint64_t len,
                                  std::uint64_t limit) noexcept;

}  // namespace stockade::platform
