// stockade: command-line entry point. Parses the subcommand and hands over.
#include <iostream>
#include <string>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "stockade/version.h"

namespace {

constexpr const char* kUsage = R"(usage: stockade COMMAND [ARGS]

Commands:
  run     run a program under a policy (stockade run --help)
  policy  check, derive, compare and diff policies (stockade policy --help)

Options:
  --help     show this help
  --version  print the version
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return stockade::cli::kExitUsage;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return stockade::cli::kExitOk;
  }
  if (command == "--version") {
    std::cout << "stockade " << stockade::version() << "\n";
    return stockade::cli::kExitOk;
  }
  if (command == "policy") return stockade::cli::policyCommand(rest);
  if (command == "run") return stockade::cli::runCommand(rest);
  std::cerr << "stockade: unknown command \"" << command << "\"\n" << kUsage;
  return stockade::cli::kExitUsage;
}
