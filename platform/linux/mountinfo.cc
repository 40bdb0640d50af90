#include "platform/linux/mountinfo.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace stockade::platform {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeOctal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

std::vector<MountEntry> parseMountInfo(std::string_view text) {
  std::vector<MountEntry> out;
  for (auto line : split(text, '\n')) {
    auto fields = split(line, ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash + 3 >= fields.size()) continue;
    MountEntry m;
    if (std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), m.id).ec != std::errc()) continue;
    m.device = std::string(fields[2]);
    m.root = unescapeOctal(fields[3]);
    m.mountPoint = unescapeOctal(fields[4]);
    m.fsType = std::string(fields[dash + 1]);
    m.superOptions = std::string(fields[dash + 3]);
    for (auto option : split(fields[5], ','))
      if (option == "ro") m.readOnly = true;
    for (auto option : split(m.superOptions, ','))
      if (option == "ro") m.superReadOnly = true;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MountEntry> currentMounts() { return parseMountInfo(readAll("/proc/self/mountinfo")); }

std::variant<FilesystemLocation, std::string> filesystemLocation(int fd) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  char target[4096];
  ssize_t n = ::readlink(self.c_str(), target, sizeof target);
  if (n < 0 || static_cast<std::size_t>(n) == sizeof target)
    return "readlink(" + self + ") failed: " + (n < 0 ? std::strerror(errno) : "too long");
  const std::string path(target, static_cast<std::size_t>(n));
  if (path.empty() || path.front() != '/') return path + " (the descriptor's path) is not reachable from this root";
  int mountId = -1;
  std::istringstream info(readAll("/proc/self/fdinfo/" + std::to_string(fd)));
  for (std::string line; std::getline(info, line);)
    if (line.starts_with("mnt_id:")) mountId = std::atoi(line.c_str() + 7);
  if (mountId < 0) return "/proc/self/fdinfo/" + std::to_string(fd) + " names no mount id";
  for (const auto& m : parseMountInfo(readAll("/proc/self/mountinfo"))) {
    if (m.id != mountId) continue;
    if (!within(path, m.mountPoint)) return path + " is not below its mount point " + m.mountPoint;
    std::string below = m.mountPoint == "/" ? path : path.substr(m.mountPoint.size());
    std::string located = m.root == "/" ? (below.empty() ? "/" : below) : m.root + below;
    return FilesystemLocation{m.device, located};
  }
  return "mount " + std::to_string(mountId) + " is not in /proc/self/mountinfo";
}

}  // namespace stockade::platform
