// The child's network namespace: loopback only, and optionally the proxy's
// listening sockets, created inside the namespace and handed to the parent
// over a unix socketpair with SCM_RIGHTS (unprivileged, unlike setns()).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "platform/linux/child_error.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

// Child side, async-signal-safe.
bool bringUpLoopback(ChildError& error) noexcept;
// Listens on 127.0.0.1:port and [::1]:port and sends both fds over `channel`.
bool sendProxyListeners(int channel, std::uint16_t port, ChildError& error) noexcept;

// Parent side: receives the two listeners (IPv4 first), non-blocking.
std::variant<std::vector<UniqueFd>, std::string> receiveProxyListeners(int channel);

}  // namespace stockade::platform
