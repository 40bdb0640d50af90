// `sandbox_probe write-ops [CASE-PREFIX]`: runs a table of write-shaped calls
// in the current directory and prints one line per case -- what the call returned, its errno, and what it
// left behind -- so that the same run natively and inside a sandbox can be
// compared line by line (the way gVisor runs its syscall tests against Linux
// too). Each case works in a fresh subdirectory of its own; output names only
// relative paths, modes, sizes, contents and fixed times, never inode numbers
// or absolute paths. Cases whose result depends on capabilities the sandbox
// never has are skipped as root.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string errname(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : std::to_string(e);
}

// "rc=<n>" or "rc=-1 errno=<NAME>".
std::string rc(long value) {
  if (value >= 0) return "rc=ok";
  return "rc=-1 errno=" + errname(errno);
}

void put(const char* path, const char* content) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!::write(fd, content, std::strlen(content));
    ::close(fd);
  }
}

// What is at `path` now: type, permission bits, size or link target, content.
std::string what(const char* path) {
  struct stat st;
  if (::lstat(path, &st) != 0) return std::string(path) + ":missing";
  char buf[256];
  std::string out = std::string(path) + ":";
  if (S_ISLNK(st.st_mode)) {
    ssize_t n = ::readlink(path, buf, sizeof buf - 1);
    out += "link->" + std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    return out;
  }
  std::snprintf(buf, sizeof buf, "%s%04o", S_ISDIR(st.st_mode) ? "dir" : S_ISFIFO(st.st_mode) ? "fifo" : S_ISREG(st.st_mode) ? "file" : "other",
                st.st_mode & 07777);
  out += buf;
  if (S_ISREG(st.st_mode)) {
    out += " size=" + std::to_string(st.st_size) + " links=" + std::to_string(st.st_nlink);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      ::close(fd);
      if (n > 0) out += " \"" + std::string(buf, static_cast<std::size_t>(n)) + "\"";
    }
  }
  return out;
}

std::string mtime(const char* path) {
  struct stat st;
  if (::lstat(path, &st) != 0) return "mtime:missing";
  return "mtime=" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

long openat2(int dirfd, const char* path, std::uint64_t flags, std::uint64_t mode, std::uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

struct Case {
  const char* name;
  std::function<std::string()> run;  // in a fresh directory; returns the line after the name
  bool rootless = false;             // its result depends on lacking capabilities: skipped as root
};

std::string openClose(const char* path, int flags, mode_t mode = 0644) {
  long fd = ::open(path, flags | O_CLOEXEC, mode);
  std::string r = rc(fd);
  if (fd >= 0) ::close(static_cast<int>(fd));
  return r;
}

std::vector<Case> cases() {
  return {
      // --- open, openat, creat, openat2 ----------------------------------
      {"create", [] { std::string r = openClose("f", O_WRONLY | O_CREAT, 0666);
         return r + " " + what("f"); }},
      {"create-umask-077", [] {
         ::umask(077);
         std::string r = openClose("f", O_WRONLY | O_CREAT, 0666);
         return r + " " + what("f");
       }},
      // The mask known for the thread that set it, and read for every other:
      // set twice, by a forked child of the setter, after a forked child set its
      // own, after another thread set it.
      {"create-umask-set-twice", [] {
         ::umask(077);
         ::umask(027);
         std::string r = openClose("f", O_WRONLY | O_CREAT, 0666);
         return r + " " + what("f");
       }},
      {"create-umask-077-by-a-forked-child", [] {
         ::umask(077);
         pid_t pid = ::fork();
         if (pid == 0) {
           int fd = ::open("f", O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
           ::_exit(fd >= 0 ? 0 : 1);
         }
         int status = -1;
         if (pid > 0) ::waitpid(pid, &status, 0);
         return "child=" + std::to_string(status) + " " + what("f");
       }},
      {"create-while-a-forked-child-has-set-umask-077", [] {
         int set[2], done[2];
         if (::pipe(set) != 0 || ::pipe(done) != 0) return std::string("pipe failed");
         pid_t pid = ::fork();
         if (pid == 0) {
           ::umask(077);
           char c = 'x';
           (void)!::write(set[1], &c, 1);
           (void)!::read(done[0], &c, 1);  // alive while the parent creates
           ::_exit(0);
         }
         char c = 0;
         if (pid > 0) (void)!::read(set[0], &c, 1);
         std::string r = openClose("f", O_WRONLY | O_CREAT, 0666);
         (void)!::write(done[1], &c, 1);
         if (pid > 0) ::waitpid(pid, nullptr, 0);
         for (int fd : {set[0], set[1], done[0], done[1]}) ::close(fd);
         return r + " " + what("f");
       }},
      {"create-umask-077-set-by-another-thread", [] {
         std::thread([] { ::umask(077); }).join();
         std::string r = openClose("f", O_WRONLY | O_CREAT, 0666);
         return r + " " + what("f");
       }},
      {"creat", [] {
         long fd = ::creat("f", 0640);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         return r + " " + what("f");
       }},
      {"create-excl-existing", [] {
         put("f", "old");
         std::string r = openClose("f", O_WRONLY | O_CREAT | O_EXCL);
         return r + " " + what("f");
       }},
      {"create-excl-dangling-symlink", [] {
         ::symlink("nowhere", "l");
         std::string r = openClose("l", O_WRONLY | O_CREAT | O_EXCL);
         return r + " " + what("nowhere");
       }},
      {"create-through-dangling-symlink", [] {
         ::symlink("target", "l");
         std::string r = openClose("l", O_WRONLY | O_CREAT);
         return r + " " + what("target") + " " + what("l");
       }},
      {"create-through-symlink-to-dir-entry", [] {
         ::mkdir("d", 0755);
         ::symlink("d/target", "l");
         std::string r = openClose("l", O_WRONLY | O_CREAT);
         return r + " " + what("d/target");
       }},
      {"nofollow-symlink", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r = openClose("l", O_WRONLY | O_NOFOLLOW);
         return r + " " + what("f");
       }},
      {"create-nofollow-dangling", [] {
         ::symlink("target", "l");
         std::string r = openClose("l", O_WRONLY | O_CREAT | O_NOFOLLOW);
         return r + " " + what("target");
       }},
      {"write-missing", [] { return openClose("nope", O_WRONLY); }},
      {"write-directory", [] {
         ::mkdir("d", 0755);
         return openClose("d", O_WRONLY);
       }},
      {"create-trailing-slash", [] { std::string r = openClose("f/", O_WRONLY | O_CREAT);
         return r + " " + what("f"); }},
      {"create-missing-parent", [] { return openClose("no/f", O_WRONLY | O_CREAT); }},
      {"create-under-a-file", [] {
         put("f", "x");
         return openClose("f/x", O_WRONLY | O_CREAT);
       }},
      {"o-directory-on-a-file", [] {
         put("f", "x");
         return openClose("f", O_RDWR | O_DIRECTORY);
       }},
      {"append", [] {
         put("f", "a");
         long fd = ::open("f", O_WRONLY | O_APPEND | O_CLOEXEC);
         std::string r = rc(fd);
         if (fd >= 0) {
           ::lseek(static_cast<int>(fd), 0, SEEK_SET);
           (void)!::write(static_cast<int>(fd), "b", 1);
           r += ::fcntl(static_cast<int>(fd), F_GETFL) & O_APPEND ? " append" : " no-append";
           ::close(static_cast<int>(fd));
         }
         return r + " " + what("f");
       }},
      {"truncate-on-open", [] {
         put("f", "abc");
         std::string r = openClose("f", O_WRONLY | O_TRUNC);
         return r + " " + what("f");
       }},
      {"read-back", [] {
         long fd = ::open("f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
         std::string r = rc(fd);
         if (fd >= 0) {
           char buf[8] = {};
           (void)!::write(static_cast<int>(fd), "xy", 2);
           ::lseek(static_cast<int>(fd), 0, SEEK_SET);
           ssize_t got = ::read(static_cast<int>(fd), buf, sizeof buf);
           r += " read=" + std::to_string(got) + ":" + buf;
           r += " accmode=" + std::to_string(::fcntl(static_cast<int>(fd), F_GETFL) & O_ACCMODE);
           ::close(static_cast<int>(fd));
         }
         return r;
       }},
      {"cloexec", [] {
         int a = ::open("a", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
         int b = ::open("b", O_WRONLY | O_CREAT, 0644);
         std::string r = "a=" + std::to_string(::fcntl(a, F_GETFD) & FD_CLOEXEC) +
                         " b=" + std::to_string(::fcntl(b, F_GETFD) & FD_CLOEXEC);
         ::close(a);
         ::close(b);
         return r;
       }},
      {"tmpfile-linked-through-proc", [] {
         long fd = ::open(".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
         std::string r = rc(fd);
         if (fd >= 0) {
           (void)!::write(static_cast<int>(fd), "t", 1);
           std::string self = "/proc/self/fd/" + std::to_string(fd);
           r += " link:" + rc(::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, "named", AT_SYMLINK_FOLLOW));
           ::close(static_cast<int>(fd));
         }
         return r + " " + what("named");
       }},
      {"tmpfile-excl-cannot-be-linked", [] {
         long fd = ::open(".", O_TMPFILE | O_WRONLY | O_EXCL | O_CLOEXEC, 0600);
         std::string r = rc(fd);
         if (fd >= 0) {
           std::string self = "/proc/self/fd/" + std::to_string(fd);
           r += " link:" + rc(::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, "named", AT_SYMLINK_FOLLOW));
           ::close(static_cast<int>(fd));
         }
         return r + " " + what("named");
       }},
      {"tmpfile-in-a-subdirectory", [] {
         ::mkdir("d", 0755);
         long fd = ::open("d", O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         return r;
       }},
      {"openat-dirfd", [] {
         ::mkdir("sub", 0755);
         int dir = ::open("sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         long fd = ::openat(dir, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         long up = ::openat(dir, "../g", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
         r += " up:" + rc(up);
         if (up >= 0) ::close(static_cast<int>(up));
         ::close(dir);
         return r + " " + what("sub/f") + " " + what("g");
       }},
      {"openat2-create", [] {
         long fd = openat2(AT_FDCWD, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0640, 0);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         return r + " " + what("f");
       }},
      {"openat2-unknown-flag", [] { return rc(openat2(AT_FDCWD, "f", O_WRONLY | O_CREAT | (1ULL << 40), 0644, 0)); }},
      {"openat2-mode-without-create", [] {
         put("f", "x");
         return rc(openat2(AT_FDCWD, "f", O_WRONLY, 0644, 0));
       }},
      {"openat2-beneath", [] {
         ::mkdir("sub", 0755);
         int dir = ::open("sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         long fd = openat2(dir, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_BENEATH);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         std::string up = rc(openat2(dir, "../g", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_BENEATH));
         std::string abs = rc(openat2(dir, "/h", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_BENEATH));
         ::close(dir);
         return r + " up:" + up + " abs:" + abs + " " + what("sub/f") + " " + what("g");
       }},
      {"openat2-in-root", [] {
         ::mkdir("sub", 0755);
         int dir = ::open("sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         long fd = openat2(dir, "/h", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_IN_ROOT);
         std::string r = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         long up = openat2(dir, "../../i", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_IN_ROOT);
         r += " up:" + rc(up);
         if (up >= 0) ::close(static_cast<int>(up));
         ::close(dir);
         return r + " " + what("sub/h") + " " + what("sub/i");
       }},
      {"openat2-no-symlinks", [] {
         ::mkdir("sub", 0755);
         ::symlink("sub", "l");
         ::symlink("t", "dangling");
         std::string through = rc(openat2(AT_FDCWD, "l/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_NO_SYMLINKS));
         std::string last = rc(openat2(AT_FDCWD, "dangling", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_NO_SYMLINKS));
         long fd = openat2(AT_FDCWD, "sub/ok", O_WRONLY | O_CREAT | O_CLOEXEC, 0644, RESOLVE_NO_SYMLINKS);
         std::string ok = rc(fd);
         if (fd >= 0) ::close(static_cast<int>(fd));
         return through + " " + last + " " + ok + " " + what("sub/f") + " " + what("t");
       }},
      {"symlink-loop", [] {
         ::symlink("b", "a");
         ::symlink("a", "b");
         return openClose("a", O_WRONLY | O_CREAT);
       }},
      {"dot-dot", [] {
         ::mkdir("a", 0755);
         std::string r = openClose("a/../f", O_WRONLY | O_CREAT);
         return r + " " + what("f");
       }},
      {"name-too-long", [] { return openClose(std::string(300, 'n').c_str(), O_WRONLY | O_CREAT); }},
      {"rdonly-creat-existing", [] {
         put("f", "x");
         std::string r = openClose("f", O_RDONLY | O_CREAT);
         return r + " " + what("f");
       }},
      {"rdonly-creat-new", [] { std::string r = openClose("f", O_RDONLY | O_CREAT, 0644);
         return r + " " + what("f"); }},
      {"reopen-through-proc-self-fd", [] {
         put("f", "abc");
         int fd = ::open("f", O_RDWR | O_CLOEXEC);
         std::string self = "/proc/self/fd/" + std::to_string(fd);
         long again = ::open(self.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
         std::string r = rc(again);
         if (again >= 0) {
           (void)!::write(static_cast<int>(again), "z", 1);
           ::close(static_cast<int>(again));
         }
         ::close(fd);
         return r + " " + what("f");
       }},
      {"write-a-read-only-file", [] {
         put("f", "x");
         ::chmod("f", 0444);
         return openClose("f", O_WRONLY);
       }, true},
      // --- mkdir, mknod, symlink ------------------------------------------
      {"mkdir", [] { std::string r = rc(::mkdir("d", 0777));
         return r + " " + what("d"); }},
      {"mkdir-existing", [] {
         ::mkdir("d", 0755);
         return rc(::mkdir("d", 0755));
       }},
      {"mkdir-over-a-file", [] {
         put("f", "x");
         return rc(::mkdir("f", 0755));
       }},
      {"mkdir-over-a-dangling-symlink", [] {
         ::symlink("nowhere", "l");
         std::string r = rc(::mkdir("l", 0755));
         return r + " " + what("nowhere");
       }},
      // A name made or removed is never followed, a trailing slash or not:
      // the symlink itself is there (EEXIST), and its target is left alone.
      {"mkdir-dangling-symlink-trailing-slash", [] {
         ::symlink("nowhere", "l");
         std::string r = rc(::mkdir("l/", 0755));
         return r + " " + what("nowhere");
       }},
      {"mkdir-existing-file-trailing-slash", [] {
         put("f", "x");
         return rc(::mkdir("f/", 0755));
       }},
      {"link-onto-a-symlink-trailing-slash", [] {
         put("f", "x");
         ::symlink("f", "l");
         return rc(::link("f", "l/"));
       }},
      {"create-excl-symlink-to-a-dir-trailing-slash", [] {
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         return rc(::open("l/", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
       }},
      {"create-symlink-to-a-file-trailing-slash", [] {
         put("f", "x");
         ::symlink("f", "l");
         return rc(::open("l/", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) + " " + what("f");
       }},
      // A dangling symlink followed under RESOLVE_IN_ROOT / RESOLVE_BENEATH:
      // its target made (from the dirfd), or EXDEV for an absolute one.
      {"openat2-in-root-through-a-dangling-symlink", [] {
         ::mkdir("r", 0755);
         ::symlink("/made", "r/abs");
         ::symlink("../made-rel", "r/rel");
         int dir = ::open("r", O_PATH | O_DIRECTORY | O_CLOEXEC);
         open_how how{};
         how.flags = O_WRONLY | O_CREAT | O_CLOEXEC;
         how.mode = 0600;
         how.resolve = RESOLVE_IN_ROOT;
         std::string r = rc(::syscall(SYS_openat2, dir, "abs", &how, sizeof how));
         r += " " + rc(::syscall(SYS_openat2, dir, "rel", &how, sizeof how));
         how.resolve = RESOLVE_BENEATH;
         ::symlink("/made-beneath", "r/abs2");
         r += " " + rc(::syscall(SYS_openat2, dir, "abs2", &how, sizeof how));
         ::close(dir);
         return r + " " + what("r/made") + " " + what("r/made-rel") + " " + what("made-rel");
       }},
      {"openat2-confined-trailing-slash-on-a-file", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r;
         for (std::uint64_t resolve : {RESOLVE_BENEATH, RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS}) {
           for (const char* name : {"f/", "l/"}) {
             open_how how{};
             how.flags = O_WRONLY | O_CLOEXEC;
             how.resolve = resolve;
             long fd = ::syscall(SYS_openat2, AT_FDCWD, name, &how, sizeof how);
             r += rc(fd) + " ";
             if (fd >= 0) ::close(static_cast<int>(fd));
           }
         }
         return r + what("f");
       }},
      {"openat2-no-magiclinks-through-proc-self-cwd", [] {
         open_how how{};
         how.flags = O_WRONLY | O_CREAT | O_CLOEXEC;
         how.mode = 0600;
         how.resolve = RESOLVE_NO_MAGICLINKS;
         return rc(::syscall(SYS_openat2, AT_FDCWD, "/proc/self/cwd/z", &how, sizeof how)) + " " + what("z");
       }},
      {"mkdir-missing-parent", [] { return rc(::mkdir("no/d", 0755)); }},
      {"mkdir-trailing-slash", [] { std::string r = rc(::mkdir("d/", 0700));
         return r + " " + what("d"); }},
      {"mkdir-dot", [] {
         ::mkdir("d", 0755);
         return rc(::mkdir("d/.", 0755));
       }},
      {"mkdirat", [] {
         ::mkdir("sub", 0755);
         int dir = ::open("sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         std::string r = rc(::mkdirat(dir, "d", 0750));
         ::close(dir);
         return r + " " + what("sub/d");
       }},
      {"mkfifo", [] { std::string r = rc(::mkfifo("p", 0666));
         return r + " " + what("p"); }},
      {"mknod-regular", [] { std::string r = rc(::mknod("n", S_IFREG | 0600, 0));
         return r + " " + what("n"); }},
      {"symlink", [] { std::string r = rc(::symlink("some/target", "l"));
         return r + " " + what("l"); }},
      {"symlink-existing", [] {
         put("f", "x");
         std::string r = rc(::symlink("t", "f"));
         return r + " " + what("f");
       }},
      {"symlink-empty-target", [] { return rc(::symlink("", "l")); }},
      {"symlinkat", [] {
         ::mkdir("sub", 0755);
         int dir = ::open("sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         std::string r = rc(::symlinkat("../x", dir, "l"));
         ::close(dir);
         return r + " " + what("sub/l");
       }},
      // --- unlink, rmdir ----------------------------------------------------
      {"unlink", [] {
         put("f", "x");
         std::string r = rc(::unlink("f"));
         return r + " " + what("f");
       }},
      {"unlink-missing", [] { return rc(::unlink("nope")); }},
      {"unlink-a-directory", [] {
         ::mkdir("d", 0755);
         return rc(::unlink("d"));
       }},
      {"unlink-trailing-slash", [] {
         put("f", "x");
         std::string r = rc(::unlink("f/"));
         return r + " " + what("f");
       }},
      {"unlink-a-symlink-to-a-dir-trailing-slash", [] {
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         std::string r = rc(::unlink("l/"));
         return r + " " + what("d") + " " + what("l");
       }},
      {"rmdir-a-symlink-to-a-dir-trailing-slash", [] {
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         std::string r = rc(::rmdir("l/"));
         return r + " " + what("d") + " " + what("l");
       }},
      {"unlink-a-symlink", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r = rc(::unlink("l"));
         return r + " " + what("l") + " " + what("f");
       }},
      {"rmdir", [] {
         ::mkdir("d", 0755);
         std::string r = rc(::rmdir("d"));
         return r + " " + what("d");
       }},
      {"rmdir-not-empty", [] {
         ::mkdir("d", 0755);
         put("d/f", "x");
         return rc(::rmdir("d"));
       }},
      {"rmdir-a-file", [] {
         put("f", "x");
         return rc(::rmdir("f"));
       }},
      {"rmdir-dot", [] {
         ::mkdir("d", 0755);
         return rc(::rmdir("d/."));
       }},
      {"unlinkat-removedir", [] {
         ::mkdir("d", 0755);
         std::string r = rc(::unlinkat(AT_FDCWD, "d", AT_REMOVEDIR));
         return r + " " + what("d");
       }},
      // --- rename -------------------------------------------------------------
      {"rename", [] {
         put("a", "x");
         std::string r = rc(::rename("a", "b"));
         return r + " " + what("a") + " " + what("b");
       }},
      {"rename-replacing", [] {
         put("a", "new");
         put("b", "old");
         std::string r = rc(::rename("a", "b"));
         return r + " " + what("b");
       }},
      {"rename-onto-a-non-empty-dir", [] {
         ::mkdir("a", 0755);
         ::mkdir("b", 0755);
         put("b/f", "x");
         return rc(::rename("a", "b"));
       }},
      {"rename-a-file-onto-a-dir", [] {
         put("a", "x");
         ::mkdir("b", 0755);
         return rc(::rename("a", "b"));
       }},
      {"rename-a-dir-onto-a-file", [] {
         ::mkdir("a", 0755);
         put("b", "x");
         return rc(::rename("a", "b"));
       }},
      {"rename-missing", [] { return rc(::rename("nope", "b")); }},
      {"rename-noreplace", [] {
         put("a", "x");
         put("b", "y");
         std::string r = rc(::syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_NOREPLACE));
         return r + " " + what("b");
       }},
      {"rename-exchange", [] {
         put("a", "x");
         ::mkdir("b", 0755);
         std::string r = rc(::syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE));
         return r + " " + what("a") + " " +
                what("b");
       }},
      {"rename-exchange-missing", [] {
         put("a", "x");
         return rc(::syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE));
       }},
      {"rename-into-its-own-subdirectory", [] {
         ::mkdir("a", 0755);
         ::mkdir("a/b", 0755);
         return rc(::rename("a", "a/b/c"));
       }},
      {"rename-a-symlink", [] {
         ::symlink("t", "l");
         std::string r = rc(::rename("l", "m"));
         return r + " " + what("m");
       }},
      {"rename-onto-a-hard-link-of-itself", [] {
         put("a", "x");
         ::link("a", "b");
         std::string r = rc(::rename("a", "b"));
         return r + " " + what("a") + " " + what("b");
       }},
      {"rename-trailing-slash-on-a-file", [] {
         put("a", "x");
         std::string r = rc(::rename("a/", "b"));
         return r + " " + what("a");
       }},
      {"rename-a-symlink-to-a-dir-trailing-slash", [] {
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         std::string r = rc(::rename("l/", "m"));
         return r + " " + what("d") + " " + what("l") + " " + what("m");
       }},
      {"rename-a-file-onto-a-symlink-to-a-dir-trailing-slash", [] {
         put("a", "x");
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         std::string r = rc(::rename("a", "l/"));
         return r + " " + what("a") + " " + what("d") + " " + what("l");
       }},
      {"rename-exchange-with-a-symlink-to-a-dir-trailing-slash", [] {
         put("a", "x");
         ::mkdir("d", 0755);
         ::symlink("d", "l");
         std::string r = rc(::syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "l/", RENAME_EXCHANGE));
         return r + " " + what("a") + " " + what("d") + " " + what("l");
       }},
      {"rename-dot-beside-a-name", [] {
         ::mkdir("d", 0755);
         std::string r = rc(::rename("d/.", "e"));
         return r + " " + rc(::rename("d", "d/..")) + " " + what("d") + " " + what("e");
       }},
      {"rename-empty-name", [] {
         put("a", "x");
         return rc(::rename("", "b")) + " " + rc(::rename("a", "")) + " " + what("a");
       }},
      // --- link ---------------------------------------------------------------
      {"link", [] {
         put("a", "x");
         std::string r = rc(::link("a", "b"));
         return r + " " + what("b");
       }},
      {"link-existing", [] {
         put("a", "x");
         put("b", "y");
         return rc(::link("a", "b"));
       }},
      {"link-dot-dot", [] {
         ::mkdir("d", 0755);
         return rc(::link("d/..", "e"));
       }},
      {"linkat-empty-name-without-at-empty-path", [] {
         put("f", "x");
         int fd = ::open("f", O_RDONLY | O_CLOEXEC);
         std::string r = rc(::linkat(fd, "", AT_FDCWD, "g", 0));
         ::close(fd);
         return r + " " + what("g");
       }},
      {"link-a-directory", [] {
         ::mkdir("d", 0755);
         return rc(::link("d", "e"));
       }},
      {"link-a-symlink", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r = rc(::link("l", "m"));
         return r + " " + what("m");
       }},
      {"linkat-following", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r = rc(::linkat(AT_FDCWD, "l", AT_FDCWD, "m", AT_SYMLINK_FOLLOW));
         return r + " " + what("m");
       }},
      // --- truncate -------------------------------------------------------------
      {"truncate", [] {
         put("f", "abcdef");
         std::string r = rc(::truncate("f", 3));
         return r + " " + what("f");
       }},
      {"truncate-a-directory", [] {
         ::mkdir("d", 0755);
         return rc(::truncate("d", 0));
       }},
      {"truncate-missing", [] { return rc(::truncate("nope", 0)); }},
      {"truncate-negative", [] {
         put("f", "x");
         return rc(::truncate("f", -1));
       }},
      {"truncate-through-a-symlink", [] {
         put("f", "abcdef");
         ::symlink("f", "l");
         std::string r = rc(::truncate("l", 2));
         return r + " " + what("f");
       }},
      // --- chmod, chown, times, xattrs, access ---------------------------------
      {"chmod", [] {
         put("f", "x");
         std::string r = rc(::chmod("f", 0700));
         return r + " " + what("f");
       }},
      {"chmod-missing", [] { return rc(::chmod("nope", 0700)); }},
      {"chmod-through-a-symlink", [] {
         put("f", "x");
         ::symlink("f", "l");
         std::string r = rc(::chmod("l", 0600));
         return r + " " + what("f");
       }},
      {"lchmod", [] {
         ::symlink("t", "l");
         return rc(::fchmodat(AT_FDCWD, "l", 0600, AT_SYMLINK_NOFOLLOW));
       }},
      {"fchmodat-nofollow-on-a-file", [] {
         put("f", "x");
         std::string r = rc(::fchmodat(AT_FDCWD, "f", 0711, AT_SYMLINK_NOFOLLOW));
         return r + " " + what("f");
       }},
      {"fchmod-on-a-read-only-descriptor", [] {
         put("f", "x");
         int fd = ::open("f", O_RDONLY | O_CLOEXEC);
         std::string r = rc(::fchmod(fd, 0755));
         ::close(fd);
         return r + " " + what("f");
       }},
      {"fchmod-on-a-directory-descriptor", [] {
         ::mkdir("d", 0755);
         int fd = ::open("d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
         std::string r = rc(::fchmod(fd, 0700));
         ::close(fd);
         return r + " " + what("d");
       }},
      {"fchmod-on-a-new-file", [] {
         int fd = ::open("f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
         std::string r = rc(::fchmod(fd, 0640));
         ::close(fd);
         return r + " " + what("f");
       }},
      {"chmod-dot", [] {
         ::mkdir("d", 0755);
         std::string r = rc(::chmod("d/.", 0700));
         return r + " " + what("d");
       }},
      {"chown-to-self", [] {
         put("f", "x");
         return rc(::chown("f", ::getuid(), ::getgid()));
       }},
      {"lchown-a-symlink-to-self", [] {
         ::symlink("t", "l");
         return rc(::lchown("l", ::getuid(), ::getgid()));
       }},
      {"fchownat-empty-path", [] {
         put("f", "x");
         int fd = ::open("f", O_PATH | O_CLOEXEC);
         std::string r = rc(::fchownat(fd, "", ::getuid(), ::getgid(), AT_EMPTY_PATH));
         ::close(fd);
         return r;
       }},
      {"chown-to-another-user", [] {
         put("f", "x");
         return rc(::chown("f", ::getuid() + 1, static_cast<gid_t>(-1)));
       }, true},
      {"utimensat", [] {
         put("f", "x");
         timespec t[2] = {{1000000000, 5}, {1000000001, 7}};
         std::string r = rc(::utimensat(AT_FDCWD, "f", t, 0));
         return r + " " + mtime("f");
       }},
      {"utimensat-nofollow", [] {
         ::symlink("t", "l");
         timespec t[2] = {{1000000000, 0}, {1000000002, 0}};
         std::string r = rc(::utimensat(AT_FDCWD, "l", t, AT_SYMLINK_NOFOLLOW));
         return r + " " + mtime("l");
       }},
      {"futimens", [] {
         int fd = ::open("f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
         timespec t[2] = {{UTIME_OMIT, UTIME_OMIT}, {1000000003, 0}};
         std::string r = rc(::futimens(fd, t));
         ::close(fd);
         return r + " " + mtime("f");
       }},
      {"futimens-on-a-read-only-descriptor", [] {
         put("f", "x");
         int fd = ::open("f", O_RDONLY | O_CLOEXEC);
         timespec t[2] = {{UTIME_OMIT, UTIME_OMIT}, {1000000004, 0}};
         std::string r = rc(::futimens(fd, t));
         ::close(fd);
         return r + " " + mtime("f");
       }},
      {"utimes", [] {
         put("f", "x");
         timeval t[2] = {{1000000000, 0}, {1000000005, 250}};
         std::string r = rc(::utimes("f", t));
         return r + " " + mtime("f");
       }},
      {"utimes-now", [] {
         put("f", "x");
         return rc(::utimes("f", nullptr));
       }},
      {"utime", [] {
         put("f", "x");
         utimbuf u{1000000000, 1000000006};
         std::string r = rc(::utime("f", &u));
         return r + " " + mtime("f");
       }},
      {"utimensat-dot", [] {
         ::mkdir("d", 0755);
         timespec t[2] = {{UTIME_OMIT, UTIME_OMIT}, {1000000007, 0}};
         std::string r = rc(::utimensat(AT_FDCWD, "d/.", t, 0));
         return r + " " + mtime("d");
       }},
      {"setxattr", [] {
         put("f", "x");
         std::string r = rc(::setxattr("f", "user.k", "v1", 2, 0));
         char buf[8] = {};
         ssize_t got = ::getxattr("f", "user.k", buf, sizeof buf);
         r += " get=" + std::to_string(got) + ":" + buf;
         return r;
       }},
      {"setxattr-create-existing", [] {
         put("f", "x");
         ::setxattr("f", "user.k", "v1", 2, 0);
         return rc(::setxattr("f", "user.k", "v2", 2, XATTR_CREATE));
       }},
      {"removexattr", [] {
         put("f", "x");
         ::setxattr("f", "user.k", "v1", 2, 0);
         std::string r = rc(::removexattr("f", "user.k"));
         return r + " get:" + rc(::getxattr("f", "user.k", nullptr, 0));
       }},
      {"setxattr-missing", [] { return rc(::setxattr("nope", "user.k", "v", 1, 0)); }},
      {"lsetxattr-on-a-symlink", [] {
         ::symlink("t", "l");
         return rc(::lsetxattr("l", "user.k", "v", 1, 0));
       }},
      {"fsetxattr-on-a-read-only-descriptor", [] {
         put("f", "x");
         int fd = ::open("f", O_RDONLY | O_CLOEXEC);
         std::string r = rc(::fsetxattr(fd, "user.k", "v", 1, 0));
         ::close(fd);
         return r;
       }},
      {"access-w-ok", [] {
         put("f", "x");
         ::mkdir("d", 0755);
         std::string r = rc(::access("f", W_OK));
         return r + " " + rc(::access("d", W_OK)) + " " + rc(::access("nope", W_OK));
       }},
      {"access-w-ok-read-only-file", [] {
         put("f", "x");
         ::chmod("f", 0444);
         return rc(::access("f", W_OK));
       }, true},
      {"faccessat-nofollow", [] {
         ::symlink("nowhere", "l");
         return rc(::faccessat(AT_FDCWD, "l", W_OK, AT_SYMLINK_NOFOLLOW));
       }},
  };
}

void removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace

int writeOps(const char* prefix) {
  const std::string only = prefix ? prefix : "";
  char base[4096];
  if (!::getcwd(base, sizeof base)) return 2;
  const bool root = ::geteuid() == 0;
  int n = 0;
  for (const auto& c : cases()) {
    if (!only.empty() && std::string(c.name).rfind(only, 0) != 0) continue;
    if (c.rootless && root) continue;
    std::string dir = std::string(base) + "/case-" + std::to_string(n++);
    ::mkdir(dir.c_str(), 0755);
    if (::chdir(dir.c_str()) != 0) return 2;
    ::umask(022);
    errno = 0;
    std::string line = c.run();
    std::printf("%s: %s\n", c.name, line.c_str());
    std::fflush(stdout);
    if (::chdir(base) != 0) return 2;
    ::umask(022);
    removeTree(dir);
  }
  return 0;
}
