#include "src/workspace/sandbox_path.h"

#include <cstdio>

namespace stockade::workspace {

std::string_view SandboxPath::leaf() const noexcept {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string_view(rel) : std::string_view(rel).substr(slash + 1);
}

std::string_view SandboxPath::parent() const noexcept {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string_view() : std::string_view(rel).substr(0, slash);
}

std::string SandboxPath::text() const { return sandboxPathOf(rel); }

std::string sandboxPathOf(std::string_view rel) {
  std::string out(kSandboxRoot);
  if (!rel.empty()) out.append("/").append(rel);
  return out;
}

std::string joinRel(std::string_view rel, std::string_view name) {
  std::string out(rel);
  if (!out.empty()) out += '/';
  out += name;
  return out;
}

std::string quoteValue(std::string_view value) {
  constexpr std::size_t kMax = 200;
  std::string out = "\"";
  for (std::size_t i = 0; i < value.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += value.size() > kMax ? "\"..." : "\"";
  return out;
}

WorkspaceError makeError(WorkspaceErrorCode code, std::string message) {
  return WorkspaceError{.code = code, .message = std::move(message)};
}

std::variant<SandboxPath, WorkspaceError> parseSandboxPath(std::string_view path, std::string_view field) {
  auto invalid = [&](const std::string& why) {
    return makeError(WorkspaceErrorCode::kInvalidPath,
                     std::string(field) + ": " + quoteValue(path) + " " + why +
                         "; give an absolute path beneath /workspace, such as \"/workspace/src/main.c\"");
  };
  if (path.find('\0') != std::string_view::npos) return invalid("contains a NUL byte");
  if (path.size() > kMaxPathBytes) return invalid("is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  if (!path.starts_with(kSandboxRoot) ||
      (path.size() > kSandboxRoot.size() && path[kSandboxRoot.size()] != '/'))
    return invalid(path.starts_with("/") ? "is outside the workspace" : "is not an absolute path");
  SandboxPath out;
  std::string_view rest = path.substr(kSandboxRoot.size());
  while (!rest.empty()) {
    auto slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") return invalid("has a \"..\" component");
    if (part.size() > kMaxNameBytes)
      return invalid("has a component longer than " + std::to_string(kMaxNameBytes) + " bytes");
    out.rel = joinRel(out.rel, part);
  }
  return out;
}

}  // namespace stockade::workspace
