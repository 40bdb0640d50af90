// More resource exhaustion under the fixed limits (runner.cc; cpuSeconds 20
// for the memory case, cpuHeadroom()): memory the
// sandbox's IPC namespace holds, and per-user counters beyond inotify. Every
// attack is bounded, so one that is not stopped still ends and says so.
// (POSIX message queues need no case: mq_open(O_CREAT) is refused with
// EACCES -- the queue's filesystem lies outside every Landlock rule.)
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kMemoryLimit = 1024 * kMiB;  // the policy's memoryBytes

// SysV shared memory is tmpfs pages of the kernel's own, which stay with the
// segment (in the sandbox's IPC namespace) after every process detaches:
// not address space, so RLIMIT_AS cannot hold them; the memory cgroup does.
Verdict sysvShmBalloon(const Context&) {
  constexpr std::size_t kChunk = 64 * kMiB;
  std::vector<int> ids;
  std::size_t total = 0;
  int e = 0;
  while (total < kMemoryLimit + 256 * kMiB) {
    const int id = ::shmget(IPC_PRIVATE, kChunk, IPC_CREAT | 0600);
    if (id < 0) {
      e = errno;
      break;
    }
    ids.push_back(id);
    void* p = ::shmat(id, nullptr, 0);
    if (p == reinterpret_cast<void*>(-1)) {
      e = errno;
      break;
    }
    std::memset(p, 1, kChunk);
    ::shmdt(p);  // detached: the pages stay with the segment
    total += kChunk;
  }
  for (int id : ids) ::shmctl(id, IPC_RMID, nullptr);
  if (auto n = neighbour(total > 0, "fill a first 64 MiB segment")) return *n;
  if (total >= kMemoryLimit + 256 * kMiB)
    return escaped(std::to_string(total / kMiB) + " MiB held in detached SysV segments under memoryBytes 1 GiB");
  errno = e;
  return refused(-1, {ENOSPC, ENOMEM}, "shmget after " + std::to_string(total / kMiB) + " MiB");
}

// fanotify groups are counted per user (max_fanotify_groups): the sandbox
// gets its own share in its user namespace.
Verdict fanotifyGroups(const Context&) {
  const std::string limit = readFile("/proc/sys/fs/fanotify/max_user_groups");  // the host user's allowance
  const int max = std::atoi(limit.c_str());
  std::vector<int> fds;
  for (int i = 0; i < max + 16; ++i) {
    const int fd = ::fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC, O_RDONLY);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  const int e = errno;
  for (int fd : fds) ::close(fd);
  if (fds.empty() && (e == EPERM || e == EINVAL)) return unproven("no unprivileged fanotify on this kernel");
  if (auto n = neighbour(!fds.empty(), "one fanotify group")) return *n;
  if (max > 0 && static_cast<int>(fds.size()) >= max)
    return escaped(std::to_string(fds.size()) + " fanotify groups: the host user's whole allowance");
  errno = e;
  return refused(-1, {EMFILE}, "fanotify_init number " + std::to_string(fds.size() + 1));
}

// Locked memory counts per user (RLIMIT_MEMLOCK, per user namespace since
// 5.14): a sandbox locks its share, not the host user's whole allowance.
Verdict mlockBeyondShare(const Context&) {
  constexpr std::size_t kSize = 256 * kMiB;
  void* p = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return unproven("mmap 256 MiB");
  const bool small = ::mlock(p, 64 * 1024) == 0;
  ::munlock(p, 64 * 1024);
  if (auto n = neighbour(small, "mlock 64 KiB")) {
    ::munmap(p, kSize);
    return *n;
  }
  const long rc = ::mlock(p, kSize);
  const int e = errno;
  ::munmap(p, kSize);
  errno = e;
  return refused(rc, {ENOMEM, EPERM, EAGAIN}, "mlock of 256 MiB");
}

// Each denied call makes the supervisor answer and audit it, on its own
// CPU time, outside the sandbox's cgroup (4.6 times the sandbox's own per
// call here): a flood of them kept a host core busy while the sandbox stayed
// under cpuSeconds. Floods denied calls until its own CPU time reaches 90% of
// the limit (cpuSeconds 2): it must be killed by limits.cpuSeconds first,
// the supervisor's answers counted with it.
Verdict deniedCallFlood(const Context&) {
  errno = 0;
  if (auto n = neighbour(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == -1 && errno == EPERM, "one ptrace() is EPERM"))
    return *n;
  auto ownCpu = [] {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  };
  long calls = 0;
  while (ownCpu() < 1.8)
    for (int i = 0; i < 100; ++i, ++calls) (void)::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
  return escaped("made " + std::to_string(calls) +
                 " denied calls in 1.8 s of its own CPU under cpuSeconds 2: the supervisor's answers were not counted");
}

// As an unprivileged user there is no memory cgroup: memoryBytes falls back
// to RLIMIT_AS, which SysV segments are outside, a reported degradation.
constexpr Expectation kNoCgroupUnprivileged{Who::kUnprivileged, 9,
                                            "no cgroup for an unprivileged user: per-process rlimits, a reported degradation"};

const bool registered = registerCases({
    {"resource-exhaustion", "sysv-shm-balloon", "fill detached SysV shared memory segments past memoryBytes",
     "SysV IPC (review of issue 9 §4)", sysvShmBalloon, {}, kNoCgroupUnprivileged, "limits.memoryBytes", cpuHeadroom},
    {"resource-exhaustion", "fanotify-groups", "take every fanotify group of the host user", "review of issue 9 §4",
     fanotifyGroups},
    {"resource-exhaustion", "mlock-beyond-share", "lock 256 MiB of memory", "RLIMIT_MEMLOCK (review of issue 9 §4)",
     mlockBeyondShare},
    {"resource-exhaustion", "denied-call-flood", "flood denied calls: the supervisor's CPU answering them, outside the cgroup",
     "issue 9 §4, §7 (host resources outside the limits, floods reaching the supervisor)", deniedCallFlood, "ptrace",
     {}, "limits.cpuSeconds"},
});

}  // namespace
}  // namespace stockade::redteam
