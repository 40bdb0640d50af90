// A full listing of a directory tree, for "nothing changed" assertions:
// every entry's type, mode, size and content (SHA-256) or link target,
// without following symlinks.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace stockade::testing {

inline std::string sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  char hex[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", md[i]);
    out += hex;
  }
  return out;
}

inline std::string readAll(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// rel path -> "file 0644 12 <sha256>", "dir 0755", "symlink -> target", "other 010644".
inline std::map<std::string, std::string> listTree(const std::string& root) {
  std::map<std::string, std::string> out;
  std::vector<std::string> todo{""};
  while (!todo.empty()) {
    std::string rel = todo.back();
    todo.pop_back();
    std::string dirPath = rel.empty() ? root : root + "/" + rel;
    DIR* d = ::opendir(dirPath.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string childRel = rel.empty() ? name : rel + "/" + name;
      std::string path = root + "/" + childRel;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;
      char mode[16];
      std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
      if (S_ISDIR(st.st_mode)) {
        out[childRel] = std::string("dir ") + mode;
        todo.push_back(childRel);
      } else if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = ::readlink(path.c_str(), target, sizeof target);
        out[childRel] = "symlink -> " + std::string(target, n > 0 ? static_cast<std::size_t>(n) : 0);
      } else if (S_ISREG(st.st_mode)) {
        int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        std::string data = fd >= 0 ? readAll(fd) : "";
        if (fd >= 0) ::close(fd);
        out[childRel] = std::string("file ") + mode + " " + std::to_string(st.st_size) + " " + sha256Hex(data);
      } else {
        char other[16];
        std::snprintf(other, sizeof other, "%06o", st.st_mode);
        out[childRel] = std::string("other ") + other;
      }
    }
    ::closedir(d);
  }
  return out;
}

}  // namespace stockade::testing
