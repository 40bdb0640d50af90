// stockade: command-line entry point. Parses the subcommand and hands over.
#include <string>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "stockade/version.h"

namespace {

// `stockade help [TOPIC...]`: "help", "help run", "help policy check".
int helpCommand(const std::vector<std::string>& topic) {
  std::string name;
  for (const auto& word : topic) name += (name.empty() ? "" : " ") + word;
  if (name.empty()) {
    stockade::cli::printOut(stockade::cli::mainUsage());
    return stockade::cli::kExitOk;
  }
  if (const auto* t = stockade::cli::findHelpTopic(name)) {
    stockade::cli::printOut(stockade::cli::helpText(*t));
    return stockade::cli::kExitOk;
  }
  std::string topics;
  for (const auto& t : stockade::cli::helpTopics()) topics += (topics.empty() ? "" : ", ") + std::string(t.command);
  stockade::cli::printErr("stockade: no help for \"" + name + "\"; topics: " + topics + "\n");
  return stockade::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    stockade::cli::printErr(stockade::cli::mainUsage());
    return stockade::cli::kExitUsage;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h") return helpCommand({});
  if (command == "help") return helpCommand(rest);
  if (command == "--version") {
    stockade::cli::printOut("stockade " + std::string(stockade::version()) + "\n");
    return stockade::cli::kExitOk;
  }
  if (command == "policy") return stockade::cli::policyCommand(rest);
  if (command == "run") return stockade::cli::runCommand(rest);
  if (command == "sandbox") return stockade::cli::sandboxCommand(rest);
  if (command == "code") return stockade::cli::codeCommand(rest);
  for (const char* c : {"exec", "ps", "logs", "kill", "wait", "attach"})
    if (command == c) return stockade::cli::processCommand(command, rest);
  for (const char* c : {"cp", "ls", "persist", "restore", "snapshot"})
    if (command == c) return stockade::cli::workspaceCommand(command, rest);
  stockade::cli::printErr("stockade: unknown command \"" + command + "\"; see stockade --help\n");
  return stockade::cli::kExitUsage;
}
