#include "policy/dir_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace stockade::policy {
namespace {

constexpr std::size_t kMaxCachedDirectories = 50'000;
constexpr time_t kQuietSeconds = 2;
// Longest path looked up relative to a descriptor when a listing is reused.
constexpr std::size_t kMaxRelative = 1024;

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

// The entries of the open directory `fd`, read with getdents64 (no DIR
// stream: no fcntl probe, no allocation per directory). Null on a read error.
std::shared_ptr<const std::vector<DirEntry>> readEntries(int fd) {
  thread_local std::vector<char> buffer(32 * 1024);
  auto entries = std::make_shared<std::vector<DirEntry>>();
  for (;;) {
    ssize_t n = ::getdents64(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return nullptr;
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buffer.data() + off);
      off += e->d_reclen;
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      bool isDir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        isDir = ::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      entries->push_back({std::string(name), isDir});
    }
  }
  return entries;
}

}  // namespace

DirListing::DirListing(DirListing&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, -1)),
      relative_(std::move(other.relative_)),
      entries_(std::move(other.entries_)) {}

DirListing& DirListing::operator=(DirListing&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, -1);
    relative_ = std::move(other.relative_);
    entries_ = std::move(other.entries_);
  }
  return *this;
}

DirListing::~DirListing() {
  if (fd_ >= 0) ::close(fd_);
}

DirListing DirListing::open(int base, const std::string& relative, const std::string& path) {
  DirListing out;
  Cached cached{};
  {
    std::lock_guard lock(gMu);
    if (auto it = cache().find(path); gReuse && it != cache().end()) cached = it->second;
  }
  // Reuse: one fstatat() of the name against the cached identity, and no
  // descriptor -- subdirectories are then looked up relative to the nearest
  // ancestor that has one. Short relative paths only, so that a deep cached
  // tree never runs into ENAMETOOLONG.
  std::shared_ptr<const std::vector<DirEntry>> reusable;
  struct stat current {};
  if (cached.entries && relative.size() <= kMaxRelative &&
      ::fstatat(base, relative.c_str(), &current, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(current.st_mode) &&
      current.st_dev == cached.device && current.st_ino == cached.inode && sameTime(current.st_ctim, cached.ctime))
    reusable = std::move(cached.entries);
  if (reusable) {
    out.base_ = base;
    out.relative_ = relative;
    out.entries_ = std::move(reusable);
    return out;
  }
  // Read afresh. Identity and entries come from the same open directory, or
  // a rename racing between the two could file one directory's entries
  // under another's identity.
  out.fd_ = ::openat(base, relative.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out.fd_ < 0) {
    if (errno == EMFILE || errno == ENFILE) throw OutOfDescriptors{path};
    return out;
  }
  out.base_ = out.fd_;
  struct stat st {};
  if (::fstat(out.fd_, &st) != 0) return out;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  out.entries_ = readEntries(out.fd_);
  if (out.entries_ && st.st_ctim.tv_sec + kQuietSeconds < now.tv_sec) {
    std::lock_guard lock(gMu);
    if (cache().size() >= kMaxCachedDirectories) cache().clear();
    cache()[path] = Cached{st.st_dev, st.st_ino, st.st_ctim, out.entries_};
  }
  return out;
}

DirListing DirListing::child(std::string_view name, const std::string& path) const {
  if (!entries_) return {};
  if (fd_ >= 0) return open(fd_, std::string(name), path);
  std::string relative = relative_;
  relative += '/';
  relative += name;
  return open(base_, relative, path);
}

DirListing listDirectory(const std::string& dir) { return DirListing::open(AT_FDCWD, dir, dir); }

void setListingReuseForBenchmarks(bool enabled) {
  std::lock_guard lock(gMu);
  gReuse = enabled;
  cache().clear();
}

}  // namespace stockade::policy
