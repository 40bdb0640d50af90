// The seccomp layer: one table (seccomp.cc, kDenials) lists every denied
// system call with the reason for denying it. The filter is compiled with
// libseccomp in the parent (libseccomp allocates) and installed in the child,
// last before exec, by a single async-signal-safe seccomp(2) call.
//
// Default action: allow. Denied calls fail with EPERM (clone3 with ENOSYS, so
// libc falls back to clone(), whose flags the filter can inspect). Syscalls
// of any ABI other than native x86-64 (i386 via int 0x80, x32) fail with EPERM.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "platform/linux/child_error.h"

namespace stockade::platform {

struct SeccompOptions {
  bool allowUnixSockets = false;  // network.allowUnixSockets is not empty
};

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
  std::vector<sock_filter> instructions;
};

// Compiled once per distinct options value, then served from a cache.
// Thread-safe. The error string names the libseccomp call that failed.
std::variant<const SeccompProgram*, std::string> seccompProgram(const SeccompOptions& options);

// Child side: installs the program on the calling thread. Requires no_new_privs.
bool installSeccomp(const SeccompProgram& program, ChildError& error) noexcept;

}  // namespace stockade::platform
