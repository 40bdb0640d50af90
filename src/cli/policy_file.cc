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

std::string PolicyFileError::lines() const {
  std::string out = file + ": " + error.first();
  for (const auto& more : error.more) out += "\n" + file + ": " + more.first();
  return out;
}

std::variant<SandboxPolicy, PolicyFileError> loadPolicyFile(const std::string& path) {
  auto failed = [&](std::string message) { return PolicyFileError{path, {"", std::move(message), {}}}; };
  std::string text;
  if (path == "-") {
    if (!readAll(STDIN_FILENO, text)) return failed(std::string("cannot read: ") + std::strerror(errno));
  } else {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return failed(std::string("cannot read: ") + std::strerror(errno));
    bool ok = readAll(fd, text);
    int saved = errno;
    ::close(fd);
    if (!ok) return failed(std::string("cannot read: ") + std::strerror(saved));
  }
  if (text.size() > kLimit) return failed("policy is larger than 1 MiB");
  auto parsed = SandboxPolicy::parse(text);
  if (auto* err = std::get_if<PolicyError>(&parsed)) return PolicyFileError{path, std::move(*err)};
  return std::get<SandboxPolicy>(std::move(parsed));
}

std::vector<std::string> policyNoteLines(const std::string& path, const SandboxPolicy& policy) {
  std::string ignored, stronger;
  for (const auto& n : policy.notes()) {
    std::string& list = n.kind == PolicyNote::Kind::kNotApplicable ? ignored : stronger;
    list += (list.empty() ? "" : "; ") + n.path + " (" + n.why + ")";
  }
  std::vector<std::string> out;
  if (!ignored.empty())
    out.push_back("warning: " + path + ": sandbox-runtime settings that do not apply to stockade, ignored: " + ignored);
  if (!stronger.empty()) out.push_back("note: " + path + ": enforced more strictly than asked: " + stronger);
  return out;
}

}  // namespace stockade::cli
