#include "src/cli/output.h"

#include <cstdio>

namespace stockade::cli {

void printOut(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void printErr(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stderr); }

}  // namespace stockade::cli
