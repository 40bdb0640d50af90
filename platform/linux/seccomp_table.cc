// THE seccomp denial table (declared in seccomp.h). Kept apart from
// installSeccomp() so that the build-time filter generator can link it
// without the rest of the platform library.
#include "platform/linux/seccomp.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "platform/linux/kernel_abi.h"  // FS_IOC_RESVSP...
#ifdef STOCKADE_MUTATION_TESTING
#include "platform/linux/seccomp_mutation.h"
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080  // Linux 5.6
#endif

namespace stockade::platform {
namespace {

using Op = SeccompArg::Op;

// When a row applies, by whether the policy allows unix sockets (network.allowUnixSockets
// not empty, or network.allowAllUnixSockets).
enum class Unix : std::uint8_t {
  kEither,       // whatever the policy says
  kWhenAllowed,  // only when the policy allows unix sockets
};

// A condition on at most one argument (kAlways: none).
struct Condition {
  bool always = true;
  SeccompArg arg{};
};
constexpr Condition kAlways{};
// (arg & bit) == bit: a flag or mode bit is set.
constexpr Condition hasBit(unsigned index, std::uint64_t bit) { return {false, {index, Op::kMaskedEquals, bit, bit}}; }
// The low 32 bits equal `value`: an int argument (the kernel ignores the rest).
constexpr Condition low32Is(unsigned index, std::uint64_t value) {
  return {false, {index, Op::kMaskedEquals, 0xffffffffULL, value}};
}

struct Denial {
  const char* syscall;
  Condition when;
  int error;
  const char* reason;
  // Answered by the filter itself, never through the supervisor (see the
  // seccomp row: it must hold even when no supervisor is listening).
  bool unsupervised = false;
  // Only in the filter for policies with limits.fileSizeBytes
  // (SeccompOptions::limitFileSize).
  bool fileSizeLimit = false;
  // Decided by the supervisor from the call's register arguments: it goes
  // on, or fails with `error` (allocation_limit.h).
  bool decided = false;
};

constexpr std::uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET, CLONE_NEWTIME};

constexpr const char* kSetIdReason = "setuid/setgid bits would let a file written here run as the host's uid 0";
constexpr const char* kPreallocReason =
    "allocates file space from a range in memory the filter cannot read; limits.fileSizeBytes would not hold (use fallocate)";

// THE table: every denied call and why. Keep reasons short and concrete.
constexpr Denial kDenials[] = {
    {"ptrace", kAlways, EPERM, "inspect or control other processes"},
    // A filter of the program's own with a listener could answer, with
    // "continue", calls this table denies, once stockade's listener is gone
    // (a newer filter wins between equal actions). EPERM from the filter
    // itself outranks any user notification.
    {"seccomp", hasBit(1, SECCOMP_FILTER_FLAG_NEW_LISTENER), EPERM,
     "a listener of the program's own could let through calls this table denies", true},
    {"process_vm_readv", kAlways, EPERM, "read another process's memory"},
    {"process_vm_writev", kAlways, EPERM, "write another process's memory"},
    {"pidfd_getfd", kAlways, EPERM, "steal another process's file descriptors"},
    {"bpf", kAlways, EPERM, "kernel attack surface; loads programs into the kernel"},
    {"perf_event_open", kAlways, EPERM, "side channels and kernel attack surface"},
    {"keyctl", kAlways, EPERM, "kernel keyrings are not namespaced"},
    {"add_key", kAlways, EPERM, "kernel keyrings are not namespaced"},
    {"request_key", kAlways, EPERM, "kernel keyrings are not namespaced"},
    {"userfaultfd", kAlways, EPERM, "widens kernel race windows for exploits"},
    {"io_uring_setup", kAlways, EPERM, "io_uring bypasses seccomp for the calls it submits"},
    {"io_uring_enter", kAlways, EPERM, "io_uring bypasses seccomp for the calls it submits"},
    {"io_uring_register", kAlways, EPERM, "io_uring bypasses seccomp for the calls it submits"},
    // fs.aio-max-nr is one count for the whole system, not per user or
    // namespace: a sandbox's io_setup() calls took all 65,536 events, and every
    // io_setup() on the host then failed with EAGAIN while it ran.
    {"io_setup", kAlways, ENOSYS,
     "reserves events from fs.aio-max-nr, one count for the whole host; ENOSYS makes libaio callers fall back"},
    {"kexec_load", kAlways, EPERM, "replaces the running kernel"},
    {"kexec_file_load", kAlways, EPERM, "replaces the running kernel"},
    {"init_module", kAlways, EPERM, "loads kernel code"},
    {"finit_module", kAlways, EPERM, "loads kernel code"},
    {"delete_module", kAlways, EPERM, "unloads kernel code"},
    {"mount", kAlways, EPERM, "would rearrange the enforced filesystem view"},
    {"umount2", kAlways, EPERM, "would uncover masked paths"},
    {"pivot_root", kAlways, EPERM, "would rearrange the enforced filesystem view"},
    {"open_tree", kAlways, EPERM, "mount API: could clone hidden trees"},
    {"move_mount", kAlways, EPERM, "mount API: would rearrange the view"},
    {"fsopen", kAlways, EPERM, "mount API: creates filesystems"},
    {"fsconfig", kAlways, EPERM, "mount API: configures filesystems"},
    {"fsmount", kAlways, EPERM, "mount API: creates mounts"},
    {"fspick", kAlways, EPERM, "mount API: reconfigures mounts"},
    {"mount_setattr", kAlways, EPERM, "mount API: could make read-only mounts writable"},
    {"setns", kAlways, EPERM, "joins other namespaces"},
    {"clone3", kAlways, ENOSYS, "flags live in memory the filter cannot read; ENOSYS makes libc use clone()"},
    {"open_by_handle_at", kAlways, EPERM, "opens files by handle, bypassing path-based masks"},
    {"name_to_handle_at", kAlways, EPERM, "produces handles for open_by_handle_at"},
    // Terminal ioctls: an allow-list (kTerminalIoctls below), not rows here.
    // The child may be the host's uid 0 (stockade run by root): a setuid or
    // setgid bit it sets on a file in a writable tree would make that file
    // run as root on the host later. Every call that sets mode bits refuses them.
    {"chmod", hasBit(1, S_ISUID), EPERM, kSetIdReason},
    {"chmod", hasBit(1, S_ISGID), EPERM, kSetIdReason},
    {"fchmod", hasBit(1, S_ISUID), EPERM, kSetIdReason},
    {"fchmod", hasBit(1, S_ISGID), EPERM, kSetIdReason},
    {"fchmodat", hasBit(2, S_ISUID), EPERM, kSetIdReason},
    {"fchmodat", hasBit(2, S_ISGID), EPERM, kSetIdReason},
    {"fchmodat2", hasBit(2, S_ISUID), EPERM, kSetIdReason},
    {"fchmodat2", hasBit(2, S_ISGID), EPERM, kSetIdReason},
    {"open", hasBit(2, S_ISUID), EPERM, kSetIdReason},
    {"open", hasBit(2, S_ISGID), EPERM, kSetIdReason},
    {"openat", hasBit(3, S_ISUID), EPERM, kSetIdReason},
    {"openat", hasBit(3, S_ISGID), EPERM, kSetIdReason},
    {"creat", hasBit(1, S_ISUID), EPERM, kSetIdReason},
    {"creat", hasBit(1, S_ISGID), EPERM, kSetIdReason},
    {"mknod", hasBit(1, S_ISUID), EPERM, kSetIdReason},
    {"mknod", hasBit(1, S_ISGID), EPERM, kSetIdReason},
    {"mknodat", hasBit(2, S_ISUID), EPERM, kSetIdReason},
    {"mknodat", hasBit(2, S_ISGID), EPERM, kSetIdReason},
    // limits.fileSizeBytes: RLIMIT_FSIZE does not see space allocated
    // without a size change (FALLOC_FL_KEEP_SIZE); allocation_limit.h.
    {"fallocate", kAlways, EFBIG,
     "allocation beyond limits.fileSizeBytes bypasses RLIMIT_FSIZE; stockade checks offset + len", false, true, true},
    {"ioctl", low32Is(1, FS_IOC_RESVSP), EOPNOTSUPP, kPreallocReason, true, true},
    {"ioctl", low32Is(1, FS_IOC_RESVSP64), EOPNOTSUPP, kPreallocReason, true, true},
    {"ioctl", low32Is(1, FS_IOC_ZERO_RANGE), EOPNOTSUPP, kPreallocReason, true, true},
};

// THE brokered calls: every call that writes a name or changes what a file
// does. Each is trapped to the supervisor, whose write broker performs it in
// the child's stead (the child holds no write right of its own in a writable
// tree: its view there is read-only and Landlock grants it nothing), refuses
// it naming the rule, or -- when it touches no writable tree -- lets it
// continue in the kernel, under the child's own rights.
using Kind = BrokeredKind;
constexpr std::uint64_t kWriteOpenFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY);
constexpr const char* kOpenReason = "opens for writing, creates or truncates a file";
constexpr const char* kMetaReason = "changes what a file does (mode, owner, times, attributes)";
constexpr const char* kAccessReason = "asks whether a write would work: a writable tree is read-only in the child's own view";
constexpr std::uint32_t kNoFollow = AT_SYMLINK_NOFOLLOW;
// Not here: fchmod, fchown, fsetxattr, fremovexattr and futimens, which act
// on a descriptor. On one of the child's own the kernel refuses them (its view
// of a writable tree is read-only: EROFS); on one the broker opened, the file
// is not protected, and no brokered call can make it so. Trapping them cost
// tar and cp three round trips per file.
constexpr BrokeredCall kBrokered[] = {
    {"open", Kind::kOpen, {.path = 0, .flags = 1, .mode = 2}, 0, 1, kWriteOpenFlags, kOpenReason},
    {"openat", Kind::kOpen, {.dirfd = 0, .path = 1, .flags = 2, .mode = 3}, 0, 2, kWriteOpenFlags, kOpenReason},
    {"creat", Kind::kOpen, {.path = 0, .mode = 1}, O_CREAT | O_WRONLY | O_TRUNC, -1, 0, kOpenReason},
    {"openat2", Kind::kOpenHow, {.dirfd = 0, .path = 1, .extra = {2, 3}}, 0, -1, 0,
     "its flags live in memory the filter cannot read"},
    {"mkdir", Kind::kMkdir, {.path = 0, .mode = 1}, 0, -1, 0, "creates a directory"},
    {"mkdirat", Kind::kMkdir, {.dirfd = 0, .path = 1, .mode = 2}, 0, -1, 0, "creates a directory"},
    {"mknod", Kind::kMknod, {.path = 0, .mode = 1, .extra = {2}}, 0, -1, 0, "creates a node"},
    {"mknodat", Kind::kMknod, {.dirfd = 0, .path = 1, .mode = 2, .extra = {3}}, 0, -1, 0, "creates a node"},
    {"symlink", Kind::kSymlink, {.path = 1, .extra = {0}}, 0, -1, 0, "creates a symlink"},
    {"symlinkat", Kind::kSymlink, {.dirfd = 1, .path = 2, .extra = {0}}, 0, -1, 0, "creates a symlink"},
    {"link", Kind::kLink, {.path = 0, .path2 = 1}, 0, -1, 0, "gives a file another name"},
    {"linkat", Kind::kLink, {.dirfd = 0, .path = 1, .dirfd2 = 2, .path2 = 3, .flags = 4}, 0, -1, 0,
     "gives a file another name (an O_TMPFILE file its first)"},
    {"rename", Kind::kRename, {.path = 0, .path2 = 1}, 0, -1, 0, "moves a name"},
    {"renameat", Kind::kRename, {.dirfd = 0, .path = 1, .dirfd2 = 2, .path2 = 3}, 0, -1, 0, "moves a name"},
    {"renameat2", Kind::kRename, {.dirfd = 0, .path = 1, .dirfd2 = 2, .path2 = 3, .flags = 4}, 0, -1, 0,
     "moves or exchanges names"},
    {"unlink", Kind::kUnlink, {.path = 0}, 0, -1, 0, "removes a name"},
    {"unlinkat", Kind::kUnlink, {.dirfd = 0, .path = 1, .flags = 2}, 0, -1, 0, "removes a name"},
    {"rmdir", Kind::kRmdir, {.path = 0}, 0, -1, 0, "removes a directory"},
    {"truncate", Kind::kTruncate, {.path = 0, .extra = {1}}, 0, -1, 0, "truncates a file by name"},
    {"chmod", Kind::kChmod, {.path = 0, .mode = 1}, 0, -1, 0, kMetaReason},
    {"fchmodat", Kind::kChmod, {.dirfd = 0, .path = 1, .mode = 2}, 0, -1, 0, kMetaReason},
    {"fchmodat2", Kind::kChmod, {.dirfd = 0, .path = 1, .flags = 3, .mode = 2}, 0, -1, 0, kMetaReason},
    {"chown", Kind::kChown, {.path = 0, .extra = {1, 2}}, 0, -1, 0, kMetaReason},
    {"lchown", Kind::kChown, {.path = 0, .extra = {1, 2}}, kNoFollow, -1, 0, kMetaReason},
    {"fchownat", Kind::kChown, {.dirfd = 0, .path = 1, .flags = 4, .extra = {2, 3}}, 0, -1, 0, kMetaReason},
    {"utime", Kind::kUtime, {.path = 0, .extra = {1}}, 0, -1, 0, kMetaReason},
    {"utimes", Kind::kUtimes, {.path = 0, .extra = {1}}, 0, -1, 0, kMetaReason},
    {"futimesat", Kind::kUtimes, {.dirfd = 0, .path = 1, .extra = {2}}, 0, -1, 0, kMetaReason},
    // With a NULL path it is futimens(): on a descriptor, not trapped (above).
    {"utimensat", Kind::kUtimens, {.dirfd = 0, .path = 1, .flags = 3, .extra = {2}}, 0, 1, 0, kMetaReason},
    {"setxattr", Kind::kSetXattr, {.path = 0, .extra = {1, 2, 3, 4}}, 0, -1, 0, kMetaReason},
    {"lsetxattr", Kind::kSetXattr, {.path = 0, .extra = {1, 2, 3, 4}}, kNoFollow, -1, 0, kMetaReason},
    {"setxattrat", Kind::kSetXattrArgs, {.dirfd = 0, .path = 1, .flags = 2, .extra = {3, 4, 5}}, 0, -1, 0, kMetaReason},
    {"removexattr", Kind::kRemoveXattr, {.path = 0, .extra = {1}}, 0, -1, 0, kMetaReason},
    {"lremovexattr", Kind::kRemoveXattr, {.path = 0, .extra = {1}}, kNoFollow, -1, 0, kMetaReason},
    {"removexattrat", Kind::kRemoveXattr, {.dirfd = 0, .path = 1, .flags = 2, .extra = {3}}, 0, -1, 0, kMetaReason},
    {"access", Kind::kAccess, {.path = 0, .mode = 1}, 0, 1, W_OK, kAccessReason},
    {"faccessat", Kind::kAccess, {.dirfd = 0, .path = 1, .mode = 2}, 0, 2, W_OK, kAccessReason},
    {"faccessat2", Kind::kAccess, {.dirfd = 0, .path = 1, .flags = 3, .mode = 2}, 0, 2, W_OK, kAccessReason},
    // Continued at once: the broker, which creates files with the program's
    // umask, then reads it afresh for every create.
    {"umask", Kind::kUmask, {}, 0, -1, 0, "changes the mode bits of the files the broker creates"},
};

// THE socket allow-list: socket() and socketpair() succeed only for these
// (family, type, protocol) combinations; every other one is denied (EPERM,
// through the supervisor), so a family, type or protocol nobody listed --
// MPTCP, SCTP, vsock, packet, another netlink family, one the kernel adds
// next year -- is refused by construction. The type is compared after
// masking SOCK_NONBLOCK|SOCK_CLOEXEC, for exact equality: the kernel maps
// some other type values onto listed ones (AF_UNIX SOCK_RAW is a datagram
// socket), so "not SOCK_DGRAM" would not mean "not a datagram socket".
// Arguments are compared in all 64 bits: a caller that sets the bits above
// an int's 32 (which the kernel ignores) is refused, never let through.
// A COUNTED row is allowed through the supervisor, which lets the call go on
// only while the sandbox holds fewer than kNetlinkSocketsPerSandbox such
// sockets (socket_limits.h: their buffers are memory no cgroup charges).
struct SocketAllow {
  const char* syscall;  // "socket" or "socketpair"
  int family;
  int type;
  std::array<int, 2> protocols;  // a second entry equal to the first: only one
  Unix when;
  const char* reason;
  bool counted = false;
};

constexpr SocketAllow kSocketAllows[] = {
    {"socket", AF_INET, SOCK_STREAM, {0, IPPROTO_TCP}, Unix::kEither,
     "TCP in the sandbox's own network namespace: Landlock lets it connect only to the proxy"},
    {"socket", AF_INET6, SOCK_STREAM, {0, IPPROTO_TCP}, Unix::kEither,
     "TCP in the sandbox's own network namespace: Landlock lets it connect only to the proxy"},
    {"socket", AF_INET, SOCK_DGRAM, {0, IPPROTO_UDP}, Unix::kEither,
     "UDP on the sandbox's own loopback: nothing outside is routable"},
    {"socket", AF_INET6, SOCK_DGRAM, {0, IPPROTO_UDP}, Unix::kEither,
     "UDP on the sandbox's own loopback: nothing outside is routable"},
    {"socket", AF_NETLINK, SOCK_RAW, {NETLINK_ROUTE, NETLINK_ROUTE}, Unix::kEither,
     "libc reads the sandbox's own interfaces and addresses (getaddrinfo, if_nameindex); counted", true},
    {"socket", AF_NETLINK, SOCK_DGRAM, {NETLINK_ROUTE, NETLINK_ROUTE}, Unix::kEither,
     "libc reads the sandbox's own interfaces and addresses (getaddrinfo, if_nameindex); counted", true},
    {"socket", AF_UNIX, SOCK_STREAM, {0, 0}, Unix::kWhenAllowed, "the policy allows unix sockets"},
    {"socket", AF_UNIX, SOCK_SEQPACKET, {0, 0}, Unix::kWhenAllowed, "the policy allows unix sockets"},
    {"socket", AF_UNIX, SOCK_DGRAM, {0, 0}, Unix::kWhenAllowed, "the policy allows unix sockets"},
    {"socketpair", AF_UNIX, SOCK_STREAM, {0, 0}, Unix::kEither,
     "a connected pair reaches only its own other end"},
    {"socketpair", AF_UNIX, SOCK_SEQPACKET, {0, 0}, Unix::kEither,
     "a connected pair reaches only its own other end"},
    {"socketpair", AF_UNIX, SOCK_DGRAM, {0, 0}, Unix::kWhenAllowed,
     "a datagram pair can also sendto() any unix socket it can see: only when the policy allows unix sockets"},
};

// THE terminal ioctl allow-list. `stockade run -T` (and a run whose stdin or
// stdout alone is a terminal) hands the operator's terminal to the child, and
// whatever it changes there outlives it: the line discipline (TIOCSETD: a dead
// terminal), output flow (TCXONC/TCOOFF: a terminal that never prints again),
// typed input (TIOCSTI), the console's keymap, font and mode. A filter cannot
// tell that terminal from one the program made itself, so in the request
// spaces of the terminal and console drivers ('T', and the legacy 'K' and 'V'
// numbers) only these requests pass: reading state, and setting only what
// stockade puts back at the end (platform/linux/pty.h: SavedTerminal) -- the
// attributes and the window size (PTYs of its own need it: a resize once
// outlived the child on the operator's terminal); the descriptor flags every
// program uses (FIONBIO, FIOCLEX, FIONREAD also on pipes and sockets: the
// child's own description, or restored); transient calls (a break, a drain,
// a flush); and what making and using a PTY of its own needs (TIOCGPTN,
// TIOCSPTLCK, TIOCSCTTY, TIOCSPGRP, TIOCPKT, TIOCSIG: a master's or a
// controlling terminal's, which the operator's terminal is not for the
// child). Every other request there is refused (EPERM, audited) -- TIOCNXCL
// (the operator's exclusive mode, which nothing restores) and one the kernel
// adds next year included.
struct IoctlSpace {
  std::uint32_t mask, value;  // (request & mask) == value, in the low 32 bits the kernel reads
  const char* name;
};
constexpr IoctlSpace kTerminalIoctlSpaces[] = {
    {0x0000ff00, 0x5400, "a terminal ioctl ('T')"},        // legacy numbers and encoded ones (TCGETS2, TIOCGPTN)
    {0xffffff00, 0x4b00, "a virtual console ioctl (KD*)"},  // legacy numbers only: encoded 'K' is not the console's
    {0xffffff00, 0x5600, "a virtual console ioctl (VT_*)"},  // legacy numbers only: encoded 'V' is video4linux
};
constexpr std::uint32_t kTerminalIoctls[] = {
    0x5401, 0x5402, 0x5403, 0x5404,  // TCGETS, TCSETS, TCSETSW, TCSETSF (tcgetattr, tcsetattr)
    0x5405, 0x5406, 0x5407, 0x5408,  // TCGETA, TCSETA, TCSETAW, TCSETAF
    0x5409, 0x540b, 0x5425,          // TCSBRK (tcdrain, tcsendbreak), TCFLSH (tcflush), TCSBRKP
    0x540e,                          // TIOCSCTTY (a PTY of its own as controlling terminal)
    0x540f, 0x5410, 0x5429,          // TIOCGPGRP, TIOCSPGRP (job control), TIOCGSID
    0x5411, 0x541b,                  // TIOCOUTQ, FIONREAD (also on pipes and sockets)
    0x5413, 0x5414,                  // TIOCGWINSZ, TIOCSWINSZ
    0x5415, 0x5419, 0x541e, 0x542e,  // TIOCMGET, TIOCGSOFTCAR, TIOCGSERIAL, TIOCGRS485: reads
    0x5420, 0x5422, 0x5424, 0x5428,  // TIOCPKT (a master of its own), TIOCNOTTY, TIOCGETD, TIOCCBRK
    0x5421, 0x5450, 0x5451, 0x5452,  // FIONBIO, FIONCLEX, FIOCLEX, FIOASYNC: any descriptor
    0x5441, 0x5456, 0x5459,          // TIOCGPTPEER, TIOCGLCKTRMIOS, TIOCSERGETLSR
    0x545c, 0x545d, 0x5460,          // TIOCMIWAIT, TIOCGICOUNT, FIOQSIZE (files and directories)
    0x802c542a, 0x402c542b, 0x402c542c, 0x402c542d,  // TCGETS2, TCSETS2, TCSETSW2, TCSETSF2
    0x80045430, 0x40045431, 0x80045432,              // TIOCGPTN (ptsname), TIOCSPTLCK (unlockpt), TIOCGDEV
    0x40045436, 0x80045438, 0x80045439, 0x80045440,  // TIOCSIG (a master of its own), TIOCGPKT, TIOCGPTLCK, TIOCGEXCL
    0x80285442,                                      // TIOCGISO7816
    0x4b31, 0x4b33, 0x4b3b, 0x4b44, 0x4b62, 0x4b64,  // KDGETLED, KDGKBTYPE, KDGETMODE, KDGKBMODE, KDGKBMETA, KDGKBLED
    0x5600, 0x5601, 0x5603,                          // VT_OPENQRY, VT_GETMODE, VT_GETSTATE
};

// One rule per request space: the space, unless the request is allowed.
void addTerminalIoctlRules(std::vector<SeccompRule>& out) {
  for (const auto& space : kTerminalIoctlSpaces) {
    SeccompRule rule{"ioctl", {{1, Op::kMaskedEquals, space.mask, space.value}}, EPERM,
                     std::string(space.name) + " not in the terminal ioctl allow-list: its effect could outlive the "
                                               "program on the operator's terminal",
                     true};
    for (std::uint32_t request : kTerminalIoctls)  // the low 32 bits, which the kernel reads
      if ((request & space.mask) == space.value) rule.unless.push_back({{1, Op::kMaskedEquals, 0xffffffffu, request}});
    out.push_back(std::move(rule));
  }
}

// Bits of a socket type argument that are flags, not the type.
constexpr std::uint64_t kSocketTypeFlags = SOCK_NONBLOCK | SOCK_CLOEXEC;

// unshare and clone: one row per namespace flag, generated from kNamespaceFlags.
constexpr const char* kNamespaceReason = "a new namespace would escape the enforced ones";

// A row's (family, type, protocol) combinations, compared in all 64 bits
// (the type without SOCK_NONBLOCK|SOCK_CLOEXEC).
std::vector<std::vector<SeccompArg>> combinations(const SocketAllow& a) {
  std::vector<std::vector<SeccompArg>> out;
  for (std::size_t i = 0; i < a.protocols.size(); ++i) {
    if (i > 0 && a.protocols[i] == a.protocols[0]) continue;  // only one protocol
    out.push_back({{0, Op::kMaskedEquals, ~0ULL, static_cast<std::uint64_t>(a.family)},
                   {1, Op::kMaskedEquals, ~kSocketTypeFlags, static_cast<std::uint64_t>(a.type)},
                   {2, Op::kMaskedEquals, ~0ULL, static_cast<std::uint64_t>(a.protocols[i])}});
  }
  return out;
}

// socket() and socketpair(): one rule each, that holds unless the call is
// one of the allowed combinations the kernel may create at once -- a counted
// one is trapped too, and the supervisor decides (countedSocket()).
void addSocketRules(const SeccompOptions& options, std::vector<SeccompRule>& out) {
  for (const char* call : {"socket", "socketpair"}) {
    SeccompRule rule{call, {}, EPERM, "(family, type, protocol) not in the socket allow-list", true};
    for (const auto& a : kSocketAllows) {
      if (std::string_view(a.syscall) != call || (a.when == Unix::kWhenAllowed && !options.allowUnixSockets) ||
          a.counted)
        continue;
      for (auto& c : combinations(a)) rule.unless.push_back(std::move(c));
    }
    out.push_back(std::move(rule));
  }
}

// setsockopt(SOL_SOCKET, a buffer size): performed by the supervisor, which
// caps a netlink socket's (socket_limits.h).
constexpr int kSocketBufferOptions[] = {SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE};
void addSocketBufferRules(std::vector<SeccompRule>& out) {
  for (int option : kSocketBufferOptions)
    out.push_back({"setsockopt",
                   {{1, Op::kMaskedEquals, 0xffffffffULL, SOL_SOCKET},
                    {2, Op::kMaskedEquals, 0xffffffffULL, static_cast<std::uint64_t>(option)}},
                   EPERM,
                   "a netlink socket's buffers are memory no cgroup charges: stockade performs the call and caps "
                   "them (the *BUFFORCE options: EPERM, as without CAP_NET_ADMIN)",
                   true});
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string describe(const SeccompRule& r) {
  if (r.args.empty() && r.unless.empty()) return "always";
  std::string out;
  for (const auto& a : r.args) {
    if (!out.empty()) out += " && ";
    const std::string arg = "arg" + std::to_string(a.index);
    if (a.op == Op::kGreaterOrEqual) out += arg + " >= " + hex(a.value);
    else out += "(" + arg + " & " + hex(a.mask) + ") == " + hex(a.value);
  }
  for (std::size_t i = 0; i < r.unless.size(); ++i) {
    out += i == 0 ? (r.args.empty() ? "none of " : " && none of ") : " | ";
    for (std::size_t j = 0; j < r.unless[i].size(); ++j) {
      const auto& a = r.unless[i][j];
      out += (j ? " && (arg" : "(arg") + std::to_string(a.index) + " & " + hex(a.mask) + ") == " + hex(a.value);
    }
  }
  return out;
}

}  // namespace

std::vector<SeccompRule> seccompRules(const SeccompOptions& options) {
  std::vector<SeccompRule> out;
  for (const auto& d : kDenials) {
    if (d.fileSizeLimit && !options.limitFileSize) continue;
    std::vector<SeccompArg> args;
    if (!d.when.always) args.push_back(d.when.arg);
    out.push_back({d.syscall, std::move(args), d.error, d.reason, d.decided || (d.error == EPERM && !d.unsupervised)});
  }
  for (const char* call : {"unshare", "clone"})
    for (auto flag : kNamespaceFlags) {
      Condition c = hasBit(0, flag);
      out.push_back({call, {c.arg}, EPERM, kNamespaceReason, true});
    }
  addSocketRules(options, out);
  addSocketBufferRules(out);
  addTerminalIoctlRules(out);
  for (const auto& b : kBrokered) {
    if (b.trapArg < 0) {
      out.push_back({b.syscall, {}, 0, b.reason, true, true});
      continue;
    }
    if (b.trapBits == 0) {  // the argument is not 0 (a pointer that is not NULL)
      out.push_back({b.syscall, {{static_cast<unsigned>(b.trapArg), Op::kGreaterOrEqual, 0, 1}}, 0, b.reason, true, true});
      continue;
    }
    // "Any of these bits": one rule per bit, which the filter ORs.
    for (std::uint64_t bits = b.trapBits; bits; bits &= bits - 1) {
      const std::uint64_t bit = bits & -bits;
      out.push_back({b.syscall, {{static_cast<unsigned>(b.trapArg), Op::kMaskedEquals, bit, bit}}, 0, b.reason, true, true});
    }
  }
#ifdef STOCKADE_MUTATION_TESTING
  // The brokered rows stay: they are the write broker's trap, not a denial
  // (without them a write in a brokered tree meets its read-only bind); the
  // broker's own layer is its decision (write_broker.cc).
  std::erase_if(out, [](const SeccompRule& r) { return !r.brokered && mutation::disabled(seccompLayerOf(r)); });
#endif
  return out;
}

bool seccompMatches(const SeccompRule& rule, const std::uint64_t* args) noexcept {
  for (const auto& a : rule.args) {
    const std::uint64_t v = args[a.index];
    if (a.op == Op::kGreaterOrEqual ? v < a.value : (v & a.mask) != a.value) return false;
  }
  for (const auto& allowed : rule.unless)
    if (std::all_of(allowed.begin(), allowed.end(),
                    [&](const SeccompArg& a) { return (args[a.index] & a.mask) == a.value; }))
      return false;
  return true;
}

bool countedSocket(const std::uint64_t* args) noexcept {
  // The counted rows' combinations, tested as the filter's allow-lists are.
  static const SeccompRule counted = [] {
    SeccompRule rule{"socket", {}, EPERM, "counted", true};
    for (const auto& a : kSocketAllows)
      if (a.counted)
        for (auto& c : combinations(a)) rule.unless.push_back(std::move(c));
    return rule;
  }();
  return !seccompMatches(counted, args);
}

std::span<const BrokeredCall> brokeredCalls() noexcept { return kBrokered; }

const char* brokeredKindName(BrokeredKind kind) noexcept {
  switch (kind) {
    case Kind::kOpen: return "open";
    case Kind::kOpenHow: return "openat2";
    case Kind::kMkdir: return "mkdir";
    case Kind::kMknod: return "mknod";
    case Kind::kSymlink: return "symlink";
    case Kind::kLink: return "link";
    case Kind::kRename: return "rename";
    case Kind::kUnlink: return "unlink";
    case Kind::kRmdir: return "rmdir";
    case Kind::kTruncate: return "truncate";
    case Kind::kChmod: return "chmod";
    case Kind::kChown: return "chown";
    case Kind::kUtime:
    case Kind::kUtimes:
    case Kind::kUtimens: return "set times";
    case Kind::kSetXattr:
    case Kind::kSetXattrArgs: return "setxattr";
    case Kind::kRemoveXattr: return "removexattr";
    case Kind::kAccess: return "access";
    case Kind::kUmask: return "umask";
  }
  return "?";
}

std::vector<SeccompDenialInfo> seccompDenials(const SeccompOptions& options) {
  std::vector<SeccompDenialInfo> out;
  for (const auto& r : seccompRules(options)) out.push_back({r.syscall, describe(r), r.error, r.reason});
  return out;
}

}  // namespace stockade::platform
