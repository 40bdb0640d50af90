#include "src/cli/args.h"

#include <algorithm>

namespace stockade::cli {

std::optional<std::string> ParsedArgs::value(const std::string& name) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& ParsedArgs::values(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = flags.find(name);
  return it == flags.end() ? kNone : it->second;
}

std::variant<ParsedArgs, std::string> parseArgs(const std::vector<std::string>& args,
                                                const std::vector<FlagSpec>& specs) {
  ParsedArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.rest.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg == "-h") {
      out.flags["help"].push_back("");
      continue;
    }
    if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
      auto spec = std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.shortName == arg[1]; });
      if (spec == specs.end()) return "unknown option \"" + arg + "\"; see --help";
      if (spec->takesValue) return "option \"" + arg + "\" needs --" + spec->name + "=VALUE";
      if (!spec->repeatable && out.flags.count(spec->name)) return "option \"" + arg + "\" given more than once";
      out.flags[spec->name].push_back("");
      continue;
    }
    if (!arg.starts_with("--") || arg.size() == 2) {
      if (arg.starts_with("-") && arg.size() > 1) return "unknown option \"" + arg + "\"; see --help";
      out.positionals.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name.resize(eq);
    }
    if (name == "help") {
      out.flags["help"].push_back("");
      continue;
    }
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) return "unknown option \"--" + name + "\"; see --help";
    if (!spec->repeatable && out.flags.count(name))
      return "option \"--" + name + "\" given more than once";
    if (!spec->takesValue) {
      if (inlineValue) return "option \"--" + name + "\" takes no value";
      out.flags[name].push_back("");
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size()) return "option \"--" + name + "\" needs a value";
      inlineValue = args[++i];
    }
    out.flags[name].push_back(*inlineValue);
  }
  return out;
}

}  // namespace stockade::cli
