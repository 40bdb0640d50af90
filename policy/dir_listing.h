// Directory listings for the mandatory-deny scan, reused while a directory
// provably has not changed.
//
// Every change to a directory's entries (create, unlink, rename in or out)
// sets its ctime to the current time, and no user can set ctime. A listing is
// therefore reused only when the directory's device, inode and ctime are the
// same as when it was read AND that ctime was already more than two seconds
// old at the read: a change during or after the read then necessarily gives a
// different ctime, whatever the clock's granularity. Process-wide, bounded,
// thread-safe.
//
// A tree is walked relative to open directory descriptors (one openat() of a
// single name per directory, never a lookup of the full path): reading a
// directory costs about half of what a full-path lstat+open did, and a rename
// of an ancestor during the walk cannot redirect it. A reused listing costs
// one fstatat() of its path relative to the nearest ancestor that was read
// afresh (as the full-path lstat did before), and holds no descriptor.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

struct DirEntry {
  std::string name;
  bool isDir = false;  // a real directory, not a symlink to one
};

// A directory's entries (without "." and ".."), and how to reach its
// subdirectories: through its own descriptor when it was read afresh, else
// relative to an ancestor's. Move-only; an ancestor's listing must outlive
// its descendants' (as in a recursive walk).
class DirListing {
 public:
  DirListing() = default;
  DirListing(DirListing&& other) noexcept;
  DirListing& operator=(DirListing&& other) noexcept;
  DirListing(const DirListing&) = delete;
  DirListing& operator=(const DirListing&) = delete;
  ~DirListing();

  // False when the directory could not be opened or read (it does not exist,
  // is not a directory, or is a symlink): there is nothing to list.
  explicit operator bool() const { return entries_ != nullptr; }
  const std::vector<DirEntry>& entries() const { return *entries_; }

  // The subdirectory `name` of this directory; `path` is its full path (the
  // cache key).
  DirListing child(std::string_view name, const std::string& path) const;

  // Thrown when the process runs out of file descriptors during a walk
  // (a tree deeper than RLIMIT_NOFILE): the caller must not treat the
  // directory as empty.
  struct OutOfDescriptors {
    std::string path;
  };

 private:
  friend DirListing listDirectory(const std::string& dir);
  static DirListing open(int base, const std::string& relative, const std::string& path);

  int fd_ = -1;       // owned; -1 when the listing was reused from the cache
  int base_ = -1;     // fd_, or (reused) the nearest ancestor's descriptor or AT_FDCWD, not owned
  std::string relative_;  // (reused) this directory's path relative to base_
  std::shared_ptr<const std::vector<DirEntry>> entries_;
};

// The directory at the absolute path `dir`, opened without following a
// symlink in its last component.
DirListing listDirectory(const std::string& dir);

// Benchmarks only: turn reuse off (every listing is read afresh) or back on.
void setListingReuseForBenchmarks(bool enabled);

}  // namespace stockade::policy
