// The stockade subcommands. Each takes the arguments after its own name and
// returns the process exit code; errors go to stderr.
#pragma once

#include <string>
#include <vector>

namespace stockade::cli {

int policyCommand(const std::vector<std::string>& args);  // src/cli/policy_cmd.cc
int runCommand(const std::vector<std::string>& args);     // src/cli/run_cmd.cc
int sandboxCommand(const std::vector<std::string>& args); // src/cli/sandbox_cmd.cc (talks to stockaded)
// exec, ps, logs, kill, wait, attach: src/cli/process_cmd.cc (talks to stockaded)
int processCommand(const std::string& command, const std::vector<std::string>& args);
// cp, ls, persist, restore, snapshot: src/cli/workspace_cmd.cc (talks to stockaded)
int workspaceCommand(const std::string& command, const std::vector<std::string>& args);
int codeCommand(const std::vector<std::string>& args);  // src/cli/code_cmd.cc (talks to stockaded)

}  // namespace stockade::cli
