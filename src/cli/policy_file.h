// Reading a policy file for the CLI commands.
#pragma once

#include <string>
#include <variant>

#include "stockade/policy.h"

namespace stockade::cli {

// Reads and validates the policy at `path` ("-": standard input), 1 MiB at
// most. The error starts with the path: `p.json: network.allowedDomains[2]: ...`.
std::variant<SandboxPolicy, std::string> loadPolicyFile(const std::string& path);

}  // namespace stockade::cli
