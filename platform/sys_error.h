// One shape for a failed system call: which call, with which arguments, and
// errno (sandbox2's ErrnoToStatus). Kernel-free: policy/ and src/ may use it.
#pragma once

#include <string>
#include <variant>

namespace stockade::platform {

struct SysError {
  std::string call;  // the call and its arguments: `openat2(workspace, "a/b", O_PATH, RESOLVE_BENEATH)`
  int error = 0;     // errno
  // "<call> failed: ENOENT"
  std::string message() const;
};

// A value, or the system call that failed instead.
template <typename T>
using SysResult = std::variant<T, SysError>;

// The errno's name ("ENOENT"), or its number when it has none.
std::string errnoName(int error);

}  // namespace stockade::platform
