// Name keys for case-insensitive filesystems (name_fold.h).
#include "policy/name_fold.h"

#include <cstdint>

namespace stockade::policy {
namespace {

// Every code point outside ASCII whose NFD + full case folding is ASCII
// (Unicode 14's CaseFolding.txt, status C and F): what a casefold directory
// takes for the ASCII spelling.
struct AsciiFold {
  char32_t from;
  const char* to;
};
constexpr AsciiFold kAsciiFolds[] = {
    {0x00DF, "ss"}, {0x017F, "s"},  {0x037E, ";"},   {0x1E9E, "ss"},  {0x1FEF, "`"},  {0x212A, "k"}, {0xFB00, "ff"},
    {0xFB01, "fi"}, {0xFB02, "fl"}, {0xFB03, "ffi"}, {0xFB04, "ffl"}, {0xFB05, "st"}, {0xFB06, "st"},
};

// Default_Ignorable_Code_Point (DerivedCoreProperties.txt): dropped by the
// kernel's casefold comparison before Linux 6.13, so "\u200b.bashrc" was
// ".bashrc" there.
bool ignorable(char32_t c) {
  return c == 0x00AD || c == 0x034F || c == 0x061C || (c >= 0x115F && c <= 0x1160) || (c >= 0x17B4 && c <= 0x17B5) ||
         (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF || c == 0xFFA0 ||
         (c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A) ||
         (c >= 0xE0000 && c <= 0xE0FFF);
}

// The UTF-8 sequence at `s[i]` (not ASCII): its code point and length, or 0
// for bytes that are not one (kept as they are).
std::size_t decode(std::string_view s, std::size_t i, char32_t& out) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  char32_t c = b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + k]);
    if ((cont & 0xC0) != 0x80) return 0;
    c = (c << 6) | (cont & 0x3F);
  }
  // Overlong three- and four-byte forms, surrogates and beyond U+10FFFF are not UTF-8.
  if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  out = c;
  return n;
}

// True when `name` is its own key: lowercase ASCII, no trailing dot or space.
bool isKey(std::string_view name) {
  for (char ch : name)
    if ((ch >= 'A' && ch <= 'Z') || static_cast<unsigned char>(ch) >= 0x80) return false;
  if (name == "." || name == ".." || name.empty()) return true;
  return name.back() != '.' && name.back() != ' ';
}

}  // namespace

std::string_view foldedName(std::string_view name, std::string& storage) {
  if (isKey(name)) return name;
  storage.clear();
  for (std::size_t i = 0; i < name.size();) {
    const char ch = name[i];
    if (static_cast<unsigned char>(ch) < 0x80) {
      storage += ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
      ++i;
      continue;
    }
    char32_t c = 0;
    const std::size_t n = decode(name, i, c);
    if (n == 0) {
      storage += ch;
      ++i;
      continue;
    }
    i += n;
    if (ignorable(c)) continue;
    const char* to = nullptr;
    for (const auto& f : kAsciiFolds)
      if (f.from == c) to = f.to;
    if (to) storage += to;
    else storage.append(name.substr(i - n, n));
  }
  if (storage != "." && storage != "..") {
    const std::size_t keep = storage.find_last_not_of(". ");
    // A name of dots and spaces only stays as it is.
    if (keep != std::string::npos) storage.resize(keep + 1);
  }
  return storage;
}

std::string_view foldedPath(std::string_view path, std::string& out) {
  bool own = true;
  for (std::size_t i = 0; i < path.size() && own;) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    own = isKey(path.substr(i, j - i));
    i = j + 1;
  }
  if (own) return path;
  std::string part;
  out.clear();
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size();) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out += foldedName(path.substr(i, j - i), part);
    if (j < path.size()) out += '/';
    i = j + 1;
  }
  return out;
}

}  // namespace stockade::policy
