// Output for the CLI, without iostreams: <iostream>'s static initialiser
// (eight standard streams and the classic locale) cost every start of the
// CLI about 80 us -- a noticeable share of a short `stockade run`.
#pragma once

#include <string>
#include <string_view>

namespace stockade::cli {

void printOut(std::string_view text);  // stdout (buffered, flushed at exit)
// stderr, through terminalSafe(): a value in a message (a path, an argv the
// caller got from elsewhere, a child's traceback) never reaches the terminal
// as an escape sequence.
void printErr(std::string_view text);
// stderr as it is: stockade's own terminal control (a progress line's
// carriage return), or a program's own output (as `stockade run` passes it
// on); never a value in a message.
void printErrAsIs(std::string_view control);
// Each line of `text` on stderr with `prefix` before it ("stockade run: "),
// so a message of several lines reads as stockade's, line by line.
void printErrLines(std::string_view prefix, std::string_view text);
// `text` with every control character but newline and tab -- C0, DEL, and the
// C1 controls U+0080..U+009F -- written as \xNN, byte by byte.
std::string terminalSafe(std::string_view text);

}  // namespace stockade::cli
