// Resource exhaustion under the fixed limits (runner.cc): pids 128,
// memoryBytes 1 GiB, cpuSeconds 2 (20 for the memory cases), fileSizeBytes
// 64 MiB. Every attack is
// bounded (a count, a size, a time) so that one that is not stopped still
// ends, and the case says it was not stopped.
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kMemoryLimit = 1024 * kMiB;  // the policy's memoryBytes

// Children that stay alive until fork fails or `max` exist.
Verdict forkBomb(const Context&) {
  int release[2];
  if (::pipe(release) != 0) return unproven("pipe()");
  long forked = 0;
  int failure = 0;
  while (forked < 2000) {
    pid_t pid = ::fork();
    if (pid == 0) {
      char c;
      ::close(release[1]);
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
  if (auto n = neighbour(forked > 0, "fork() at all")) return *n;
  if (failure == 0) return escaped("2000 processes forked under pids 128");
  errno = failure;
  return refused(-1, {EAGAIN}, "fork() number " + std::to_string(forked + 1));
}

Verdict memoryBalloon(const Context&) {
  std::vector<void*> blocks;
  std::size_t total = 0;
  while (total < 2 * kMemoryLimit) {
    void* p = ::mmap(nullptr, 64 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    std::memset(p, 1, 64 * kMiB);
    blocks.push_back(p);
    total += 64 * kMiB;
  }
  int e = errno;
  for (void* p : blocks) ::munmap(p, 64 * kMiB);
  if (auto n = neighbour(total > 0, "map and touch 64 MiB")) return *n;
  if (total >= 2 * kMemoryLimit) return escaped("2 GiB mapped and touched under memoryBytes 1 GiB");
  errno = e;
  return refused(-1, {ENOMEM}, "mmap after " + std::to_string(total / kMiB) + " MiB");
}

// Pages that are not address space: files in the private tmpfs, and memfd.
Verdict pagesBalloon(const Context&, bool memfd) {
  std::vector<int> fds;
  std::string block(kMiB, 'x');
  std::size_t total = 0;
  int e = 0;
  while (total < kMemoryLimit + 256 * kMiB) {
    int fd = memfd ? static_cast<int>(::syscall(SYS_memfd_create, "balloon", 0))
                   : ::open(("/tmp/balloon-" + std::to_string(fds.size())).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      e = errno;
      break;
    }
    fds.push_back(fd);
    std::size_t file = 0;
    for (; file < 32 * kMiB; file += kMiB)
      if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
        e = errno;
        break;
      }
    total += file;
    if (file < 32 * kMiB) break;
  }
  for (int fd : fds) ::close(fd);
  for (std::size_t i = 0; !memfd && i < fds.size(); ++i) ::unlink(("/tmp/balloon-" + std::to_string(i)).c_str());
  if (auto n = neighbour(total > 0, "write a first MiB")) return *n;
  if (total >= kMemoryLimit + 256 * kMiB)
    return escaped(std::to_string(total / kMiB) + " MiB held in " + (memfd ? "memfd" : "/tmp") + " under memoryBytes 1 GiB");
  errno = e;
  return refused(-1, {ENOSPC, ENOMEM, EFBIG}, "write after " + std::to_string(total / kMiB) + " MiB");
}
Verdict tmpfsBalloon(const Context& c) { return pagesBalloon(c, false); }

Verdict memfdBalloon(const Context& c) { return pagesBalloon(c, true); }

Verdict diskFiller(const Context& c) {
  ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  int fd = ::open((c.ws + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::string block(kMiB, 'x');
  std::size_t total = 0;
  int e = 0;
  while (total < 128 * kMiB) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      e = errno;
      break;
    }
    total += kMiB;
  }
  ::close(fd);
  ::unlink((c.ws + "/filler").c_str());
  if (auto n = neighbour(total > 0, "write a first MiB")) return *n;
  if (total >= 128 * kMiB) return escaped("a 128 MiB file under fileSizeBytes 64 MiB");
  errno = e;
  return refused(-1, {EFBIG}, "write at " + std::to_string(total / kMiB) + " MiB");
}

Verdict fallocateBeyond(const Context& c) {
  int fd = ::open((c.ws + "/sparse").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (auto n = neighbour(fd >= 0 && ::write(fd, "x", 1) == 1, "create ws/sparse")) return *n;
  long rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(256 * kMiB));
  int e = errno;
  ::close(fd);
  ::unlink((c.ws + "/sparse").c_str());
  errno = e;
  if (rc != 0 && e == EOPNOTSUPP) return unproven("fallocate is not supported on this filesystem");
  return refused(rc, {EFBIG, ENOSPC}, "fallocate(KEEP_SIZE, 256 MiB)");
}

void spin(double seconds) {
  timespec start{}, now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  do ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
}

// One process over cpuSeconds: SIGXCPU then SIGKILL from RLIMIT_CPU.
Verdict cpuHog(const Context&) {
  pid_t pid = ::fork();
  if (pid == 0) {
    spin(3.0);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (auto n = neighbour(pid > 0, "fork()")) return *n;
  if (WIFSIGNALED(status)) return held("the hog was killed by signal " + std::to_string(WTERMSIG(status)));
  return escaped("3 s of CPU under cpuSeconds 2");
}

// Each child under the per-process limit, together well over it.
Verdict cpuForkChain(const Context&) {
  int forked = 0, finished = 0;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = ::fork();
    if (pid > 0) ++forked;
    if (pid == 0) {
      spin(1.5);
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) ++finished;
  }
  if (auto n = neighbour(forked > 0, "fork()")) return *n;
  if (finished == 3) return escaped("3 children used 4.5 s of CPU under cpuSeconds 2");
  return held(std::to_string(finished) + " of 3 children finished before the sandbox's CPU ran out");
}

// Per-user kernel counters are charged to the host uid.
Verdict inotifyInstances(const Context&) {
  std::string limit = readFile("/proc/sys/fs/inotify/max_user_instances");
  int max = std::atoi(limit.c_str());
  std::vector<int> fds;
  for (int i = 0; i < max + 16; ++i) {
    int fd = ::inotify_init1(IN_CLOEXEC);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  int e = errno;
  for (int fd : fds) ::close(fd);
  if (auto n = neighbour(!fds.empty(), "one inotify instance")) return *n;
  if (static_cast<int>(fds.size()) >= max)
    return escaped(std::to_string(fds.size()) + " inotify instances: the host user's whole allowance (" + limit.substr(0, limit.find('\n')) + ")");
  errno = e;
  return refused(-1, {EMFILE}, "inotify_init1 number " + std::to_string(fds.size() + 1));
}

// Pseudo-terminals are one count for the whole system: every devpts
// instance but the host's shares kernel.pty.max less kernel.pty.reserve.
Verdict ptyPool(const Context&) {
  const long max = std::atol(readFile("/proc/sys/kernel/pty/max").c_str());
  const long reserve = std::atol(readFile("/proc/sys/kernel/pty/reserve").c_str());
  const long pool = max - reserve;  // what the instances other than the host's may use together
  std::vector<int> fds;
  while (static_cast<long>(fds.size()) < pool) {
    int fd = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  int e = errno;
  for (int fd : fds) ::close(fd);
  if (auto n = neighbour(!fds.empty(), "one pty")) return *n;
  if (static_cast<long>(fds.size()) > pool / 2)
    return escaped(std::to_string(fds.size()) + " ptys of the " + std::to_string(pool) + " every sandbox and container shares");
  errno = e;
  return refused(-1, {ENOSPC}, "pty number " + std::to_string(fds.size() + 1));
}

// Linux AIO's events are one count for the whole system (fs.aio-max-nr).
Verdict aioEvents(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/aio-neighbour", "x"), "write the workspace")) return *n;
  aio_context_t context = 0;
  const long max = std::atol(readFile("/proc/sys/fs/aio-max-nr").c_str());
  long rc = ::syscall(SYS_io_setup, max > 0 ? max / 2 : 32768, &context);
  if (rc == 0) ::syscall(SYS_io_destroy, context);
  return refused(rc, {ENOSYS}, "io_setup() of half of fs.aio-max-nr");
}

// As an unprivileged user there is no cgroup to put the sandbox in: pids,
// memory and CPU fall back to per-process rlimits, a reported degradation.
constexpr Expectation kNoCgroupUnprivileged{Who::kUnprivileged, 9,
                                            "no cgroup for an unprivileged user: per-process rlimits, a reported degradation"};

const bool registered = registerCases({
    {"resource-exhaustion", "fork-bomb", "fork until something stops it (bounded at 2000)", "fork bombs", forkBomb, {},
     kNoCgroupUnprivileged},
    {"resource-exhaustion", "memory-balloon", "map and touch 2 GiB under memoryBytes 1 GiB", "memory exhaustion", memoryBalloon,
     {}, {}, "limits.memoryBytes", cpuHeadroom},
    {"resource-exhaustion", "tmpfs-balloon", "fill the private /tmp past memoryBytes (tmpfs pages are not address space)",
     "issue 9 §4", tmpfsBalloon, {}, {}, "limits.memoryBytes", cpuHeadroom},
    {"resource-exhaustion", "memfd-balloon", "fill memfds past memoryBytes", "issue 9 §4", memfdBalloon, {},
     kNoCgroupUnprivileged, "limits.memoryBytes", cpuHeadroom},
    {"resource-exhaustion", "disk-filler", "a file past fileSizeBytes", "disk exhaustion", diskFiller},
    {"resource-exhaustion", "fallocate-beyond", "fallocate(KEEP_SIZE) past fileSizeBytes", "issue 9 §4", fallocateBeyond},
    {"resource-exhaustion", "cpu-hog", "one process spinning past cpuSeconds", "CPU exhaustion", cpuHog, {}, {},
     "limits.cpuSeconds"},
    {"resource-exhaustion", "cpu-fork-chain", "children each under cpuSeconds, together over it", "issue 9 §4", cpuForkChain,
     {}, kNoCgroupUnprivileged, "limits.cpuSeconds"},
    {"resource-exhaustion", "inotify-instances", "take every inotify instance of the host user", "issue 9 §4", inotifyInstances},
    {"resource-exhaustion", "pty-pool", "take every pty the host's devpts instances share", "kernel.pty.max (review of issue 9 §4)",
     ptyPool},
    {"resource-exhaustion", "aio-events", "reserve half of the host's Linux AIO events", "fs.aio-max-nr (review of issue 9 §4)",
     aioEvents},
});

}  // namespace
}  // namespace stockade::redteam
