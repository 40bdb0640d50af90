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
// Default action: allow. Denied calls fail with EPERM (clone3 and openat2 with
// ENOSYS, so libc falls back to calls whose arguments the filter can inspect).
// The EPERM rows go through the supervisor (SECCOMP_RET_USER_NOTIF), which
// answers EPERM and records each denial (seccomp_notify.h). Under
// limits.fileSizeBytes fallocate() goes through the supervisor too, which
// decides from its arguments (allocation_limit.h).
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
};
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

// The name of a syscall the table denies ("ptrace"), or nullptr. Generated
// with the filters.
const char* seccompSyscallName(int nr) noexcept;

// Child side: installs the program on the calling thread. Requires
// no_new_privs. Sets `listener` to the filter's notification fd (close-on-
// exec), which the child must hand to the supervisor and close.
bool installSeccomp(const SeccompProgram& program, int& listener, ChildError& error) noexcept;

}  // namespace stockade::platform
