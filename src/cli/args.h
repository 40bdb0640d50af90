// A small command-line parser for the stockade subcommands: declared flags
// only (an unknown flag is an error), `--flag VALUE` or `--flag=VALUE`,
// repeatable flags, positionals, and everything after `--` kept verbatim.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace stockade::cli {

struct FlagSpec {
  std::string name;        // without dashes: "policy"
  bool takesValue = true;  // false: a switch such as --help
  bool repeatable = false;
  char shortName = 0;  // 't': "-t" is the same flag
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> flags;  // switches map to {""}
  std::vector<std::string> positionals;
  std::vector<std::string> rest;  // after "--"
  bool has(const std::string& name) const { return flags.count(name) != 0; }
  std::optional<std::string> value(const std::string& name) const;
  const std::vector<std::string>& values(const std::string& name) const;
};

// --help (and -h) is always accepted. The error names the offending argument.
std::variant<ParsedArgs, std::string> parseArgs(const std::vector<std::string>& args,
                                                const std::vector<FlagSpec>& specs);

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

}  // namespace stockade::cli
