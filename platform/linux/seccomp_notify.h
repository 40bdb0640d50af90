// Denials as events. Every EPERM row of the seccomp table (seccomp.h) returns
// SECCOMP_RET_USER_NOTIF: the kernel parks the call and hands it to the
// supervisor through the filter's listener, and the supervisor answers EPERM
// -- the answer the row stands for -- and reports what was tried. The one
// call ever continued from here (SECCOMP_USER_NOTIF_FLAG_CONTINUE) is
// fallocate() under limits.fileSizeBytes, decided from its register arguments
// alone, which the child cannot change after the check (allocation_limit.h);
// nothing else depends on arguments. If the listener is closed, the kernel
// fails such calls with ENOSYS instead.
//
// Whoever holds a Child must answer its listener while the child runs:
// waitExit()/waitExitFor() of spawn.h do, and so does the library's
// supervisor loop (src/process/supervisor.cc), with one call per notification.
#pragma once

#include <sys/types.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace stockade::platform {

struct SeccompDenial {
  pid_t pid = 0;                       // as the supervisor sees it
  std::string syscall;                 // "ptrace", or "syscall 1234"
  std::array<std::uint64_t, 6> args{};
  int error = EPERM;                   // the answer: EPERM, or EFBIG/EOPNOTSUPP for a fallocate() refused
};

// What the supervisor decides from besides the table.
struct NotificationRules {
  std::uint64_t fileSizeBytes = 0;  // limits.fileSizeBytes, for fallocate() (0: none)
};

// Answers the next pending notification on `listener`: a fallocate() by
// decideFallocate() (continued, or refused), anything else EPERM; and says
// what was refused. nullopt when the call was let through, none was pending,
// or its caller died before the answer (the kernel then answered for us).
// Errors name the ioctl.
std::variant<std::optional<SeccompDenial>, std::string> answerDenial(int listener, const NotificationRules& rules = {});

}  // namespace stockade::platform
