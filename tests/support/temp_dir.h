// A temporary directory tree for tests, removed on destruction.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace stockade::testing {

// Removes `path` and everything beneath it, also directories this user owns
// but may not list (the daemon's workspaces root is mode 0300): each is made
// 0700 first when a plain removal fails. Errors are ignored (a test's tree).
inline void removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (!ec) return;
  struct Walk {
    static void open(const std::filesystem::path& dir) {
      ::chmod(dir.c_str(), 0700);
      std::error_code e;
      for (auto it = std::filesystem::directory_iterator(dir, e); !e && it != std::filesystem::directory_iterator();
           it.increment(e))
        if (it->is_directory(e) && !it->is_symlink(e)) open(it->path());
    }
  };
  Walk::open(path);
  std::filesystem::remove_all(path, ec);
}

class TempDir {
 public:
  // Under /var/tmp, not /tmp: a sandbox has a private /tmp, so host paths
  // under /tmp are invisible to children unless a policy makes them writable.
  TempDir() {
    std::string tmpl = "/var/tmp/stockade-test-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    // The real path: derive() resolves symlinks, so expectations must too.
    path_ = std::filesystem::canonical(tmpl).string();
  }
  ~TempDir() { removeTree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

  // Creates a file (and its parent directories) holding `content`.
  std::string file(const std::string& rel, const std::string& content = "") const {
    std::filesystem::path p = *this / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }
  std::string dir(const std::string& rel) const {
    std::filesystem::create_directories(*this / rel);
    return *this / rel;
  }
  std::string symlink(const std::string& target, const std::string& rel) const {
    std::filesystem::create_directories(std::filesystem::path(*this / rel).parent_path());
    std::filesystem::create_symlink(target, *this / rel);
    return *this / rel;
  }

 private:
  std::string path_;
};

}  // namespace stockade::testing
