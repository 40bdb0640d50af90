// `stockade run`: placeholder until the enforcement layer lands (issue 3).
#include <iostream>

#include "src/cli/commands.h"

namespace stockade::cli {

int runCommand(const std::vector<std::string>&) {
  std::cerr << "stockade run: not built yet (issue 3)\n";
  return 125;
}

}  // namespace stockade::cli
