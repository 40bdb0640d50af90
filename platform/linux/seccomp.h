// The seccomp layer: one table (seccomp_table.cc, kDenials) lists every denied
// system call with the reason for denying it. The BPF filter is compiled from
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
// answers EPERM and records each denial (seccomp_notify.h).
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
};

// How a rule matches the call's arguments.
enum class SeccompMatch {
  kAlways,            // any arguments
  kArg0HasBit,        // (arg0 & value) == value
  kArg1Low32Equals,   // (arg1 & 0xffffffff) == value: ioctl request numbers are 32-bit
  kArg0Low32Equals,   // socket domain (an int)
  kArg0Low32EqualsArg2Not,  // domain == value && protocol != value2
  kArg2Low32Equals,   // socket protocol (an int)
  kArg1HasBit,        // (arg1 & value) == value: a mode argument
  kArg2HasBit,
  kArg3HasBit,
  kArg0Low32EqualsArg1Low4Equals,  // socketpair: domain == value && (type & 0xf) == value2
};

// One row of the denial table, as the filter compiler needs it.
struct SeccompRule {
  const char* syscall;
  SeccompMatch match;
  std::uint64_t value;
  std::uint64_t value2;
  int error;
  const char* reason;
  bool viaSupervisor;  // SECCOMP_RET_USER_NOTIF, answered `error` by stockade; else the filter returns it
};
std::vector<SeccompRule> seccompRules(const SeccompOptions& options);

// One row of the denial table, for audit output and tests.
struct SeccompDenialInfo {
  std::string syscall;
  std::string condition;  // "always", "arg0 & CLONE_NEWUSER", ...
  int error;              // EPERM or ENOSYS
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
