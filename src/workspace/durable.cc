#include "src/workspace/durable.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "src/workspace/sandbox_path.h"
#include "src/workspace/workspace_impl.h"

namespace stockade::workspace {

using platform::SysError;

std::optional<SysError> makeStateDirectory(const std::string& path) {
  std::string at;
  std::string_view rest = path;
  while (!rest.empty()) {
    auto slash = rest.find('/', 1);
    at.append(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) return SysError{"mkdir(" + quoteValue(at) + ", 0700)", errno};
  }
  return std::nullopt;
}

std::optional<SysError> syncFd(int fd, const std::string& what) {
  if (::fsync(fd) != 0) return SysError{"fsync(" + what + ")", errno};
  return std::nullopt;
}

std::optional<SysError> syncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError{"open(" + quoteValue(dir) + ", O_DIRECTORY)", errno};
  platform::UniqueFd owned(fd);
  return syncFd(fd, quoteValue(dir));
}

std::optional<SysError> writeDurably(const std::string& dir, const std::string& name, std::string_view bytes) {
  std::string temp = dir + "/" + temporaryName("." + name + ".tmp-");
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return SysError{"open(" + quoteValue(temp) + ", O_CREAT|O_EXCL)", errno};
  platform::UniqueFd owned(fd);
  auto fail = [&](SysError e) {
    ::unlink(temp.c_str());
    return e;
  };
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(SysError{"write(" + quoteValue(temp) + ")", errno});
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (auto e = syncFd(fd, quoteValue(temp))) return fail(*e);
  if (::rename(temp.c_str(), (dir + "/" + name).c_str()) != 0)
    return fail(SysError{"rename(" + quoteValue(temp) + ", " + quoteValue(dir + "/" + name) + ")", errno});
  return syncDirectory(dir);
}

std::optional<std::string> readSmallFile(const std::string& path, std::size_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  platform::UniqueFd owned(fd);
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > maxBytes) {
      errno = EFBIG;
      return std::nullopt;
    }
  }
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }

void Sha256::update(std::string_view bytes) { EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx_.get(), md, &len);
  std::string out;
  char h[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(h, sizeof h, "%02x", md[i]);
    out += h;
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256 s;
  s.update(bytes);
  return s.hex();
}

}  // namespace stockade::workspace
