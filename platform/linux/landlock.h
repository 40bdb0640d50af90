// The Landlock layer: write rights only beneath write-allowed paths, TCP
// connect only to the proxy port and no TCP bind (ABI >= 4; neither is
// restricted when the policy allows local binding), abstract unix socket and
// signal scoping (ABI >= 6). Reads are governed by the mount layer.
//
// landlockAbi() runs anywhere; applyLandlock() runs in the child between
// clone and exec, after the mounts, and is async-signal-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/linux/child_error.h"

namespace stockade::platform {

// The highest Landlock ABI the running kernel supports; 0 when Landlock is
// unavailable (not built in, or disabled at boot). Detected once.
int landlockAbi() noexcept;

struct LandlockPlan {
  int abi = 0;                              // 0: layer not applied
  std::vector<std::string> writable;        // sandbox-view paths
  std::optional<std::uint16_t> connectPort; // the only TCP connect destination port
  bool allowTcpBind = false;                // network.allowLocalBinding: TCP bind and connect unrestricted
};

// Child side. Opens every writable path (missing ones are skipped: there is
// nothing to grant), restricts the calling thread. Requires no_new_privs.
bool applyLandlock(const LandlockPlan& plan, ChildError& error) noexcept;

}  // namespace stockade::platform
