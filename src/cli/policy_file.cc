#include "src/cli/policy_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stockade::cli {
namespace {

constexpr std::size_t kLimit = 1 << 20;

// Reads `fd` to its end, or to one byte past the limit. With read(2) rather
// than a stream: no <iostream> in the CLI (src/cli/output.h).
bool readAll(int fd, std::string& text) {
  char buf[64 * 1024];
  while (text.size() <= kLimit) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::variant<SandboxPolicy, std::string> loadPolicyFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    if (!readAll(STDIN_FILENO, text)) return path + ": cannot read: " + std::strerror(errno);
  } else {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return path + ": cannot read: " + std::strerror(errno);
    bool ok = readAll(fd, text);
    int saved = errno;
    ::close(fd);
    if (!ok) return path + ": cannot read: " + std::strerror(saved);
  }
  if (text.size() > kLimit) return path + ": policy is larger than 1 MiB";
  auto parsed = SandboxPolicy::parse(text);
  if (auto* err = std::get_if<PolicyError>(&parsed)) return path + ": " + err->text();
  return std::get<SandboxPolicy>(std::move(parsed));
}

}  // namespace stockade::cli
