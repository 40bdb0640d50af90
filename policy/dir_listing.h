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
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace stockade::policy {

struct DirEntry {
  std::string name;
  bool isDir = false;  // a real directory, not a symlink to one
};

// The entries of `dir` (without "." and ".."), or nullptr when it is not a
// directory that can be opened.
std::shared_ptr<const std::vector<DirEntry>> listDirectory(const std::string& dir);

// Benchmarks only: turn reuse off (every listing is read afresh) or back on.
void setListingReuseForBenchmarks(bool enabled);

}  // namespace stockade::policy
