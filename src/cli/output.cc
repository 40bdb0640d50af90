#include "src/cli/output.h"

#include <cstdio>
#include <string>

namespace stockade::cli {

void printOut(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void printErr(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stderr); }

void printErrLines(std::string_view prefix, std::string_view text) {
  std::string out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.append(prefix).append(text.substr(0, nl)).push_back('\n');
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  printErr(out);
}

}  // namespace stockade::cli
