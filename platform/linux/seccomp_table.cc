// THE seccomp denial table (declared in seccomp.h). Kept apart from
// installSeccomp() so that the build-time filter generator can link it
// without the rest of the platform library.
#include "platform/linux/seccomp.h"

#include <linux/kd.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/vt.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

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

using Match = SeccompMatch;

struct Denial {
  const char* syscall;
  Match match;
  std::uint64_t value;
  std::uint64_t value2;
  int error;
  const char* reason;
  bool unixSocket;  // dropped when the policy allows unix sockets
  // Answered by the filter itself, never through the supervisor (see the
  // seccomp row: it must hold even when no supervisor is listening).
  bool unsupervised = false;
};

constexpr std::uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET, CLONE_NEWTIME};

constexpr const char* kSetIdReason = "setuid/setgid bits would let a file written here run as the host's uid 0";

// THE table: every denied call and why. Keep reasons short and concrete.
constexpr Denial kDenials[] = {
    {"ptrace", Match::kAlways, 0, 0, EPERM, "inspect or control other processes", false},
    // A filter of the program's own with a listener could answer, with
    // "continue", calls this table denies, once stockade's listener is gone
    // (a newer filter wins between equal actions). EPERM from the filter
    // itself outranks any user notification.
    {"seccomp", Match::kArg1HasBit, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, EPERM,
     "a listener of the program's own could let through calls this table denies", false, true},
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
    // Terminal state that outlives the sandbox (`stockade run -T` hands the
    // operator's terminal to the child; a PTY of the sandbox's own is harmless
    // to change, but nothing a program needs uses these).
    {"ioctl", Match::kArg1Low32Equals, TIOCSETD, 0, EPERM, "changes the line discipline: the terminal stays dead after the sandbox", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCCONS, 0, EPERM, "redirects the system console to this terminal", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCVHANGUP, 0, EPERM, "hangs the terminal up for every process that has it open", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCEXCL, 0, EPERM, "makes the terminal exclusive: nobody can open it after the sandbox", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCSSERIAL, 0, EPERM, "reconfigures the serial line behind the terminal", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCMSET, 0, EPERM, "sets the modem lines (DTR drop hangs the line up)", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCMBIS, 0, EPERM, "sets the modem lines (DTR drop hangs the line up)", false},
    {"ioctl", Match::kArg1Low32Equals, TIOCMBIC, 0, EPERM, "clears the modem lines (DTR drop hangs the line up)", false},
    {"ioctl", Match::kArg1Low32Equals, KDSETMODE, 0, EPERM, "virtual console graphics mode outlives the sandbox", false},
    {"ioctl", Match::kArg1Low32Equals, KDSKBMODE, 0, EPERM, "virtual console keyboard mode (raw: a dead keyboard) outlives the sandbox", false},
    {"ioctl", Match::kArg1Low32Equals, KDSKBMETA, 0, EPERM, "virtual console keyboard mode outlives the sandbox", false},
    {"ioctl", Match::kArg1Low32Equals, KDSKBENT, 0, EPERM, "rewrites the console keymap for every user", false},
    {"ioctl", Match::kArg1Low32Equals, KDSKBSENT, 0, EPERM, "rewrites console function-key strings (typed later as input)", false},
    {"ioctl", Match::kArg1Low32Equals, KDSKBDIACR, 0, EPERM, "rewrites the console accent table for every user", false},
    {"ioctl", Match::kArg1Low32Equals, KDSETKEYCODE, 0, EPERM, "rewrites the console keycode table for every user", false},
    {"ioctl", Match::kArg1Low32Equals, KDSIGACCEPT, 0, EPERM, "takes the console's keyboard signals", false},
    {"ioctl", Match::kArg1Low32Equals, VT_ACTIVATE, 0, EPERM, "switches the active virtual console", false},
    {"ioctl", Match::kArg1Low32Equals, VT_SETMODE, 0, EPERM, "takes control of virtual console switching", false},
    {"ioctl", Match::kArg1Low32Equals, VT_RELDISP, 0, EPERM, "takes part in virtual console switching", false},
    {"ioctl", Match::kArg1Low32Equals, VT_DISALLOCATE, 0, EPERM, "frees virtual consoles", false},
    {"ioctl", Match::kArg1Low32Equals, VT_RESIZE, 0, EPERM, "resizes every virtual console", false},
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

}  // namespace

std::vector<SeccompDenialInfo> seccompDenials(const SeccompOptions& options) {
  std::vector<SeccompDenialInfo> out;
  for (const auto& d : denials(options)) out.push_back({d.syscall, describe(d), d.error, d.reason});
  return out;
}

std::vector<SeccompRule> seccompRules(const SeccompOptions& options) {
  std::vector<SeccompRule> out;
  for (const auto& d : denials(options))
    out.push_back({d.syscall, d.match, d.value, d.value2, d.error, d.reason, d.error == EPERM && !d.unsupervised});
  return out;
}

}  // namespace stockade::platform
