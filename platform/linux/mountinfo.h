// The mount table (/proc/self/mountinfo), and where an open file lies within
// its filesystem whatever mount it was reached through.
//
// Two paths can name one directory: a bind mount shows a tree (or any
// directory below it) at a second place, with the same device and inodes.
// A check of "is this path inside that tree" must then compare locations in
// the filesystem (device + path from the filesystem's root), not the paths.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace stockade::platform {

struct MountEntry {
  std::string device;      // "8:1" (major:minor), the same for every bind of one filesystem
  std::string root;        // the directory of the filesystem mounted here ("/" for the whole)
  std::string mountPoint;  // where, in this mount namespace
  std::string fsType;      // "ext4", "cgroup2", ...
  std::string superOptions;
  bool readOnly = false;       // the mount's own "ro"
  bool superReadOnly = false;  // the filesystem's "ro" (super options): read-only through every mount
  int id = -1;
};

// Every well-formed line of a mountinfo text (octal escapes undone).
std::vector<MountEntry> parseMountInfo(std::string_view text);
// This process's mount table (empty when /proc/self/mountinfo cannot be read).
std::vector<MountEntry> currentMounts();

struct FilesystemLocation {
  std::string device;  // major:minor
  std::string path;    // from the filesystem's root, "/" included
};

// Where the file or directory open as `fd` (O_PATH will do) lies in its
// filesystem, from /proc/self/fdinfo's mount id and the mount table. The
// error names what could not be read.
std::variant<FilesystemLocation, std::string> filesystemLocation(int fd);

}  // namespace stockade::platform
