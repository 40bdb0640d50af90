// The supervisor's side of the seccomp filter's listener. Every EPERM row of
// the seccomp table (seccomp.h) and every brokered call returns
// SECCOMP_RET_USER_NOTIF: the kernel parks the call and hands it to the
// supervisor. answerNotification() answers one:
//  - a call an EPERM row matches gets EPERM -- the answer the row stands for
//    -- and is reported; it never continues, so nothing depends on arguments
//    the child could change after the check;
//  - fallocate() under limits.fileSizeBytes is decided from its register
//    arguments alone, which the child cannot change after the check
//    (allocation_limit.h): continued, or refused and reported;
//  - a brokered call goes to the sandbox's write broker (write_broker.h),
//    which performs it, refuses it (reported, with the rule), or lets it
//    continue in the kernel under the child's own rights.
// If the listener is closed, the kernel fails such calls with ENOSYS.
//
// Whoever holds a Child must answer its listener while the child runs:
// waitExit()/waitExitFor() of spawn.h do, and so does the library's
// supervisor loop (src/process/supervisor.cc), with one call per
// notification. One call answers one notification and does a bounded amount
// of work: a loop may serve many sandboxes.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace stockade::platform {

class WriteBroker;

struct SeccompDenial {
  pid_t pid = 0;                       // as the supervisor sees it
  std::string syscall;                 // "ptrace", or "syscall 1234"
  std::array<std::uint64_t, 6> args{};
  int error = 0;                       // the errno the call got: EPERM for the table's rows, EFBIG or
                                       // EOPNOTSUPP for a fallocate() refused, the broker's for a write
  // Set when the write broker refused the call (empty for the table's rows):
  std::string operation;     // "create", "rename", "open for writing", ...
  std::string path;          // the path as the child gave it
  std::string path2;         // the second one (rename, link), or a symlink's target
  std::string resolvedPath;  // the name the rule decided on, in the sandbox's view
  std::string rule;          // `protected name ".git/hooks"`, `filesystem.denyWrite "/w/.env"`, ...
  std::string reason;        // why the rule exists
};

// Answers the next pending notification on `listener` (see above), the
// brokered ones through `broker`. The denial to record, if the call was
// refused; nullopt when it was not, when none was pending, or when its
// caller died or was interrupted first (the kernel then answered for us).
// Errors name the ioctl: the sandbox must then be killed. With none pending
// it waits for one. `received` (optional): whether one was received -- false
// when none was pending on a listener polled readable, or none can come (no
// task is left under the filter: the listener polls POLLHUP).
std::variant<std::optional<SeccompDenial>, std::string> answerNotification(int listener, const WriteBroker& broker,
                                                                           bool* received = nullptr);

// Once per listener: wake the supervisor on the caller's CPU when a call is
// trapped, and the caller on the supervisor's when it is answered (Linux
// 6.6). Best effort: false when the kernel lacks it. It holds only for a
// thread waiting in SECCOMP_IOCTL_NOTIF_RECV itself, and since the same
// release such a wait ends when no task is left under the filter (before
// it, only a signal ended it): what lets the supervisor give a listener a
// thread of its own (src/process/supervisor.cc).
bool preferSynchronousWakeUp(int listener) noexcept;

}  // namespace stockade::platform
