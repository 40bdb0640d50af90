// stockade_doc: renders the CLI's help tables (src/cli/help.cc) as the man
// page or the bash completion script, at build time:
//   stockade_doc man > stockade.1;  stockade_doc bash-completion > stockade
#include <cstdio>
#include <string>
#include <string_view>

#include "src/cli/help.h"

int main(int argc, char** argv) {
  std::string_view what = argc == 2 ? argv[1] : "";
  std::string text;
  if (what == "man") text = stockade::cli::manPage();
  else if (what == "bash-completion") text = stockade::cli::bashCompletion();
  else {
    std::fputs("usage: stockade_doc man|bash-completion\n", stderr);
    return 2;
  }
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
