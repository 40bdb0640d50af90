#include "src/cli/policy_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace stockade::cli {

std::variant<SandboxPolicy, std::string> loadPolicyFile(const std::string& path) {
  constexpr std::size_t kLimit = 1 << 20;
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return path + ": cannot read: " + std::strerror(errno);
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  }
  if (text.size() > kLimit) return path + ": policy is larger than 1 MiB";
  auto parsed = SandboxPolicy::parse(text);
  if (auto* err = std::get_if<PolicyError>(&parsed)) return path + ": " + err->text();
  return std::get<SandboxPolicy>(std::move(parsed));
}

}  // namespace stockade::cli
