// Raw system calls for the code between clone and exec: spawn.cc's child
// path and everything it calls (mounts, Landlock, privileges, namespaces,
// seccomp, loopback, user counters, cgroup join, the error record).
//
// ASYNC-SIGNAL-SAFE, and free of every libc function a sanitizer intercepts.
// The child is a copy of a possibly multi-threaded supervisor: an interceptor
// (ThreadSanitizer's close(), sigaction(), poll(), prctl(), _exit(), ...) may
// wait for a lock another thread of the supervisor held at clone time, which
// no thread of the copy will ever release. So every call here goes through
// glibc's syscall(3), a bare trampoline that sets errno and that no sanitizer
// intercepts, or through the few lines of assembly in raw_syscall.cc; and the
// string helpers below replace strlen(), strchr(), memchr() and memcpy(),
// which sanitizers intercept too. Each wrapper returns what the libc wrapper
// of the same name returns (-1 with errno on failure).
//
// The child path's object code is checked for it: tests/child_path_symbols.py
// (ctest child_path_links_no_intercepted_symbol) follows every call from
// childMain() and fails on any external symbol outside its allow-list.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
// A build with a sanitizer runtime that writes reports (ASan and UBSan
// together, or TSan): the sandbox's init keeps a descriptor for them
// (spawn.cc). Never defined in a release build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOCKADE_SANITIZER_REPORTS 1
#endif

#if !defined(__x86_64__)
#error "platform/linux/raw_syscall.h: vfork() and the signal restorer are written for x86_64 only"
#endif

namespace stockade::platform::sys {

inline long call(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) noexcept {
  return ::syscall(nr, a, b, c, d, e, f);
}
template <typename T>
inline long arg(T* p) noexcept {
  return reinterpret_cast<long>(p);
}

// --- files --------------------------------------------------------------
inline ssize_t read(int fd, void* into, std::size_t n) noexcept {
  return call(SYS_read, fd, arg(into), static_cast<long>(n));
}
inline ssize_t write(int fd, const void* from, std::size_t n) noexcept {
  return call(SYS_write, fd, arg(from), static_cast<long>(n));
}
inline int close(int fd) noexcept { return static_cast<int>(call(SYS_close, fd)); }
inline int openat(int dir, const char* path, int flags, mode_t mode = 0) noexcept {
  return static_cast<int>(call(SYS_openat, dir, arg(path), flags, mode));
}
inline int open(const char* path, int flags, mode_t mode = 0) noexcept { return openat(AT_FDCWD, path, flags, mode); }
inline int dup2(int from, int to) noexcept { return static_cast<int>(call(SYS_dup2, from, to)); }
inline int dup3(int from, int to, int flags) noexcept { return static_cast<int>(call(SYS_dup3, from, to, flags)); }
inline int fcntl(int fd, int cmd, long value = 0) noexcept { return static_cast<int>(call(SYS_fcntl, fd, cmd, value)); }
inline int ioctl(int fd, unsigned long request, long value = 0) noexcept {
  return static_cast<int>(call(SYS_ioctl, fd, static_cast<long>(request), value));
}
template <typename T>
inline int ioctl(int fd, unsigned long request, T* value) noexcept {
  return ioctl(fd, request, arg(value));
}
inline int fstat(int fd, struct stat* st) noexcept { return static_cast<int>(call(SYS_fstat, fd, arg(st))); }
inline int mkdirat(int dir, const char* path, mode_t mode) noexcept {
  return static_cast<int>(call(SYS_mkdirat, dir, arg(path), mode));
}
inline int mkdir(const char* path, mode_t mode) noexcept { return mkdirat(AT_FDCWD, path, mode); }
inline int symlinkat(const char* target, int dir, const char* path) noexcept {
  return static_cast<int>(call(SYS_symlinkat, arg(target), dir, arg(path)));
}
inline int symlink(const char* target, const char* path) noexcept { return symlinkat(target, AT_FDCWD, path); }
inline int chdir(const char* path) noexcept { return static_cast<int>(call(SYS_chdir, arg(path))); }
inline int fchdir(int fd) noexcept { return static_cast<int>(call(SYS_fchdir, fd)); }
inline int mount(const char* source, const char* target, const char* type, unsigned long flags,
                 const void* data) noexcept {
  return static_cast<int>(call(SYS_mount, arg(source), arg(target), arg(type), static_cast<long>(flags), arg(data)));
}
inline int umount2(const char* target, int flags) noexcept {
  return static_cast<int>(call(SYS_umount2, arg(target), flags));
}
inline void* mmap(void* at, std::size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return reinterpret_cast<void*>(call(SYS_mmap, arg(at), static_cast<long>(length), prot, flags, fd, offset));
}

// --- processes ------------------------------------------------------------
inline int execve(const char* path, char* const* argv, char* const* envp) noexcept {
  return static_cast<int>(call(SYS_execve, arg(path), arg(argv), arg(envp)));
}
[[noreturn]] inline void exitGroup(int status) noexcept {
  call(SYS_exit_group, status);
  __builtin_unreachable();
}
inline int kill(pid_t pid, int sig) noexcept { return static_cast<int>(call(SYS_kill, pid, sig)); }
inline pid_t waitpid(pid_t pid, int* status, int options) noexcept {
  return static_cast<pid_t>(call(SYS_wait4, pid, arg(status), options, 0));
}
inline int waitid(int type, int id, siginfo_t* info, int options) noexcept {
  return static_cast<int>(call(SYS_waitid, type, id, arg(info), options, 0));
}
// A process's CPU-time clock (clock_getcpuclockid(3)): CPUCLOCK_PROF, its user
// plus system time as the kernel's ticks sampled them -- the count RLIMIT_CPU
// is checked against (kernel/time/posix-cpu-timers.c).
inline int processProfTime(pid_t pid, timespec* out) noexcept {
  const long clock = static_cast<long>((~static_cast<unsigned long>(pid)) << 3);  // MAKE_PROCESS_CPUCLOCK(pid, 0)
  return static_cast<int>(call(SYS_clock_gettime, clock, arg(out)));
}
inline pid_t setsid() noexcept { return static_cast<pid_t>(call(SYS_setsid)); }
inline int prctl(int option, unsigned long a = 0, unsigned long b = 0, unsigned long c = 0,
                 unsigned long d = 0) noexcept {
  return static_cast<int>(call(SYS_prctl, option, static_cast<long>(a), static_cast<long>(b), static_cast<long>(c),
                               static_cast<long>(d)));
}
inline int setrlimit(int resource, const rlimit* limit) noexcept {
  return static_cast<int>(call(SYS_prlimit64, 0, resource, arg(limit), 0));
}
inline int sethostname(const char* name, std::size_t length) noexcept {
  return static_cast<int>(call(SYS_sethostname, arg(name), static_cast<long>(length)));
}
// poll(2) as ppoll(2) with a millisecond timeout (negative: none).
inline int poll(pollfd* fds, nfds_t count, int timeoutMs) noexcept {
  struct timespec timeout = {timeoutMs / 1000, (timeoutMs % 1000) * 1000000L};
  return static_cast<int>(
      call(SYS_ppoll, arg(fds), static_cast<long>(count), timeoutMs < 0 ? 0 : arg(&timeout), 0, 0));
}
// vfork(2), returning what the kernel returns: the child's pid, 0 in the
// child, or -errno (not -1: it cannot be wrapped in a function that sets
// errno, since the child must not return from the function that called it).
// The child runs on the caller's stack until it execs or exits, so the caller
// must not keep anything the child could overwrite; returns_twice tells the
// compiler so, as for vfork().
long vforkRaw() noexcept asm("stockade_raw_vfork") __attribute__((returns_twice));

// For the vfork() parent, once the child has exec'd or exited: under
// AddressSanitizer the stack's shadow is shared with the child too, and the
// redzones the child's frames poisoned below the caller's frame (the program
// path buffer of execProgram(), say) stay poisoned after it is gone; the
// parent's next calls into that stretch of stack were reported as overflows
// (found by the asan stage: init's exit reported a stack-buffer-overflow in
// the sigaltstack() interceptor -- ASan's own report names vfork as a cause
// of false positives). This clears kVforkChildStack bytes below the caller's
// frame, more than the child's deepest path uses. Nothing without ASan.
inline constexpr std::size_t kVforkChildStack = 64 * 1024;
[[gnu::always_inline]] inline void forgetVforkChildStack() noexcept {
#if defined(__SANITIZE_ADDRESS__)
  char* frame = static_cast<char*>(__builtin_frame_address(0));
  __asan_unpoison_memory_region(frame - kVforkChildStack, kVforkChildStack);
#endif
}

// --- signals (the kernel's 64-bit mask, not glibc's sigset_t) ---------------
using SignalSet = std::uint64_t;
constexpr SignalSet signalBit(int sig) noexcept { return SignalSet{1} << (sig - 1); }
inline int sigprocmask(int how, const SignalSet* set, SignalSet* old) noexcept {
  return static_cast<int>(call(SYS_rt_sigprocmask, how, arg(set), arg(old), sizeof(SignalSet)));
}
// sigaction(2) with `handler` (or SIG_DFL / SIG_IGN), `flags` and an empty
// mask. A handler returns through stockade_raw_restore_rt (rt_sigreturn).
int sigaction(int sig, void (*handler)(int), unsigned long flags) noexcept;

// --- sockets --------------------------------------------------------------
inline int socket(int domain, int type, int protocol) noexcept {
  return static_cast<int>(call(SYS_socket, domain, type, protocol));
}
inline int bind(int fd, const sockaddr* address, socklen_t length) noexcept {
  return static_cast<int>(call(SYS_bind, fd, arg(address), length));
}
inline int listen(int fd, int backlog) noexcept { return static_cast<int>(call(SYS_listen, fd, backlog)); }
inline int setsockopt(int fd, int level, int name, const void* value, socklen_t length) noexcept {
  return static_cast<int>(call(SYS_setsockopt, fd, level, name, arg(value), length));
}
inline ssize_t sendmsg(int fd, const msghdr* message, int flags) noexcept {
  return call(SYS_sendmsg, fd, arg(message), flags);
}

// --- strings, without libc ------------------------------------------------
// The accesses are volatile: GCC recognises these loops and would turn them
// back into calls to strlen(), memchr() and memcpy().
inline std::size_t length(const char* text) noexcept {
  const volatile char* p = text;
  std::size_t n = 0;
  while (p[n] != '\0') ++n;
  return n;
}
// The first `c` in `text`, or nullptr (strchr without finding the NUL).
inline const char* find(const char* text, char c) noexcept {
  const volatile char* p = text;
  for (std::size_t i = 0; p[i] != '\0'; ++i)
    if (p[i] == c) return text + i;
  return nullptr;
}
// The first `c` in [from, from + n), or nullptr.
inline const char* find(const char* from, std::size_t n, char c) noexcept {
  const volatile char* p = from;
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] == c) return from + i;
  return nullptr;
}
// Copies n bytes; the regions do not overlap.
inline void copy(void* to, const void* from, std::size_t n) noexcept {
  auto* out = static_cast<volatile char*>(to);
  const auto* in = static_cast<const char*>(from);
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
}

}  // namespace stockade::platform::sys
