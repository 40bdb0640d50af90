// Kernel attack surface and seccomp bypasses. Where the filter is what must
// refuse, the case names the call (Case::filterRefuses) and the runner
// requires the filter's denial event: a call that fails for lack of
// capabilities would fail with the filter switched off too.
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

// The allowed neighbour of every kernel case: a harmless syscall works.
std::optional<Verdict> getppidWorks() { return neighbour(::syscall(SYS_getppid) >= 0, "getppid()"); }

#define KERNEL_CALL_CASE(fn, call)            \
  Verdict fn(const Context&) {                 \
    if (auto n = getppidWorks()) return *n;    \
    return refused(call, {EPERM}, #fn "()");   \
  }

// Arguments a caller without capabilities could use, so that only the
// filter stands between them and the kernel.
KERNEL_CALL_CASE(bpfProgLoad, ([] {
                   bpf_insn insns[] = {{BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0}, {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
                   bpf_attr attr{};
                   attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
                   attr.insn_cnt = 2;
                   attr.insns = reinterpret_cast<std::uint64_t>(insns);
                   attr.license = reinterpret_cast<std::uint64_t>("GPL");
                   return ::syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
                 }()))
KERNEL_CALL_CASE(perfEventOpen, ([] {
                   perf_event_attr attr{};
                   attr.size = sizeof attr;
                   attr.type = PERF_TYPE_SOFTWARE;
                   attr.config = PERF_COUNT_SW_TASK_CLOCK;
                   attr.exclude_kernel = 1;
                   return ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
                 }()))
KERNEL_CALL_CASE(userfaultfd, ::syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY: no capability needed */))
KERNEL_CALL_CASE(ioUringSetup, ([] {
                   unsigned char params[120] = {};
                   return ::syscall(SYS_io_uring_setup, 8, params);
                 }()))
KERNEL_CALL_CASE(keyctlJoin, ::syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, "redteam"))
KERNEL_CALL_CASE(addKey, ::syscall(SYS_add_key, "user", "redteam", "x", 1, -3 /* KEY_SPEC_SESSION_KEYRING */))
KERNEL_CALL_CASE(unshareUser, ::unshare(CLONE_NEWUSER))
KERNEL_CALL_CASE(unshareMount, ::unshare(CLONE_NEWNS))
KERNEL_CALL_CASE(setnsCall, ::setns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), CLONE_NEWNET))
KERNEL_CALL_CASE(mountTmpfs, ::mount("none", "/tmp", "tmpfs", 0, nullptr))
KERNEL_CALL_CASE(fsopenCall, ::syscall(SYS_fsopen, "tmpfs", 0))
KERNEL_CALL_CASE(openTreeCall, ::syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */))
KERNEL_CALL_CASE(finitModule, ::syscall(SYS_finit_module, ::open("/dev/null", O_RDONLY | O_CLOEXEC), "", 0))
KERNEL_CALL_CASE(kexecLoad, ::syscall(SYS_kexec_load, 0, 0, nullptr, 0))
KERNEL_CALL_CASE(ptraceTraceme, ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr))
KERNEL_CALL_CASE(x32Getpid, ::syscall(0x40000000L | 39L))

// Writes to kernel knobs: read-only mounts refuse them (EROFS).
Verdict procSysWrite(const Context&, const char* path) {
  if (auto n = neighbour(!readFile(path).empty(), std::string("read ") + path)) return *n;
  return refused(writeFile(path, "|/tmp/x %p\n", O_WRONLY) ? 0 : -1, {EROFS, EACCES}, std::string("write ") + path);
}
Verdict corePattern(const Context& c) { return procSysWrite(c, "/proc/sys/kernel/core_pattern"); }
Verdict sysrqTrigger(const Context&) {
  if (auto n = getppidWorks()) return *n;
  // ENOENT: this kernel has no magic SysRq (the sandbox's /proc is the kernel's own view).
  return refused(writeFile("/proc/sysrq-trigger", "h", O_WRONLY) ? 0 : -1, {EROFS, EACCES, ENOENT},
                 "write /proc/sysrq-trigger");
}
Verdict sysfsWrite(const Context&) {
  const char* knob = "/sys/kernel/mm/transparent_hugepage/enabled";
  if (auto n = neighbour(!readFile(knob).empty(), std::string("read ") + knob)) return *n;
  return refused(writeFile(knob, "never", O_WRONLY) ? 0 : -1, {EROFS, EACCES}, std::string("write ") + knob);
}
Verdict devNodes(const Context&) {
  if (auto n = neighbour(readFile("/dev/null").empty() && writeFile("/dev/null", "x", O_WRONLY), "use /dev/null")) return *n;
  for (const char* dev : {"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1"})
    if (::access(dev, F_OK) == 0) return escaped(std::string(dev) + " exists in the sandbox");
  return refused(::mknod("/dev/sdx", S_IFBLK | 0600, makedev(8, 0)), {EROFS, EPERM, EACCES}, "mknod a block device");
}

// --- seccomp bypasses ---

Verdict int80(const Context&) {
  if (auto n = getppidWorks()) return *n;
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");  // i386 getpid
  if (ret >= 0) return escaped("i386 getpid through int 0x80 returned " + std::to_string(ret));
  errno = static_cast<int>(-ret);
  return refused(-1, {EPERM}, "int 0x80 getpid");
}

Verdict highBitsSocket(const Context&) {
  if (auto n = neighbour(::socket(AF_INET, SOCK_STREAM, 0) >= 0, "a TCP socket")) return *n;
  // AF_PACKET with bits above 32 set: a filter comparing 64 bits misses it.
  return refused(::syscall(SYS_socket, 0x100000000L | AF_PACKET, SOCK_RAW, 0), {EPERM}, "socket(AF_PACKET | 1<<32)");
}

// A listener of its own would let the program answer "continue" to calls
// stockade's filter sends to the supervisor once stockade's is gone.
Verdict ownFilterWithListener(const Context&) {
  sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog prog = {1, allow};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return unproven("PR_SET_NO_NEW_PRIVS failed");
  return refused(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog), {EPERM},
                 "seccomp(SET_MODE_FILTER, NEW_LISTENER)");
}

// An allow-all filter of its own (allowed) must not loosen stockade's: the
// strictest answer of stacked filters wins.
Verdict ownAllowAllFilter(const Context&) {
  sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog prog = {1, allow};
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (auto n = neighbour(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0, "install an allow-all filter"))
    return *n;
  return refused(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), {EPERM}, "ptrace after the program's own filter");
}

Verdict clone3Namespaces(const Context&) {
  if (auto n = getppidWorks()) return *n;
  std::uint64_t args[11] = {};
  args[0] = CLONE_NEWUSER | CLONE_NEWNS;
  args[4] = SIGCHLD;
  long pid = ::syscall(SYS_clone3, args, 88);
  if (pid == 0) ::_exit(0);
  if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return refused(pid, {ENOSYS, EPERM}, "clone3(CLONE_NEWUSER|CLONE_NEWNS)");
}

Verdict cloneNewnet(const Context&) {
  pid_t plain = ::fork();
  if (plain == 0) ::_exit(0);
  if (auto n = neighbour(plain > 0 && ::waitpid(plain, nullptr, 0) == plain, "fork()")) return *n;
  long pid = ::syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) ::_exit(0);
  if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return refused(pid, {EPERM}, "clone(CLONE_NEWNET)");
}

Verdict openat2Setuid(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/plain", "x"), "write ws/plain")) return *n;
  struct {
    std::uint64_t flags, mode, resolve;
  } how = {O_CREAT | O_WRONLY, 04755, 0};
  return refused(::syscall(SYS_openat2, AT_FDCWD, (c.ws + "/suid").c_str(), &how, sizeof how), {ENOSYS, EPERM},
                 "openat2(O_CREAT, 04755)");
}

// The sandbox's /dev/null and /dev/tty are the host's device nodes, bound
// in: as root (uid 0 without capabilities) the program tries to change the
// host's inodes -- a world-writable /dev/null made 0600 breaks every tool of
// the host's; a chown of the tty hands the terminal over.
Verdict hostDeviceInodes(const Context&) {
  int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (auto n = neighbour(fd >= 0 && ::write(fd, "x", 1) == 1, "write to /dev/null")) return *n;
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/tty"}) {
    Verdict v = refused(::chmod(dev, 0600), {EROFS, EPERM, EACCES}, std::string("chmod ") + dev);
    if (v.result != Verdict::kHeld) return v;
    v = refused(::chown(dev, 12345, 12345), {EROFS, EPERM, EACCES}, std::string("chown ") + dev);
    if (v.result != Verdict::kHeld) return v;
    v = refused(::utimensat(AT_FDCWD, dev, nullptr, 0), {EROFS, EPERM, EACCES}, std::string("utimensat ") + dev);
    if (v.result != Verdict::kHeld) return v;
  }
  Verdict v = refused(::fchmod(fd, 0600), {EROFS, EPERM, EACCES}, "fchmod of an open /dev/null");
  ::close(fd);
  return v;
}

std::string hostDeviceInodesHost(HostContext&) {
  for (const char* dev : {"/dev/null", "/dev/zero"}) {
    struct stat st {};
    if (::stat(dev, &st) != 0 || (st.st_mode & 07777) != 0666 || st.st_uid != 0)
      return std::string("the host's ") + dev + " changed";
  }
  return "";
}

const bool registered = registerCases({
    {"kernel-surface", "bpf-prog-load", "load a socket-filter eBPF program", "eBPF verifier bugs (CVE-2021-3490, CVE-2023-2163)", bpfProgLoad, "bpf"},
    {"kernel-surface", "perf-event-open", "open a perf event on itself", "perf_event bugs (CVE-2023-6931)", perfEventOpen, "perf_event_open"},
    {"kernel-surface", "userfaultfd", "userfaultfd in user mode (needs no capability)", "race widening in kernel exploits", userfaultfd, "userfaultfd"},
    {"kernel-surface", "io-uring", "io_uring_setup", "io_uring bugs; Google disabled it in its sandboxes (2023)", ioUringSetup, "io_uring_setup"},
    {"kernel-surface", "keyctl-join", "join a new session keyring", "CVE-2016-0728 (keyring refcount)", keyctlJoin, "keyctl"},
    {"kernel-surface", "add-key", "add a key to the session keyring", "keyring attack surface; keys are not namespaced", addKey, "add_key"},
    {"kernel-surface", "unshare-user", "a nested user namespace", "CVE-2022-0185 (fsconfig heap overflow via userns)", unshareUser, "unshare"},
    {"kernel-surface", "unshare-mount", "a new mount namespace", "mount namespace tricks", unshareMount, "unshare"},
    {"kernel-surface", "setns", "setns into a namespace", "namespace re-entry", setnsCall, "setns"},
    {"kernel-surface", "mount-tmpfs", "mount(2) over /tmp", "mount-based view changes", mountTmpfs, "mount"},
    {"kernel-surface", "fsopen", "the new mount API (fsopen)", "CVE-2022-0185", fsopenCall, "fsopen"},
    {"kernel-surface", "open-tree", "clone the root mount with open_tree", "detached mount escapes", openTreeCall, "open_tree"},
    {"kernel-surface", "finit-module", "load a kernel module", "module loading", finitModule, "finit_module"},
    {"kernel-surface", "kexec-load", "kexec a new kernel", "kexec", kexecLoad, "kexec_load"},
    {"kernel-surface", "ptrace-traceme", "ptrace (PTRACE_TRACEME)", "ptrace-based seccomp bypass before 4.8", ptraceTraceme, "ptrace"},
    {"kernel-surface", "core-pattern", "write /proc/sys/kernel/core_pattern (a pipe runs as root on the host)", "core_pattern container escapes", corePattern},
    {"kernel-surface", "sysrq-trigger", "write /proc/sysrq-trigger", "host-wide sysrq", sysrqTrigger},
    {"kernel-surface", "sysfs-write", "write a /sys knob", "sysfs writes", sysfsWrite},
    {"kernel-surface", "device-nodes", "find or make raw device nodes", "device access", devNodes},
    {"kernel-surface", "host-device-inodes", "chmod, chown, utimensat of the host's /dev/null, /dev/zero, /dev/tty",
     "bind-mounted device nodes (container /dev hardening)", hostDeviceInodes, {}, {}, {}, nullptr, hostDeviceInodesHost},
    {"seccomp-bypasses", "int80-i386", "an i386 syscall through int 0x80", "x86 compat-ABI filter bypasses", int80},
    {"seccomp-bypasses", "x32-abi", "an x32 syscall (bit 30 set)", "x32 filter bypasses", x32Getpid},
    {"seccomp-bypasses", "high-bits-argument", "AF_PACKET with bits above 32 set", "64-bit argument comparisons", highBitsSocket, "socket"},
    {"seccomp-bypasses", "own-filter-listener", "a filter of its own with a listener", "seccomp_unotify(2) on nested listeners", ownFilterWithListener},
    {"seccomp-bypasses", "own-allow-all-filter", "an allow-all filter stacked on stockade's, then ptrace", "filter stacking", ownAllowAllFilter, "ptrace"},
    {"seccomp-bypasses", "clone3-namespaces", "clone3 with namespace flags (flags behind a pointer)", "clone3 filtering", clone3Namespaces},
    {"seccomp-bypasses", "clone-newnet", "clone with CLONE_NEWNET", "namespace creation via clone", cloneNewnet, "clone"},
    {"seccomp-bypasses", "openat2-setuid", "openat2 creating a setuid file (flags behind a pointer)", "openat2 filtering", openat2Setuid},
});

}  // namespace
}  // namespace stockade::redteam
