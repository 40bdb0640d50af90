// The whole content of a file ("" when it cannot be read).
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace stockade::testing {

inline std::string readWholeFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace stockade::testing
