// Passing file descriptors from the child to the supervisor during setup:
// one SCM_RIGHTS message per batch over a SOCK_SEQPACKET socketpair, so each
// batch arrives whole and in order (proxy listeners, then the seccomp
// listener).
#pragma once

#include <span>
#include <string>
#include <variant>
#include <vector>

#include "platform/linux/child_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

// Child side, async-signal-safe: sends `fds` as one message. The caller keeps
// (and closes) its copies. On failure fills `error` for `step`.
bool sendFds(int channel, std::span<const int> fds, SetupStep step, const char* what, ChildError& error) noexcept;

// Parent side, non-blocking: the next message, which must carry exactly
// `count` descriptors (received close-on-exec). `what` names them in errors.
std::variant<std::vector<UniqueFd>, std::string> receiveFds(int channel, std::size_t count, const char* what);

}  // namespace stockade::platform
