#include "src/cli/output.h"

#include <cstdio>
#include <string>

namespace stockade::cli {

void printOut(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::string terminalSafe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) { out.append("\\x").push_back(kHex[c >> 4]), out.push_back(kHex[c & 0xf]); };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F, the C1 controls (CSI is U+009B)
      escape(c);
      escape(next);
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

void printErrAsIs(std::string_view control) { std::fwrite(control.data(), 1, control.size(), stderr); }

void printErr(std::string_view text) {
  const std::string safe = terminalSafe(text);
  std::fwrite(safe.data(), 1, safe.size(), stderr);
}

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
