// Output for the CLI, without iostreams: <iostream>'s static initialiser
// (eight standard streams and the classic locale) cost every start of the
// CLI about 80 us -- a noticeable share of a short `stockade run`.
#pragma once

#include <string_view>

namespace stockade::cli {

void printOut(std::string_view text);  // stdout (buffered, flushed at exit)
void printErr(std::string_view text);  // stderr
// Each line of `text` on stderr with `prefix` before it ("stockade run: "),
// so a message of several lines reads as stockade's, line by line.
void printErrLines(std::string_view prefix, std::string_view text);

}  // namespace stockade::cli
