// Files that must survive a crash once a call returns: written whole under a
// temporary name, fsync()ed, renamed into place, and the directory fsync()ed
// (so the rename itself is on disk). And SHA-256 over streams.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "platform/sys_error.h"
#include "platform/unique_fd.h"

namespace stockade::workspace {

// Creates `path` (and missing parents) as directories of mode 0700.
std::optional<platform::SysError> makeStateDirectory(const std::string& path);
// fsync(fd); the error names `what`.
std::optional<platform::SysError> syncFd(int fd, const std::string& what);
// fsync() of the directory at `dir`.
std::optional<platform::SysError> syncDirectory(const std::string& dir);
// Writes `bytes` to `dir`/`name` durably (temporary, fsync, rename, fsync of the directory).
std::optional<platform::SysError> writeDurably(const std::string& dir, const std::string& name, std::string_view bytes);
// The whole of a small file; nullopt with errno set when it cannot be read.
std::optional<std::string> readSmallFile(const std::string& path, std::size_t maxBytes = 1 << 20);

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // Lower-case hex; the hash cannot be updated afterwards.
  std::string hex();

 private:
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

// Lower-case hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

}  // namespace stockade::workspace
