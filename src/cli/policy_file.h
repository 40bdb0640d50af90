// Reading a policy file for the CLI commands.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "stockade/policy.h"

namespace stockade::cli {

// Why a policy file could not be used: every problem of the file.
struct PolicyFileError {
  std::string file;
  PolicyError error;  // a file that cannot be read: one problem with no JSON path
  // One line per problem, each starting with the file: `p.json: network.allowedDomains[2]: ...`.
  std::string lines() const;
};

// Reads and validates the policy at `path` ("-": standard input), 1 MiB at most.
std::variant<SandboxPolicy, PolicyFileError> loadPolicyFile(const std::string& path);

// What the policy's sandbox-runtime keys call for, as lines for stderr: one
// warning listing every key that does not apply, one note listing what is
// enforced more strictly than asked. Empty when there are none.
std::vector<std::string> policyNoteLines(const std::string& path, const SandboxPolicy& policy);

}  // namespace stockade::cli
