// A policy for the daemon's tests with every field spelled out (an omitted
// field takes the bundled default's value), and the one place that says so.
#pragma once

#include <nlohmann/json.hpp>

namespace stockade::testing {

// Reads all but ~/.ssh and /etc/shadow, writes `allowWrite` (default: the
// workspace), no network, env PATH and HOME, no limits.
inline nlohmann::json daemonTestPolicy(nlohmann::json allowWrite = nlohmann::json::array({"."})) {
  using nlohmann::json;
  return {{"filesystem",
           {{"denyRead", json::array({"~/.ssh", "/etc/shadow"})},
            {"allowRead", json::array()},
            {"allowWrite", std::move(allowWrite)},
            {"denyWrite", json::array()}}},
          {"network",
           {{"allowedDomains", json::array()},
            {"deniedDomains", json::array()},
            {"allowUnixSockets", json::array()},
            {"allowLocalBinding", false}}},
          {"env", {{"allow", json::array({"PATH", "HOME"})}}},
          {"limits", {{"memoryBytes", 0}, {"pids", 0}, {"cpuSeconds", 0}, {"fileSizeBytes", 0}}}};
}

}  // namespace stockade::testing
