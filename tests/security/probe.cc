// sandbox_probe: tries one operation from inside a sandbox and says how it
// went. Exit 0: the operation succeeded; 1: it failed (stderr names errno);
// 2: usage. Output on stdout is operation-specific (file contents, ids, ...).
//
// `sandbox_probe OP ARGS... + OP ARGS... + ...` runs the operations in turn
// in one process (so one sandbox), printing "step-exit=N" after each, and
// exits with the last one's status: a test puts the allowed neighbour and
// the refused call in the same run, which proves the program ran.
#include <aio.h>
#include <arpa/inet.h>
#include <linux/aio_abi.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <linux/falloc.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <time.h>
#include <vector>

#include "tests/support/udp_queues.h"

namespace {

int result(long rc, const char* what) {
  if (rc >= 0) return 0;
  std::fprintf(stderr, "%s: %s\n", what, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
  std::printf("errno=%s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
  return 1;
}

// Writes 1 MiB chunks to `fd` until `maxMiB` (0: no end) or an error,
// printing "wrote=<MiB>" after each chunk (flushed: the test sees how far a
// killed balloon got). Exit 0 when all were written.
int fill(int fd, long maxMiB) {
  static char chunk[1 << 20];
  std::memset(chunk, 'x', sizeof chunk);  // charged as the probe's own memory, like any program's buffer
  for (long mib = 0; maxMiB == 0 || mib < maxMiB; ++mib) {
    for (std::size_t done = 0; done < sizeof chunk;) {
      ssize_t n = ::write(fd, chunk + done, sizeof chunk - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return result(-1, "write");
      done += static_cast<std::size_t>(n);
    }
    std::printf("wrote=%ld\n", mib + 1);
    std::fflush(stdout);
  }
  return 0;
}

double cpuSeconds() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void spin(double seconds) {
  const double until = cpuSeconds() + seconds;
  volatile unsigned long sink = 0;
  while (cpuSeconds() < until)
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<unsigned long>(i);
}

// OP-hold DIR: opens `what` (inotify instances, ptys) until one fails, or
// 100000, prints "<what>=<count> errno=<why>", creates DIR/ready and holds
// them until DIR/go appears (30 s at most).
template <class Open>
int holdUntilFailure(const char* what, const std::string& dir, Open open) {
  long held = 0;
  int failure = 0;
  for (;;) {
    if (open() < 0) {
      failure = errno;
      break;
    }
    if (++held == 100000) break;
  }
  std::printf("%s=%ld errno=%s\n", what, held, failure ? strerrorname_np(failure) : "none");
  std::fflush(stdout);
  ::close(::open((dir + "/ready").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  for (int i = 0; i < 3000 && ::access((dir + "/go").c_str(), F_OK) != 0; ++i) ::usleep(10000);
  return 0;
}

// `flags`: O_RDONLY, or O_RDWR (a write-shaped open, brokered in a writable tree).
int cat(const char* path, int flags = O_RDONLY) {
  int fd = ::open(path, flags | O_CLOEXEC);
  if (fd < 0) return result(-1, "open");
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
  ::close(fd);
  return n < 0 ? result(-1, "read") : 0;
}

int list(const char* path) {
  DIR* d = ::opendir(path);
  if (!d) return result(-1, "opendir");
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) std::printf("%s\n", e->d_name);
  ::closedir(d);
  return 0;
}

int write(const char* path) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return result(-1, "open");
  int rc = ::write(fd, "probe\n", 6) == 6 ? 0 : result(-1, "write");
  ::close(fd);
  return rc;
}

int connectTo(int type, const char* addr, int port, bool waitReply) {
  int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return result(-1, "socket");
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, addr, &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return result(-1, "connect");
  if (::send(fd, "probe\n", 6, 0) != 6) return result(-1, "send");
  if (waitReply) {
    char c;
    if (::recv(fd, &c, 1, 0) != 1) return result(-1, "recv");
  }
  return 0;
}

// Sends "ESCAPE" to the unix socket at `path` through `fd`, then "FDPASS"
// with a descriptor of "/" attached.
void sendToHostSocket(int fd, const char* path) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  (void)::sendto(fd, "ESCAPE", 6, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int root = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov = {const_cast<char*>("FDPASS"), 6};
  msghdr msg = {};
  msg.msg_name = &addr;
  msg.msg_namelen = sizeof addr;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &root, sizeof root);
  (void)::sendmsg(fd, &msg, MSG_DONTWAIT);
  ::close(root);
}

// An abstract unix address: "\0NAME", its length counted without a terminator.
socklen_t abstractAddress(const char* name, sockaddr_un& sa) {
  sa = {};
  sa.sun_family = AF_UNIX;
  std::size_t n = std::min(std::strlen(name), sizeof sa.sun_path - 1);
  std::memcpy(sa.sun_path + 1, name, n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

int abstractConnect(const char* name) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return result(-1, "socket(AF_UNIX)");
  sockaddr_un sa;
  socklen_t len = abstractAddress(name, sa);
  return result(::connect(fd, reinterpret_cast<sockaddr*>(&sa), len), "connect(abstract)");
}

// exchange-loop A B SECONDS: swaps the names A and B (renameat2
// RENAME_EXCHANGE) for SECONDS; prints how many swaps succeeded.
int exchangeLoop(const char* a, const char* b, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  long swaps = 0;
  while (std::chrono::steady_clock::now() < end)
    if (::syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) ++swaps;
  std::printf("swaps=%ld\n", swaps);
  return 0;
}

// config-race A B SECONDS: creates (and removes) A/config and B/config for
// SECONDS while another program swaps A and B; prints how many creates
// succeeded, and exits 3 as soon as a directory with HEAD holds a config.
int configRace(const char* a, const char* b, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  long created = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (const char* dir : {a, b}) {
      const std::string config = std::string(dir) + "/config";
      int fd = ::open(config.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ++created;
        ::close(fd);
      }
      int held = ::open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
      struct stat st;
      const bool raced = held >= 0 && ::fstatat(held, "HEAD", &st, 0) == 0 && ::fstatat(held, "config", &st, 0) == 0;
      if (held >= 0) ::close(held);
      if (raced) {
        std::printf("raced: a directory with HEAD holds a config\n");
        return 3;
      }
      ::unlink(config.c_str());
    }
  }
  std::printf("created=%ld\n", created);
  return 0;
}

// Threads racing the write broker: one flips a path buffer between an
// allowed name and a protected one, one swaps a symlink between pointing at
// an allowed file and at a protected one, while others create through both.
// Prints how many creates succeeded; what was written is checked outside.
int race(const char* dir, int seconds) {
  const std::string base = dir;
  const std::string allowed = base + "/allowed", protectedName = base + "/.bashrc";
  // The buffer the creating threads pass to open(): flipped in place.
  static char buffer[4096];
  std::strcpy(buffer, allowed.c_str());
  std::atomic<bool> stop{false};
  std::atomic<long> created{0};
  std::thread flipper([&] {
    while (!stop) {
      std::strcpy(buffer, protectedName.c_str());
      std::strcpy(buffer, allowed.c_str());
    }
  });
  std::thread swapper([&] {
    const std::string link = base + "/link", next = base + "/link.next";
    bool toAllowed = true;
    while (!stop) {
      ::unlink(next.c_str());
      (void)::symlink(toAllowed ? "allowed" : ".bashrc", next.c_str());
      (void)::rename(next.c_str(), link.c_str());
      toAllowed = !toAllowed;
    }
  });
  std::vector<std::thread> creators;
  for (int t = 0; t < 3; ++t)
    creators.emplace_back([&, t] {
      const std::string link = base + "/link";
      while (!stop) {
        int fd = ::open(t == 0 ? link.c_str() : buffer, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
          (void)!::write(fd, "x", 1);
          ::close(fd);
          ++created;
        }
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  flipper.join();
  swapper.join();
  for (auto& c : creators) c.join();
  std::printf("created=%ld\n", created.load());
  return 0;
}

[[noreturn]] int createFlood(const char* dir, int threads) {
  for (int t = 0; t < threads; ++t)
    std::thread([dir, t] {
      for (long n = 0;; ++n) {
        std::string path = std::string(dir) + "/" + std::to_string(t) + "-" + std::to_string(n);
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) ::close(fd);
      }
    }).detach();
  for (;;) ::pause();
}

long int80Getpid() {
  long ret;
  // i386 getpid is syscall 20; through int 0x80 the kernel sees AUDIT_ARCH_I386.
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

}  // namespace

int writeOps(const char* prefix);  // write_ops.cc

int runOp(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string_view op = argv[1];
  auto arg = [&](int i) -> const char* { return i < argc ? argv[i] : ""; };
  if (op == "cat") return cat(arg(2));
  if (op == "cat-rdwr") return cat(arg(2), O_RDWR);  // cat-rdwr PATH: read through an O_RDWR descriptor
  if (op == "ls") return list(arg(2));
  if (op == "write") return write(arg(2));
  if (op == "write-text") {  // write-text PATH TEXT: an existing file, no O_CREAT/O_TRUNC (cgroup files)
    int fd = ::open(arg(2), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return result(-1, "open");
    const std::string_view text = arg(3);
    int rc = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : result(-1, "write");
    ::close(fd);
    return rc;
  }
  if (op == "mkdir") return result(::mkdir(arg(2), 0755), "mkdir");
  // Write-shaped calls, one each, for the write broker's tests.
  if (op == "create") {  // create PATH: O_CREAT|O_EXCL, writes "probe\n"
    int fd = ::open(arg(2), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open");
    int rc = ::write(fd, "probe\n", 6) == 6 ? 0 : result(-1, "write");
    ::close(fd);
    return rc;
  }
  if (op == "openat2-create") {  // openat2-create PATH
    open_how how{};
    how.flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    how.mode = 0644;
    long fd = ::syscall(SYS_openat2, AT_FDCWD, arg(2), &how, sizeof how);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return result(fd, "openat2");
  }
  if (op == "rename2") {  // rename2 FROM TO exchange|noreplace|whiteout
    std::string_view how = arg(4);
    unsigned flags = how == "exchange" ? RENAME_EXCHANGE : how == "noreplace" ? RENAME_NOREPLACE : RENAME_WHITEOUT;
    return result(::syscall(SYS_renameat2, AT_FDCWD, arg(2), AT_FDCWD, arg(3), flags), "renameat2");
  }
  if (op == "unlink") return result(::unlink(arg(2)), "unlink");
  if (op == "rmdir") return result(::rmdir(arg(2)), "rmdir");
  if (op == "truncate") return result(::truncate(arg(2), std::atol(arg(3))), "truncate");
  if (op == "chmod") return result(::chmod(arg(2), static_cast<mode_t>(std::strtol(arg(3), nullptr, 8))), "chmod");
  if (op == "fchmod-read-only") {  // fchmod-read-only PATH MODE: through a descriptor opened O_RDONLY
    int fd = ::open(arg(2), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return result(-1, "open");
    int rc = result(::fchmod(fd, static_cast<mode_t>(std::strtol(arg(3), nullptr, 8))), "fchmod");
    ::close(fd);
    return rc;
  }
  if (op == "utimes") return result(::utimes(arg(2), nullptr), "utimes");
  if (op == "setxattr") return result(::setxattr(arg(2), arg(3), arg(4), std::strlen(arg(4)), 0), "setxattr");
  if (op == "mkfifo") return result(::mkfifo(arg(2), 0644), "mkfifo");
  if (op == "mknod-socket") return result(::mknod(arg(2), S_IFSOCK | 0644, 0), "mknod");
  if (op == "tmpfile-link") {  // tmpfile-link DIR NAME: an O_TMPFILE file, named by linkat()
    int fd = ::open(arg(2), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open(O_TMPFILE)");
    (void)!::write(fd, "probe\n", 6);
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    int rc = result(::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, arg(3), AT_SYMLINK_FOLLOW), "linkat");
    ::close(fd);
    return rc;
  }
  if (op == "write-ops") return writeOps(argc > 2 ? argv[2] : nullptr);  // write-ops [CASE-PREFIX]
  if (op == "race") {  // race DIR SECONDS: see below
    return race(arg(2), std::atoi(arg(3)));
  }
  if (op == "exchange-loop") return exchangeLoop(arg(2), arg(3), std::atoi(arg(4)));
  if (op == "config-race") return configRace(arg(2), arg(3), std::atoi(arg(4)));
  if (op == "create-flood") {  // create-flood DIR THREADS: creates DIR/<thread>-<n> until killed
    return createFlood(arg(2), std::atoi(arg(3)));
  }
  if (op == "symlink") return result(::symlink(arg(2), arg(3)), "symlink");
  if (op == "link") return result(::link(arg(2), arg(3)), "link");
  if (op == "rename") return result(::rename(arg(2), arg(3)), "rename");
  if (op == "ids") {
    std::printf("ruid=%d euid=%d\n", ::getuid(), ::geteuid());
    return 0;
  }
  if (op == "ptrace") return result(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), "ptrace");
  if (op == "kill") return result(::kill(std::atoi(arg(2)), std::atoi(arg(3))), "kill");
  if (op == "kill-own-child") {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    int rc = result(::kill(pid, SIGKILL), "kill");
    ::waitpid(pid, nullptr, 0);
    return rc;
  }
  if (op == "fork") {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    if (pid < 0) return result(-1, "fork");
    ::waitpid(pid, nullptr, 0);
    return 0;
  }
  if (op == "fork-until-fail") {  // fork-until-fail MAX: children that stay alive until fork fails or MAX exist
    // Prints "forked=K" (and errno=... when a fork failed), then releases
    // and reaps them. Exit 0 when MAX children were forked.
    const long max = std::atol(arg(2));
    int release[2];
    if (::pipe(release) != 0) return result(-1, "pipe");
    long forked = 0;
    int failure = 0;
    while (forked < max) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(release[1]);
        char c;
        while (::read(release[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::_exit(0);
      }
      if (pid < 0) {
        failure = errno;
        break;
      }
      ++forked;
    }
    ::close(release[1]);
    while (::wait(nullptr) > 0 || errno == EINTR) {
    }
    std::printf("forked=%ld\n", forked);
    if (failure != 0) {
      errno = failure;
      return result(-1, "fork");
    }
    return 0;
  }
  if (op == "fill") {  // fill PATH MiB (0: until it fails)
    int fd = ::open(arg(2), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open");
    return fill(fd, std::atol(arg(3)));
  }
  if (op == "memfd-fill") {  // memfd-fill MiB (0: until it fails)
    int fd = ::memfd_create("balloon", MFD_CLOEXEC);
    if (fd < 0) return result(-1, "memfd_create");
    return fill(fd, std::atol(arg(2)));
  }
  if (op == "udp-fill") {  // udp-fill SOCKETS MiB-EACH: "sent=<MiB> held=<MiB>" of unread loopback datagrams
    const auto q = stockade::testing::fillUdpReceiveQueues(std::atoi(arg(2)), std::atol(arg(3)) << 20);
    std::printf("sockets=%d sent=%zu held=%zu\n", q.sockets, q.sent >> 20, q.held >> 20);
    errno = q.error;
    return q.error ? result(-1, "udp socket") : 0;
  }
  if (op == "statfs") {  // statfs PATH: "bytes=<size of the filesystem>"
    struct statfs st;
    if (::statfs(arg(2), &st) != 0) return result(-1, "statfs");
    std::printf("bytes=%llu\n", static_cast<unsigned long long>(st.f_blocks) * static_cast<unsigned long long>(st.f_bsize));
    return 0;
  }
  if (op == "cpu-spin") {  // cpu-spin SECONDS of this process's own CPU time, then exit 0
    spin(std::atof(arg(2)));
    std::printf("spun\n");
    return 0;
  }
  if (op == "denied-spin") {  // denied-spin SECONDS of this process's own CPU time spent calling ptrace (denied)
    const double until = cpuSeconds() + std::atof(arg(2));
    long calls = 0;
    while (cpuSeconds() < until)
      for (int i = 0; i < 100; ++i, ++calls) (void)::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    std::printf("flooded calls=%ld\n", calls);
    return 0;
  }
  if (op == "cpu-chain") {  // cpu-chain GENERATIONS SECONDS: each process spins, forks the next, waits for it
    const long generations = std::atol(arg(2));
    const double each = std::atof(arg(3));
    for (long g = 0; g < generations; ++g) {
      spin(each);
      std::printf("generation=%ld\n", g + 1);
      std::fflush(stdout);
      pid_t child = ::fork();
      if (child < 0) return result(-1, "fork");
      if (child > 0) {
        int status = 0;
        ::waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return 0;
  }
  if (op == "fallocate") {  // fallocate PATH MODE OFFSET LEN (decimal): "blocks=<st_blocks>" after it
    int fd = ::open(arg(2), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open");
    if (::fallocate(fd, std::atoi(arg(3)), std::atoll(arg(4)), std::atoll(arg(5))) != 0) return result(-1, "fallocate");
    struct stat st;
    ::fstat(fd, &st);
    std::printf("blocks=%lld size=%lld\n", static_cast<long long>(st.st_blocks), static_cast<long long>(st.st_size));
    return 0;
  }
  if (op == "resvsp") {  // resvsp PATH LEN: ioctl(FS_IOC_RESVSP64), the XFS-compatible preallocation
    struct {
      std::int16_t type, whence;
      std::int64_t start, len;
      std::int32_t sysid;
      std::uint32_t pid;
      std::int32_t pad[4];
    } range = {0, SEEK_SET, 0, std::atoll(arg(3)), 0, 0, {}};
    static_assert(sizeof range == 48);
    int fd = ::open(arg(2), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open");
    return result(::ioctl(fd, 0x4030582aUL /* FS_IOC_RESVSP64 */, &range), "ioctl(FS_IOC_RESVSP64)");
  }
  if (op == "inotify-hold") return holdUntilFailure("inotify", arg(2), [] { return ::inotify_init1(IN_CLOEXEC); });
  if (op == "pty-hold") return holdUntilFailure("ptys", arg(2), [] { return ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC); });
  if (op == "aio-setup") {  // aio-setup EVENTS: io_setup(), Linux AIO's context
    aio_context_t context = 0;
    return result(::syscall(SYS_io_setup, std::atol(arg(2)), &context), "io_setup");
  }
  if (op == "posix-aio-write") {  // posix-aio-write PATH TEXT: glibc's aio_write(), then aio_suspend()
    int fd = ::open(arg(2), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return result(-1, "open");
    const std::string text = arg(3);
    aiocb cb{};
    cb.aio_fildes = fd;
    cb.aio_buf = const_cast<char*>(text.data());
    cb.aio_nbytes = text.size();
    if (::aio_write(&cb) != 0) return result(-1, "aio_write");
    const aiocb* list[] = {&cb};
    while (::aio_error(&cb) == EINPROGRESS) ::aio_suspend(list, 1, nullptr);
    errno = ::aio_error(&cb);
    return result(::aio_return(&cb) == static_cast<ssize_t>(text.size()) ? 0 : -1, "aio_write completion");
  }
  if (op == "pty-open") return result(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), "posix_openpt");
  if (op == "ioctl") {  // ioctl REQUEST-hex on fd 0
    unsigned long request = std::strtoul(arg(2), nullptr, 16);
    char c = 'x';
    return result(::syscall(SYS_ioctl, 0, request, &c), "ioctl");
  }
  if (op == "syscall") {  // raw syscall number with zero arguments
    return result(::syscall(std::atol(arg(2)), 0, 0, 0, 0, 0, 0), "syscall");
  }
  if (op == "unshare") return result(::unshare(static_cast<int>(std::strtol(arg(2), nullptr, 16))), "unshare");
  if (op == "seccomp-filter") {  // seccomp-filter listener|plain: an allow-all filter of its own
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog prog = {1, allow};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return result(-1, "prctl(PR_SET_NO_NEW_PRIVS)");
    unsigned flags = std::string_view(arg(2)) == "listener" ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
    return result(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog), "seccomp(SET_MODE_FILTER)");
  }
  if (op == "denied-flood") {  // THREADS threads calling ptrace, a denied call, until killed
    int threads = std::atoi(arg(2));
    for (int i = 1; i < threads; ++i) {
      std::thread([] {
        for (;;) (void)::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      }).detach();
    }
    for (;;) (void)::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
  }
  if (op == "clone") {
    long flags = std::strtol(arg(2), nullptr, 16) | SIGCHLD;
    long pid = ::syscall(SYS_clone, flags, 0, 0, 0, 0);
    if (pid == 0) ::_exit(0);
    if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    return result(pid, "clone");
  }
  if (op == "clone3") {
    std::uint64_t args[11] = {};
    args[4] = SIGCHLD;
    long pid = ::syscall(SYS_clone3, args, 64);
    if (pid == 0) ::_exit(0);
    if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    return result(pid, "clone3");
  }
  if (op == "mount") return result(::mount("none", "/tmp", "tmpfs", 0, nullptr), "mount");
  if (op == "socket") {  // socket DOMAIN TYPE PROTOCOL (decimal; DOMAIN may carry high bits)
    long fd = ::syscall(SYS_socket, std::strtol(arg(2), nullptr, 0), std::strtol(arg(3), nullptr, 0),
                        std::strtol(arg(4), nullptr, 0));
    return result(fd, "socket");
  }
  if (op == "netlink-sockets") {  // netlink-sockets N THREADS: hold up to N NETLINK_ROUTE sockets, opened by THREADS at once
    // Prints "opened=<K> errno=<first failure>", whether one more opens after
    // closing one ("reopened="), and getifaddrs()'s result once all are closed.
    const int want = std::atoi(arg(2)), threads = std::max(1, std::atoi(arg(3)));
    std::vector<int> fds(static_cast<std::size_t>(want), -1);
    std::atomic<int> next{0}, failure{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (int i; failure.load() == 0 && (i = next.fetch_add(1)) < want;) {
          fds[static_cast<std::size_t>(i)] = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
          if (fds[static_cast<std::size_t>(i)] < 0) failure.store(errno);
        }
      });
    for (auto& t : pool) t.join();
    std::erase(fds, -1);
    std::printf("opened=%zu errno=%s\n", fds.size(), failure ? strerrorname_np(failure.load()) : "none");
    if (!fds.empty()) {
      ::close(fds.back());
      fds.back() = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
      std::printf("reopened=%s\n", fds.back() >= 0 ? "yes" : strerrorname_np(errno));
    }
    for (int fd : fds) ::close(fd);
    ifaddrs* list = nullptr;
    const int rc = ::getifaddrs(&list);
    std::printf("getifaddrs=%s\n", rc == 0 ? "ok" : strerrorname_np(errno));
    if (rc == 0) ::freeifaddrs(list);
    return 0;
  }
  if (op == "sockbuf") {  // sockbuf: SO_RCVBUF/SO_SNDBUF of 8 MiB asked on netlink and TCP, and the errors of bad calls
    const int big = 8 << 20;
    auto asked = [&](int fd, int name) {
      const int rc = ::setsockopt(fd, SOL_SOCKET, name, &big, sizeof big);
      if (rc != 0) return std::string(strerrorname_np(errno));
      int got = 0;
      socklen_t len = sizeof got;
      ::getsockopt(fd, SOL_SOCKET, name == SO_SNDBUF ? SO_SNDBUF : SO_RCVBUF, &got, &len);
      return std::to_string(got);
    };
    auto errorOf = [](int rc) { return rc == 0 ? std::string("none") : std::string(strerrorname_np(errno)); };
    const int netlink = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    const int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (netlink < 0 || tcp < 0) return result(-1, "socket");
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) return result(-1, "pipe");
    std::printf("netlink-rcvbuf=%s\n", asked(netlink, SO_RCVBUF).c_str());
    std::printf("netlink-sndbuf=%s\n", asked(netlink, SO_SNDBUF).c_str());
    std::printf("netlink-rcvbufforce=%s\n", asked(netlink, SO_RCVBUFFORCE).c_str());
    std::printf("tcp-rcvbuf=%s\n", asked(tcp, SO_RCVBUF).c_str());
    std::printf("tcp-sndbufforce=%s\n", asked(tcp, SO_SNDBUFFORCE).c_str());
    std::printf("pipe=%s\n", errorOf(::setsockopt(pipefd[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big)).c_str());
    std::printf("badfd=%s\n", errorOf(::setsockopt(999, SOL_SOCKET, SO_RCVBUF, &big, sizeof big)).c_str());
    std::printf("short=%s\n", errorOf(::setsockopt(tcp, SOL_SOCKET, SO_RCVBUF, &big, 2)).c_str());
    std::printf("negative=%s\n", errorOf(static_cast<int>(::syscall(SYS_setsockopt, tcp, SOL_SOCKET, SO_RCVBUF, &big, -1))).c_str());
    std::printf("fault=%s\n", errorOf(::setsockopt(tcp, SOL_SOCKET, SO_RCVBUF, nullptr, sizeof big)).c_str());
    std::printf("keepalive=%s\n", errorOf(::setsockopt(tcp, SOL_SOCKET, SO_KEEPALIVE, &big, sizeof big)).c_str());
    return 0;
  }
  if (op == "socketpair") {
    int sv[2];
    return result(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
  }
  if (op == "unix-every-type") {  // unix-every-type PATH: every type value 0-15, with and without the flags
    // socket() and socketpair() of AF_UNIX with each type, each used to send
    // to the socket at PATH (a datagram, then a passed fd; a seqpacket pair
    // ignores the address and sends to its own peer). Prints how many were
    // created, and whether a stream pair carries a byte.
    int sockets = 0, pairs = 0;
    for (int type = 0; type < 16; ++type) {
      for (int flags : {0, int{SOCK_NONBLOCK}, int{SOCK_CLOEXEC}, SOCK_NONBLOCK | SOCK_CLOEXEC}) {
        int fd = ::socket(AF_UNIX, type | flags, 0);
        if (fd >= 0) {
          ++sockets;
          sendToHostSocket(fd, arg(2));
          ::close(fd);
        }
        int sv[2];
        if (::socketpair(AF_UNIX, type | flags, 0, sv) == 0) {
          ++pairs;
          sendToHostSocket(sv[0], arg(2));
          ::close(sv[0]);
          ::close(sv[1]);
        }
      }
    }
    int sv[2];
    char c = 0;
    bool pairWorks = ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && ::write(sv[0], "x", 1) == 1 &&
                     ::read(sv[1], &c, 1) == 1 && c == 'x';
    std::printf("sockets=%d pairs=%d stream-pair=%s\n", sockets, pairs, pairWorks ? "ok" : "broken");
    return 0;
  }
  if (op == "bind-tcp") {  // bind-tcp PORT: a TCP socket bound to 127.0.0.1:PORT
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return result(-1, "socket");
    sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(arg(2))));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return result(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), "bind");
  }
  if (op == "abstract-connect") return abstractConnect(arg(2));  // abstract-connect NAME
  if (op == "abstract-self") {  // listens on an abstract NAME of its own and connects to it
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return result(-1, "socket(AF_UNIX)");
    sockaddr_un sa;
    socklen_t len = abstractAddress(arg(2), sa);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(fd, 1) != 0) return result(-1, "bind/listen");
    return abstractConnect(arg(2));
  }
  if (op == "tcp") return connectTo(SOCK_STREAM, arg(2), std::atoi(arg(3)), std::string_view(arg(4)) == "reply");
  if (op == "udp") return connectTo(SOCK_DGRAM, arg(2), std::atoi(arg(3)), false);
  if (op == "tcp-self") {  // a TCP server bound on the sandbox's loopback, reached by a client process there
    int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(server, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return result(-1, "bind");
    if (::listen(server, 1) != 0) return result(-1, "listen");
    ::getsockname(server, reinterpret_cast<sockaddr*>(&sa), &len);
    pid_t client = ::fork();
    if (client == 0) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) ::_exit(result(-1, "connect"));
      ::_exit(::send(fd, "x", 1, 0) == 1 ? 0 : result(-1, "send"));
    }
    int status = 0;
    ::waitpid(client, &status, 0);  // a connect either queued in the backlog or failed: no waiting on accept
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    int conn = ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
    char c = 0;
    if (conn < 0 || ::recv(conn, &c, 1, 0) != 1 || c != 'x') return result(-1, "accept/recv");
    std::printf("served\n");
    return 0;
  }
  if (op == "udp-self") {  // a UDP round trip inside the sandbox's own loopback
    int a = ::socket(AF_INET, SOCK_DGRAM, 0), b = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(a, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return result(-1, "bind");
    ::getsockname(a, reinterpret_cast<sockaddr*>(&sa), &len);
    if (::sendto(b, "x", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 1) return result(-1, "sendto");
    char c;
    return result(::recv(a, &c, 1, 0), "recv");
  }
  if (op == "fds") {  // prints every open fd above 2 (except the one listing them)
    DIR* d = ::opendir("/proc/self/fd");
    if (!d) return result(-1, "opendir");
    int self = ::dirfd(d);
    int count = 0;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != self) {
        std::printf("fd %d\n", fd);
        ++count;
      }
    }
    ::closedir(d);
    std::printf("count=%d\n", count);
    return 0;
  }
  if (op == "int80") {
    long ret = int80Getpid();  // raw: -errno on failure
    if (ret < 0 && ret > -4096) {
      errno = static_cast<int>(-ret);
      return result(-1, "int80 getpid");
    }
    return 0;
  }
  if (op == "x32") return result(::syscall(0x40000000L | 39L), "x32 getpid");
  if (op == "env") {
    const char* v = std::getenv(arg(2));
    if (!v) return 1;
    std::printf("%s\n", v);
    return 0;
  }
  return 2;
}

int main(int argc, char** argv) {
  int start = 1;
  bool steps = false;
  for (int i = 1; i <= argc; ++i) {
    if (i < argc && std::strcmp(argv[i], "+") != 0) continue;
    if (i == argc && !steps) break;
    steps = true;
    // argv[start..i) is one operation; runOp() reads argv[1..] of its view.
    int rc = runOp(i - start + 1, argv + start - 1);
    std::printf("step-exit=%d\n", rc);
    std::fflush(stdout);
    if (i == argc) return rc;
    start = i + 1;
  }
  return runOp(argc, argv);
}
