// seccompProgram() runs in the parent. installSeccomp() is ASYNC-SIGNAL-SAFE:
// it runs between clone and exec.
#include "platform/linux/seccomp.h"

#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "platform/linux/kernel_abi.h"
#include "platform/unique_fd.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262  // Linux 5.6
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40  // Linux 3.9
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080  // Linux 5.6
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

namespace stockade::platform {
namespace {

enum class Match {
  kAlways,            // any arguments
  kArg0HasBit,        // (arg0 & value) == value
  kArg1Low32Equals,   // (arg1 & 0xffffffff) == value: ioctl request numbers are 32-bit
  kArg0Low32Equals,   // socket domain (an int)
  kArg0Low32EqualsArg2Not,  // domain == value && protocol != value2
  kArg2Low32Equals,   // socket protocol (an int)
  kArg1HasBit,        // (arg1 & value) == value: a mode argument
  kArg2HasBit,
  kArg3HasBit,
  kArg0Low32EqualsArg1Low4Equals,  // socketpair: domain == value && (type & 0xf) == value2
};

struct Denial {
  const char* syscall;
  Match match;
  std::uint64_t value;
  std::uint64_t value2;
  int error;
  const char* reason;
  bool unixSocket;  // dropped when the policy allows unix sockets
};

constexpr std::uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET, CLONE_NEWTIME};

constexpr const char* kSetIdReason = "setuid/setgid bits would let a file written here run as the host's uid 0";

// THE table: every denied call and why. Keep reasons short and concrete.
constexpr Denial kDenials[] = {
    {"ptrace", Match::kAlways, 0, 0, EPERM, "inspect or control other processes", false},
    {"process_vm_readv", Match::kAlways, 0, 0, EPERM, "read another process's memory", false},
    {"process_vm_writev", Match::kAlways, 0, 0, EPERM, "write another process's memory", false},
    {"pidfd_getfd", Match::kAlways, 0, 0, EPERM, "steal another process's file descriptors", false},
    {"bpf", Match::kAlways, 0, 0, EPERM, "kernel attack surface; loads programs into the kernel", false},
    {"perf_event_open", Match::kAlways, 0, 0, EPERM, "side channels and kernel attack surface", false},
    {"keyctl", Match::kAlways, 0, 0, EPERM, "kernel keyrings are not namespaced", false},
    {"add_key", Match::kAlways, 0, 0, EPERM, "kernel keyrings are not namespaced", false},
    {"request_key", Match::kAlways, 0, 0, EPERM, "kernel keyrings are not namespaced", false},
    {"userfaultfd", Match::kAlways, 0, 0, EPERM, "widens kernel race windows for exploits", false},
    {"io_uring_setup", Match::kAlways, 0, 0, EPERM, "io_uring bypasses seccomp for the calls it submits", false},
    {"io_uring_enter", Match::kAlways, 0, 0, EPERM, "io_uring bypasses seccomp for the calls it submits", false},
    {"io_uring_register", Match::kAlways, 0, 0, EPERM, "io_uring bypasses seccomp for the calls it submits", false},
    {"kexec_load", Match::kAlways, 0, 0, EPERM, "replaces the running kernel", false},
    {"kexec_file_load", Match::kAlways, 0, 0, EPERM, "replaces the running kernel", false},
    {"init_module", Match::kAlways, 0, 0, EPERM, "loads kernel code", false},
    {"finit_module", Match::kAlways, 0, 0, EPERM, "loads kernel code", false},
    {"delete_module", Match::kAlways, 0, 0, EPERM, "unloads kernel code", false},
    {"mount", Match::kAlways, 0, 0, EPERM, "would rearrange the enforced filesystem view", false},
    {"umount2", Match::kAlways, 0, 0, EPERM, "would uncover masked paths", false},
    {"pivot_root", Match::kAlways, 0, 0, EPERM, "would rearrange the enforced filesystem view", false},
    {"open_tree", Match::kAlways, 0, 0, EPERM, "mount API: could clone hidden trees", false},
    {"move_mount", Match::kAlways, 0, 0, EPERM, "mount API: would rearrange the view", false},
    {"fsopen", Match::kAlways, 0, 0, EPERM, "mount API: creates filesystems", false},
    {"fsconfig", Match::kAlways, 0, 0, EPERM, "mount API: configures filesystems", false},
    {"fsmount", Match::kAlways, 0, 0, EPERM, "mount API: creates mounts", false},
    {"fspick", Match::kAlways, 0, 0, EPERM, "mount API: reconfigures mounts", false},
    {"mount_setattr", Match::kAlways, 0, 0, EPERM, "mount API: could make read-only mounts writable", false},
    {"setns", Match::kAlways, 0, 0, EPERM, "joins other namespaces", false},
    {"clone3", Match::kAlways, 0, 0, ENOSYS, "flags live in memory the filter cannot read; ENOSYS makes libc use clone()", false},
    {"open_by_handle_at", Match::kAlways, 0, 0, EPERM, "opens files by handle, bypassing path-based masks", false},
    {"name_to_handle_at", Match::kAlways, 0, 0, EPERM, "produces handles for open_by_handle_at", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCSTI, 0, EPERM, "TIOCSTI injects input into the controlling terminal", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCLINUX, 0, EPERM, "TIOCLINUX can inject input on virtual consoles", false},
    {"socket", Match::kArg0Low32Equals, AF_PACKET, 0, EPERM, "raw link-layer access", false},
    {"socket", Match::kArg0Low32Equals, AF_VSOCK, 0, EPERM, "host/guest sockets escape the network namespace", false},
    {"socket", Match::kArg0Low32EqualsArg2Not, AF_NETLINK, NETLINK_ROUTE, EPERM, "netlink families other than ROUTE are kernel attack surface", false},
    {"socket", Match::kArg0Low32Equals, AF_UNIX, 0, EPERM, "unix sockets reach host services; the policy allows none", true},
    {"socket", Match::kArg2Low32Equals, IPPROTO_MPTCP, 0, EPERM, "MPTCP is not covered by Landlock TCP rules", false},
    {"socketpair", Match::kArg0Low32EqualsArg1Low4Equals, AF_UNIX, SOCK_DGRAM, EPERM,
     "an unbound datagram socket can sendto() any host unix socket it can see", true},
    // The child may be the host's uid 0 (stockade run by root): a setuid or
    // setgid bit it sets on a file in a writable tree would make that file
    // run as root on the host later. Every call that sets mode bits refuses them.
    {"chmod", Match::kArg1HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"chmod", Match::kArg1HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"fchmod", Match::kArg1HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"fchmod", Match::kArg1HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"fchmodat", Match::kArg2HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"fchmodat", Match::kArg2HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"fchmodat2", Match::kArg2HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"fchmodat2", Match::kArg2HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"open", Match::kArg2HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"open", Match::kArg2HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"openat", Match::kArg3HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"openat", Match::kArg3HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"creat", Match::kArg1HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"creat", Match::kArg1HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"mknod", Match::kArg1HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"mknod", Match::kArg1HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"mknodat", Match::kArg2HasBit, S_ISUID, 0, EPERM, kSetIdReason, false},
    {"mknodat", Match::kArg2HasBit, S_ISGID, 0, EPERM, kSetIdReason, false},
    {"openat2", Match::kAlways, 0, 0, ENOSYS, "its mode lives in memory the filter cannot read; ENOSYS makes libc use openat()", false},
};

// unshare and clone: one row per namespace flag, generated from kNamespaceFlags.
constexpr const char* kNamespaceReason = "a new namespace would escape the enforced ones";

const char* flagName(std::uint64_t flag) {
  switch (flag) {
    case CLONE_NEWNS: return "CLONE_NEWNS";
    case CLONE_NEWCGROUP: return "CLONE_NEWCGROUP";
    case CLONE_NEWUTS: return "CLONE_NEWUTS";
    case CLONE_NEWIPC: return "CLONE_NEWIPC";
    case CLONE_NEWUSER: return "CLONE_NEWUSER";
    case CLONE_NEWPID: return "CLONE_NEWPID";
    case CLONE_NEWNET: return "CLONE_NEWNET";
    case CLONE_NEWTIME: return "CLONE_NEWTIME";
  }
  return "?";
}

std::vector<Denial> denials(const SeccompOptions& options) {
  std::vector<Denial> out;
  for (const auto& d : kDenials)
    if (!(d.unixSocket && options.allowUnixSockets)) out.push_back(d);
  for (const char* call : {"unshare", "clone"})
    for (auto flag : kNamespaceFlags) out.push_back({call, Match::kArg0HasBit, flag, 0, EPERM, kNamespaceReason, false});
  return out;
}

std::string describe(const Denial& d) {
  switch (d.match) {
    case Match::kAlways: return "always";
    case Match::kArg0HasBit: return std::string("arg0 & ") + flagName(d.value);
    case Match::kArg1Low32Equals: return "(arg1 & 0xffffffff) == " + std::to_string(d.value);
    case Match::kArg0Low32Equals: return "(arg0 & 0xffffffff) == " + std::to_string(d.value);
    case Match::kArg0Low32EqualsArg2Not:
      return "(arg0 & 0xffffffff) == " + std::to_string(d.value) + " && arg2 != " + std::to_string(d.value2);
    case Match::kArg2Low32Equals: return "(arg2 & 0xffffffff) == " + std::to_string(d.value);
    case Match::kArg1HasBit: return "arg1 & " + std::to_string(d.value);
    case Match::kArg2HasBit: return "arg2 & " + std::to_string(d.value);
    case Match::kArg3HasBit: return "arg3 & " + std::to_string(d.value);
    case Match::kArg0Low32EqualsArg1Low4Equals:
      return "(arg0 & 0xffffffff) == " + std::to_string(d.value) + " && (arg1 & 0xf) == " + std::to_string(d.value2);
  }
  return "?";
}

// libseccomp 2.5.4 (Debian 12) predates some calls; their x86_64 numbers.
int resolveSyscall(const char* name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR && std::strcmp(name, "fchmodat2") == 0) return linux_abi::kNrFchmodat2;
  return nr;
}

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(static_cast<scmp_filter_ctx>(ctx)); }
};

std::variant<SeccompProgram, std::string> compile(const SeccompOptions& options) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return std::string("seccomp_init(SCMP_ACT_ALLOW) failed");
  auto check = [](int rc, const std::string& call) -> std::optional<std::string> {
    if (rc == 0) return std::nullopt;
    return call + " failed: " + (strerrorname_np(-rc) ? strerrorname_np(-rc) : std::to_string(-rc).c_str());
  };
  // Any other ABI (i386 via int 0x80, x32) hits the bad-arch action.
  if (auto e = check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM)),
                     "seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM))"))
    return *e;
  for (const auto& d : denials(options)) {
    int nr = resolveSyscall(d.syscall);
    if (nr == __NR_SCMP_ERROR) return std::string("seccomp_syscall_resolve_name(\"") + d.syscall + "\") failed";
    const std::uint32_t action = SCMP_ACT_ERRNO(static_cast<std::uint16_t>(d.error));
    int rc = 0;
    switch (d.match) {
      case Match::kAlways: rc = seccomp_rule_add(ctx.get(), action, nr, 0); break;
      case Match::kArg0HasBit:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, d.value, d.value));
        break;
      case Match::kArg1Low32Equals:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, d.value));
        break;
      case Match::kArg0Low32Equals:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, d.value));
        break;
      case Match::kArg0Low32EqualsArg2Not:
        // A protocol with high bits set compares unequal and is denied: safe direction.
        rc = seccomp_rule_add(ctx.get(), action, nr, 2, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, d.value),
                              SCMP_A2(SCMP_CMP_NE, d.value2));
        break;
      case Match::kArg2Low32Equals:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffULL, d.value));
        break;
      case Match::kArg1HasBit:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, d.value, d.value));
        break;
      case Match::kArg2HasBit:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, d.value, d.value));
        break;
      case Match::kArg3HasBit:
        rc = seccomp_rule_add(ctx.get(), action, nr, 1, SCMP_A3(SCMP_CMP_MASKED_EQ, d.value, d.value));
        break;
      case Match::kArg0Low32EqualsArg1Low4Equals:
        rc = seccomp_rule_add(ctx.get(), action, nr, 2, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, d.value),
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xfULL, d.value2));
        break;
    }
    if (auto e = check(rc, std::string("seccomp_rule_add(") + d.syscall + ", " + describe(d) + ")")) return *e;
  }
  UniqueFd memfd(::memfd_create("stockade-seccomp", MFD_CLOEXEC));
  if (!memfd) return std::string("memfd_create(\"stockade-seccomp\", MFD_CLOEXEC) failed: ") + strerrorname_np(errno);
  if (auto e = check(seccomp_export_bpf(ctx.get(), memfd.get()), "seccomp_export_bpf(memfd)")) return *e;
  off_t size = ::lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0)
    return "seccomp_export_bpf produced " + std::to_string(size) + " bytes, not whole instructions";
  SeccompProgram program;
  program.instructions.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(memfd.get(), program.instructions.data(), static_cast<std::size_t>(size), 0) != size)
    return std::string("pread(memfd, ") + std::to_string(size) + ") failed: " + strerrorname_np(errno);
  return program;
}

}  // namespace

std::vector<SeccompDenialInfo> seccompDenials(const SeccompOptions& options) {
  std::vector<SeccompDenialInfo> out;
  for (const auto& d : denials(options)) out.push_back({d.syscall, describe(d), d.error, d.reason});
  return out;
}

std::variant<const SeccompProgram*, std::string> seccompProgram(const SeccompOptions& options) {
  static std::mutex mutex;
  static std::map<bool, SeccompProgram> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(options.allowUnixSockets); it != cache.end()) return &it->second;
  auto compiled = compile(options);
  if (auto* error = std::get_if<std::string>(&compiled)) return *error;
  auto [it, inserted] = cache.emplace(options.allowUnixSockets, std::move(std::get<SeccompProgram>(compiled)));
  return &it->second;
}

bool installSeccomp(const SeccompProgram& program, ChildError& error) noexcept {
  struct sock_fprog prog;
  prog.len = static_cast<unsigned short>(program.instructions.size());
  prog.filter = const_cast<sock_filter*>(program.instructions.data());
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    error.step = static_cast<std::int32_t>(SetupStep::kSeccomp);
    error.error = errno;
    error.add("seccomp(SECCOMP_SET_MODE_FILTER, ").number(prog.len).add(" instructions)");
    return false;
  }
  return true;
}

}  // namespace stockade::platform
