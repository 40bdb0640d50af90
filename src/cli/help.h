// The CLI's documentation, in one place: `--help` of every command, `stockade
// help TOPIC`, the man page (stockade.1, generated at build time by
// stockade_doc) and the bash completion script all render these tables, and
// each command builds its flag parser from its topic's flags.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/cli/args.h"

namespace stockade::cli {

struct HelpFlag {
  std::string_view name;   // "policy" (the flag is --policy)
  std::string_view value;  // "FILE"; empty for a switch
  std::string_view text;   // one or more lines
  bool repeatable = false;
  char shortName = 0;      // 't' for -t; 0: none
};

struct HelpTopic {
  std::string_view command;   // "run", "policy check"
  std::string_view synopsis;  // after the command: "[--policy FILE] ... -- PROGRAM [ARG...]"
  std::string_view summary;   // one line
  std::span<const HelpFlag> flags;
  std::string_view details;   // paragraphs, plain text
};

// Every command, in the order of the man page: run, policy, policy check, ...
std::span<const HelpTopic> helpTopics() noexcept;
// The topic of "run", "policy check", ...; nullptr when there is none.
const HelpTopic* findHelpTopic(std::string_view command) noexcept;

// The top-level usage (stockade --help).
std::string_view mainUsage() noexcept;
// The policy format: what `stockade policy --help` prints after the subcommands.
std::string_view policyFormatText() noexcept;

// `stockade COMMAND --help`: usage, summary, flags, details.
std::string helpText(const HelpTopic& topic);
// The argument parser's specs for a topic's flags.
std::vector<FlagSpec> flagSpecs(const HelpTopic& topic);

// stockade.1 in man(7) markup, and a bash completion script: both from the tables above.
std::string manPage();
std::string bashCompletion();

}  // namespace stockade::cli
