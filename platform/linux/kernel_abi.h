// Kernel ABI the system headers (linux-libc-dev 6.1 on Debian 12) may lack,
// and thin syscall wrappers for calls glibc does not wrap. Every fallback
// names the kernel release that introduced it. Only platform/ includes this.
//
// All wrappers are plain syscalls: async-signal-safe, usable between clone
// and exec.
#pragma once

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

// --- Landlock -----------------------------------------------------------
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // Linux 6.2, ABI 3
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)  // Linux 6.10, ABI 5
#endif
#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2  // Linux 6.7, ABI 4
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)  // Linux 6.7, ABI 4
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)  // Linux 6.7, ABI 4
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // Linux 6.12, ABI 6
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)  // Linux 6.12, ABI 6
#endif

// --- clone3 / pidfd -----------------------------------------------------
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000  // Linux 5.2
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL  // Linux 5.7
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000  // Linux 4.6
#endif
#ifndef P_PIDFD
#define P_PIDFD 3  // Linux 5.4
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL  // Linux 6.9: a pidfd of one thread, not its thread group
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)  // Linux 5.11
#endif

// --- seccomp user notification --------------------------------------------
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)  // Linux 6.6
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)  // Linux 6.6
#endif

// --- mount API (Linux 5.2; mount_setattr 5.12) ----------------------------
#ifndef MOUNT_ATTR_SIZE_VER0
#define MOUNT_ATTR_SIZE_VER0 32  // Linux 5.12
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000  // Linux 5.2
#endif

// --- space allocation (allocation_limit.h) ---------------------------------
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80  // Linux 6.17
#endif
// The generic preallocation ioctls (fs/ioctl.c; struct space_resv is 48
// bytes): fallocate() with a range the filter cannot read, in memory.
#ifndef FS_IOC_RESVSP
#define FS_IOC_RESVSP 0x40305828U  // _IOW('X', 40, struct space_resv): FALLOC_FL_KEEP_SIZE
#endif
#ifndef FS_IOC_RESVSP64
#define FS_IOC_RESVSP64 0x4030582aU  // _IOW('X', 42, struct space_resv): FALLOC_FL_KEEP_SIZE
#endif
#ifndef FS_IOC_ZERO_RANGE
#define FS_IOC_ZERO_RANGE 0x40305839U  // _IOW('X', 57, struct space_resv), Linux 5.5: FALLOC_FL_ZERO_RANGE
#endif

namespace stockade::platform::linux_abi {

// fchmodat2(2), Linux 6.6; libseccomp 2.5.4 does not know its name. x86_64.
inline constexpr int kNrFchmodat2 = 452;
// setxattrat(2) and removexattrat(2), Linux 6.13; x86_64, unknown to libseccomp 2.5.4.
inline constexpr int kNrSetxattrat = 463;
inline constexpr int kNrRemovexattrat = 466;

// struct xattr_args, Linux 6.13 (setxattrat's value, size and XATTR_* flags).
struct XattrArgs {
  std::uint64_t value = 0;
  std::uint32_t size = 0;
  std::uint32_t flags = 0;
};

// struct landlock_ruleset_attr as of ABI 6 (Linux 6.12). Passing the full
// size to an older kernel is accepted as long as the fields it does not know
// are zero.
struct LandlockRulesetAttr {
  std::uint64_t handledAccessFs = 0;
  std::uint64_t handledAccessNet = 0;  // ABI 4
  std::uint64_t scoped = 0;            // ABI 6
};

struct __attribute__((packed)) LandlockPathBeneathAttr {
  std::uint64_t allowedAccess;
  std::int32_t parentFd;
};

struct LandlockNetPortAttr {  // ABI 4
  std::uint64_t allowedAccess;
  std::uint64_t port;
};

// struct clone_args as of Linux 5.7 (VER2: set_tid and cgroup). Older
// kernels accept the larger size as long as the fields they lack are zero.
struct CloneArgs {
  std::uint64_t flags = 0;
  std::uint64_t pidfd = 0;
  std::uint64_t childTid = 0;
  std::uint64_t parentTid = 0;
  std::uint64_t exitSignal = 0;
  std::uint64_t stack = 0;
  std::uint64_t stackSize = 0;
  std::uint64_t tls = 0;
  std::uint64_t setTid = 0;      // VER1, Linux 5.5
  std::uint64_t setTidSize = 0;  // VER1
  std::uint64_t cgroup = 0;      // VER2, Linux 5.7: with CLONE_INTO_CGROUP, a cgroup2 directory fd
};

struct MountAttr {
  std::uint64_t attrSet = 0;
  std::uint64_t attrClr = 0;
  std::uint64_t propagation = 0;
  std::uint64_t usernsFd = 0;
};

inline long clone3(CloneArgs* args) { return ::syscall(SYS_clone3, args, sizeof(CloneArgs)); }
// pidfd_open(2), Linux 5.3.
inline int pidfdOpen(pid_t pid, unsigned flags) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags)); }
inline int pidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}
inline int closeRange(unsigned first, unsigned last, unsigned flags) {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}
inline int openat2(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve) {
  struct open_how how = {};
  how.flags = flags;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof(how)));
}
inline int fchmodat2(int dirfd, const char* path, unsigned mode, int flags) {
  return static_cast<int>(::syscall(kNrFchmodat2, dirfd, path, mode, flags));
}
inline int setxattrat(int dirfd, const char* path, unsigned atFlags, const char* name, const XattrArgs* args) {
  return static_cast<int>(::syscall(kNrSetxattrat, dirfd, path, atFlags, name, args, sizeof(*args)));
}
inline int removexattrat(int dirfd, const char* path, unsigned atFlags, const char* name) {
  return static_cast<int>(::syscall(kNrRemovexattrat, dirfd, path, atFlags, name));
}
inline int openTree(int dirfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dirfd, path, flags));
}
inline int moveMount(int fromDirfd, const char* fromPath, int toDirfd, const char* toPath,
                     unsigned flags) {
  return static_cast<int>(::syscall(SYS_move_mount, fromDirfd, fromPath, toDirfd, toPath, flags));
}
inline int mountSetattr(int dirfd, const char* path, unsigned flags, MountAttr* attr) {
  return static_cast<int>(::syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr)));
}
inline int pivotRoot(const char* newRoot, const char* putOld) {
  return static_cast<int>(::syscall(SYS_pivot_root, newRoot, putOld));
}
inline int landlockCreateRuleset(const LandlockRulesetAttr* attr, std::size_t size,
                                 std::uint32_t flags) {
  return static_cast<int>(::syscall(SYS_landlock_create_ruleset, attr, size, flags));
}
inline int landlockAddRule(int rulesetFd, int ruleType, const void* attr) {
  return static_cast<int>(::syscall(SYS_landlock_add_rule, rulesetFd, ruleType, attr, 0));
}
inline int landlockRestrictSelf(int rulesetFd) {
  return static_cast<int>(::syscall(SYS_landlock_restrict_self, rulesetFd, 0));
}

}  // namespace stockade::platform::linux_abi
