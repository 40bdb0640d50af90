// The case registry and the inside helpers the case files share.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/security/redteam/redteam.h"
#include "tests/support/read_file.h"

namespace stockade::redteam {
namespace {

std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

}  // namespace

bool registerCases(std::vector<Case> cases) {
  for (auto& c : cases) {
    for (const auto& existing : registry())
      if (existing.name == c.name) {
        std::fprintf(stderr, "redteam: two cases named %.*s\n", static_cast<int>(c.name.size()), c.name.data());
        std::abort();
      }
    registry().push_back(std::move(c));
  }
  return true;
}

const std::vector<Case>& allCases() { return registry(); }

void cpuHeadroom(HostContext& h) {
  auto policy = nlohmann::json::parse(h.policy);
  policy["limits"]["cpuSeconds"] = 20;
  h.policy = policy.dump();
}

std::map<std::string, std::string> listing(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); it != std::filesystem::end(it); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    std::string entry = std::to_string(st.st_mode) + ":";
    if (S_ISREG(st.st_mode)) entry += testing::readWholeFile(it->path().string());
    if (S_ISLNK(st.st_mode)) entry += std::filesystem::read_symlink(it->path(), ec).string();
    out[it->path().string()] = entry;
  }
  return out;
}

std::string readFile(const std::string& path, int* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = errno;
    return {};
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  int saved = errno;
  ::close(fd);
  if (error) *error = n < 0 ? saved : 0;
  return out;
}

Verdict readsNothing(const std::string& path, std::string_view what) {
  int error = 0;
  std::string got = readFile(path, &error);
  if (!got.empty()) {
    std::printf("read: %s\n", got.c_str());
    return escaped(std::string(what) + " read " + std::to_string(got.size()) + " bytes");
  }
  if (error == 0) return held(std::string(what) + ": an empty mask");
  errno = error;
  return refused(-1, {ENOENT, EACCES}, what);
}

bool writeFile(const std::string& path, std::string_view content, int flags) {
  int fd = ::open(path.c_str(), (flags ? flags : O_WRONLY | O_CREAT | O_TRUNC) | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

int connectTcp(const char* address, int port, int family) {
  if (family == 0) family = std::string_view(address).find(':') != std::string_view::npos ? AF_INET6 : AF_INET;
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, address, &a->sin_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET6, address, &a->sin6_addr);
    len = sizeof *a;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

std::string proxyExchange(std::string_view request, std::size_t max) {
  int fd = connectTcp("127.0.0.1", 3128);
  if (fd < 0) return "connect to the proxy failed: " + errnoName(errno);
  std::string out;
  for (std::size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  char buf[8192];
  while (out.size() < max) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) != 1) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace stockade::redteam
