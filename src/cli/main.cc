// stockade: command-line entry point. Parses the subcommand and hands over.
#include <string>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
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
    stockade::cli::printErr(kUsage);
    return stockade::cli::kExitUsage;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    stockade::cli::printOut(kUsage);
    return stockade::cli::kExitOk;
  }
  if (command == "--version") {
    stockade::cli::printOut("stockade " + std::string(stockade::version()) + "\n");
    return stockade::cli::kExitOk;
  }
  if (command == "policy") return stockade::cli::policyCommand(rest);
  if (command == "run") return stockade::cli::runCommand(rest);
  stockade::cli::printErr("stockade: unknown command \"" + command + "\"\n" + kUsage);
  return stockade::cli::kExitUsage;
}
