// The seccomp layer: one table (seccomp_table.cc) lists every denied system
// call with the reason for denying it, and socket()/socketpair() by an
// allow-list of (family, type, protocol), each row with its reason: every
// other combination is denied, so a new family or protocol is refused by
// construction. The BPF filter is compiled from
// that table with libseccomp AT BUILD TIME (tools/seccomp_filter_gen.cc writes
// the instructions into the library): compiling it at run time cost a short
// `stockade run` about 0.3 ms and nine probing seccomp(2) calls, every time.
// A unit test compiles the table again with libseccomp and requires the very
// same instructions. The child installs the filter last before exec, by a
// single async-signal-safe seccomp(2) call.
//
// Default action: allow. Denied calls fail with EPERM (clone3 with ENOSYS, so
// libc falls back to clone(), whose flags the filter can inspect). The EPERM
// rows go through the supervisor (SECCOMP_RET_USER_NOTIF), which answers EPERM
// and records each denial (seccomp_notify.h). Under limits.fileSizeBytes
// fallocate() goes through the supervisor too, which decides from its
// arguments (allocation_limit.h).
//
// The same table lists the BROKERED calls (kBrokered in seccomp_table.cc):
// every write-shaped call, trapped to the supervisor too, whose write broker
// (write_broker.h) performs it in the child's stead, refuses it, or lets the
// kernel decide it with the child's own rights.
// Syscalls of any ABI other than native x86-64 (i386 via int 0x80, x32) fail
// with EPERM.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "platform/linux/child_error.h"

namespace stockade::platform {

struct SeccompOptions {
  bool allowUnixSockets = false;  // network.allowUnixSockets is not empty
  // limits.fileSizeBytes is set: fallocate() goes to the supervisor, which
  // checks the range against the limit (allocation_limit.h), and the
  // preallocation ioctls fail with EOPNOTSUPP.
  bool limitFileSize = false;
};

// One comparison of a system call argument. A rule compares each argument
// at most once (libseccomp 2.5 refuses a second comparison of the same one).
struct SeccompArg {
  enum class Op : std::uint8_t {
    kMaskedEquals,    // (arg & mask) == value
    kGreaterOrEqual,  // arg >= value (all 64 bits; mask unused)
  };
  unsigned index = 0;
  Op op = Op::kMaskedEquals;
  std::uint64_t mask = 0;
  std::uint64_t value = 0;
};

// One rule of the filter, as the compiler needs it: the call matches when
// every comparison holds (none: always).
struct SeccompRule {
  const char* syscall;
  std::vector<SeccompArg> args;
  int error;
  std::string reason;
  // SECCOMP_RET_USER_NOTIF: answered `error` by stockade (fallocate: `error`
  // or continued, allocation_limit.h); else the filter returns `error`.
  bool viaSupervisor;
  bool brokered = false;  // a brokered call (error 0): the write broker answers it
  // An allow-list inside the rule: it holds only when the call matches none
  // of these combinations, each a conjunction of kMaskedEquals comparisons
  // (empty: no such condition). The compiler checks them as a tree of
  // comparisons (seccomp_compile.cc) instead of deny rules for the list's
  // complement.
  std::vector<std::vector<SeccompArg>> unless;
};

// True when every comparison of `rule` holds for these arguments: the
// filter's test, evaluated by the supervisor for a call the kernel handed over.
bool seccompMatches(const SeccompRule& rule, const std::uint64_t* args) noexcept;

// True when socket()'s arguments are a COUNTED row of the socket allow-list
// (NETLINK_ROUTE): the filter traps it, and the supervisor lets it go on
// while the sandbox's count allows (socket_limits.h).
bool countedSocket(const std::uint64_t* args) noexcept;

// What a brokered call does.
enum class BrokeredKind : std::uint8_t {
  kOpen,          // open, openat, creat: flags and mode in registers
  kOpenHow,       // openat2: flags, mode and resolve in a struct open_how
  kMkdir,
  kMknod,
  kSymlink,
  kLink,
  kRename,
  kUnlink,        // unlink, unlinkat (AT_REMOVEDIR: as rmdir)
  kRmdir,
  kTruncate,
  kChmod,
  kChown,
  kUtime,         // struct utimbuf
  kUtimes,        // struct timeval[2]
  kUtimens,       // struct timespec[2]
  kSetXattr,      // name, value, size, XATTR_* flags in registers
  kSetXattrArgs,  // setxattrat: name, then value, size and flags in a struct xattr_args
  kRemoveXattr,
  kAccess,        // a W_OK check: the answer the broker would give a write
  kUmask,         // umask(2): continued; the broker stops trusting the umask it knows
};
const char* brokeredKindName(BrokeredKind kind) noexcept;

// Where a brokered call's arguments are: the register index, or -1.
struct BrokeredArgs {
  std::int8_t dirfd = -1;   // what `path` is relative to; with no `path`, the object itself (fchmod's fd)
  std::int8_t path = -1;
  std::int8_t dirfd2 = -1;  // link and rename: the second name
  std::int8_t path2 = -1;
  std::int8_t flags = -1;   // O_* (open), AT_* (the *at calls), RENAME_* (renameat2)
  std::int8_t mode = -1;
  // Per kind: uid, gid (kChown); times (kUtime*); name, value, size, flags
  // (kSetXattr); name, args, size (kSetXattrArgs); name (kRemoveXattr);
  // length (kTruncate); how, size (kOpenHow); target (kSymlink); dev (kMknod).
  std::int8_t extra[4] = {-1, -1, -1, -1};
};

struct BrokeredCall {
  const char* syscall;
  BrokeredKind kind;
  BrokeredArgs args;
  std::uint32_t impliedFlags;  // creat: O_CREAT|O_WRONLY|O_TRUNC; lchown and l*xattr: AT_SYMLINK_NOFOLLOW
  // When the filter traps it: always (trapArg -1), when argument trapArg has
  // any of trapBits set (one rule per bit), or -- trapBits 0 -- when it is
  // not 0.
  std::int8_t trapArg;
  std::uint64_t trapBits;
  const char* reason;
};
// THE brokered calls, in table order.
std::span<const BrokeredCall> brokeredCalls() noexcept;
// The denial table's rows, then the rules that refuse every socket() and
// socketpair() outside the socket allow-list (seccomp_table.cc).
std::vector<SeccompRule> seccompRules(const SeccompOptions& options);

// One rule of the filter, for audit output and tests.
struct SeccompDenialInfo {
  std::string syscall;
  std::string condition;  // "always", "(arg0 & 0x10000000) == 0x10000000", "arg1 >= 0x100000 && ...", ...
  int error;              // EPERM, ENOSYS, EOPNOTSUPP, or EFBIG (fallocate beyond the limit)
  std::string reason;
};
std::vector<SeccompDenialInfo> seccompDenials(const SeccompOptions& options);

// A compiled BPF program, ready for the child.
struct SeccompProgram {
  std::span<const sock_filter> instructions;
};

// The filter for `options`, compiled from the table at build time (see above;
// defined in the generated seccomp_filters.cc). Static storage; thread-safe.
const SeccompProgram& seccompProgram(const SeccompOptions& options) noexcept;

// The name of a syscall the table denies or brokers ("ptrace"), or nullptr;
// and the number of one, or -1. Generated with the filters.
const char* seccompSyscallName(int nr) noexcept;
int seccompSyscallNumber(const char* name) noexcept;

// Child side: installs the program on the calling thread. Requires
// no_new_privs. Sets `listener` to the filter's notification fd (close-on-
// exec), which the child must hand to the supervisor and close. A call the
// supervisor has received waits for its answer uninterrupted by signals other
// than fatal ones (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, Linux 5.19), so a
// write the broker performed is never reported to the child as EINTR;
// `killableWait` says whether the kernel had it.
bool installSeccomp(const SeccompProgram& program, int& listener, bool& killableWait, ChildError& error) noexcept;

}  // namespace stockade::platform
