// What the arguments of a denied system call mean, for audit events: socket
// family, type and protocol names, open flags, file modes, ioctl request
// names, namespace flags. Pure: no system call is made.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stockade::platform {

// (argument name, decoded text), in argument order; empty when nothing of
// `syscall`'s arguments is known. Unknown bits and values stay visible:
// "SOCK_STREAM|SOCK_CLOEXEC|0x40", "AF_UNKNOWN(77)".
//   socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) -> {family: AF_UNIX, type: SOCK_STREAM|SOCK_CLOEXEC, protocol: 0}
//   openat(.., O_WRONLY|O_CREAT, 04755)           -> {flags: O_WRONLY|O_CREAT, mode: 04755 (S_ISUID)}
//   ioctl(0, TIOCSTI, ..)                         -> {request: TIOCSTI}
using DecodedArguments = std::vector<std::pair<std::string, std::string>>;
DecodedArguments decodeArguments(std::string_view syscall, const std::array<std::uint64_t, 6>& args);

}  // namespace stockade::platform
