#include "policy/dir_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include <mutex>
#include <unordered_map>

namespace stockade::policy {
namespace {

constexpr std::size_t kMaxCachedDirectories = 50'000;
constexpr time_t kQuietSeconds = 2;

struct Cached {
  dev_t device;
  ino_t inode;
  timespec ctime;
  std::shared_ptr<const std::vector<DirEntry>> entries;
};

std::mutex gMu;
bool gReuse = true;  // guarded by gMu
std::unordered_map<std::string, Cached>& cache() {
  static auto* c = new std::unordered_map<std::string, Cached>();  // never destroyed: used at exit
  return *c;
}

bool sameTime(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

// Reads the directory `fd` refers to (and takes ownership of it).
std::shared_ptr<const std::vector<DirEntry>> readDirectory(const std::string& dir, int fd) {
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return nullptr;
  }
  auto entries = std::make_shared<std::vector<DirEntry>>();
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    bool isDir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      std::string path = dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
      isDir = ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    entries->push_back({std::string(name), isDir});
  }
  ::closedir(d);
  return entries;
}

}  // namespace

std::shared_ptr<const std::vector<DirEntry>> listDirectory(const std::string& dir) {
  // Fast path: the identity the path has now, against the cache.
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return nullptr;
  {
    std::lock_guard lock(gMu);
    auto it = cache().find(dir);
    if (gReuse && it != cache().end() && it->second.device == st.st_dev && it->second.inode == st.st_ino &&
        sameTime(it->second.ctime, st.st_ctim))
      return it->second.entries;
  }
  // Miss: identity and entries must come from the same open directory, or a
  // rename racing between the two could file one directory's entries under
  // another's identity.
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return nullptr;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return nullptr;
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  auto entries = readDirectory(dir, fd);
  if (!entries) return nullptr;
  if (st.st_ctim.tv_sec + kQuietSeconds < now.tv_sec) {
    std::lock_guard lock(gMu);
    if (cache().size() >= kMaxCachedDirectories) cache().clear();
    cache()[dir] = Cached{st.st_dev, st.st_ino, st.st_ctim, entries};
  }
  return entries;
}

void setListingReuseForBenchmarks(bool enabled) {
  std::lock_guard lock(gMu);
  gReuse = enabled;
  cache().clear();
}

}  // namespace stockade::policy
