#include "platform/linux/syscall_decode.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <span>

namespace stockade::platform {
namespace {

struct Name {
  std::uint64_t value;
  std::string_view name;
};
#define NAMED(x) Name{static_cast<std::uint64_t>(x), #x}

constexpr Name kFamilies[] = {
    NAMED(AF_UNSPEC),    NAMED(AF_UNIX),     NAMED(AF_INET),      NAMED(AF_AX25),     NAMED(AF_IPX),
    NAMED(AF_APPLETALK), NAMED(AF_NETROM),   NAMED(AF_BRIDGE),    NAMED(AF_ATMPVC),   NAMED(AF_X25),
    NAMED(AF_INET6),     NAMED(AF_ROSE),     NAMED(AF_DECnet),    NAMED(AF_NETBEUI),  NAMED(AF_SECURITY),
    NAMED(AF_KEY),       NAMED(AF_NETLINK),  NAMED(AF_PACKET),    NAMED(AF_ASH),      NAMED(AF_ECONET),
    NAMED(AF_ATMSVC),    NAMED(AF_RDS),      NAMED(AF_SNA),       NAMED(AF_IRDA),     NAMED(AF_PPPOX),
    NAMED(AF_WANPIPE),   NAMED(AF_LLC),      NAMED(AF_IB),        NAMED(AF_MPLS),     NAMED(AF_CAN),
    NAMED(AF_TIPC),      NAMED(AF_BLUETOOTH), NAMED(AF_IUCV),     NAMED(AF_RXRPC),    NAMED(AF_ISDN),
    NAMED(AF_PHONET),    NAMED(AF_IEEE802154), NAMED(AF_CAIF),    NAMED(AF_ALG),      NAMED(AF_NFC),
    NAMED(AF_VSOCK),     NAMED(AF_KCM),      NAMED(AF_QIPCRTR),   NAMED(AF_SMC),      NAMED(AF_XDP),
    NAMED(AF_MCTP),
};
constexpr Name kSocketTypes[] = {NAMED(SOCK_STREAM), NAMED(SOCK_DGRAM),  NAMED(SOCK_RAW),   NAMED(SOCK_RDM),
                                 NAMED(SOCK_SEQPACKET), NAMED(SOCK_DCCP), NAMED(SOCK_PACKET)};
constexpr Name kSocketTypeFlags[] = {NAMED(SOCK_NONBLOCK), NAMED(SOCK_CLOEXEC)};
constexpr Name kIpProtocols[] = {NAMED(IPPROTO_IP),   NAMED(IPPROTO_ICMP),    NAMED(IPPROTO_IGMP),
                                 NAMED(IPPROTO_TCP),  NAMED(IPPROTO_UDP),     NAMED(IPPROTO_IPV6),
                                 NAMED(IPPROTO_GRE),  NAMED(IPPROTO_ESP),     NAMED(IPPROTO_ICMPV6),
                                 NAMED(IPPROTO_SCTP), NAMED(IPPROTO_UDPLITE), NAMED(IPPROTO_RAW),
                                 NAMED(IPPROTO_MPTCP)};
constexpr Name kNetlinkProtocols[] = {
    NAMED(NETLINK_ROUTE),   NAMED(NETLINK_USERSOCK),  NAMED(NETLINK_FIREWALL),     NAMED(NETLINK_SOCK_DIAG),
    NAMED(NETLINK_NFLOG),   NAMED(NETLINK_XFRM),      NAMED(NETLINK_SELINUX),      NAMED(NETLINK_ISCSI),
    NAMED(NETLINK_AUDIT),   NAMED(NETLINK_FIB_LOOKUP), NAMED(NETLINK_CONNECTOR),   NAMED(NETLINK_NETFILTER),
    NAMED(NETLINK_IP6_FW),  NAMED(NETLINK_DNRTMSG),   NAMED(NETLINK_KOBJECT_UEVENT), NAMED(NETLINK_GENERIC),
    NAMED(NETLINK_SCSITRANSPORT), NAMED(NETLINK_ECRYPTFS), NAMED(NETLINK_RDMA),    NAMED(NETLINK_CRYPTO),
    NAMED(NETLINK_SMC)};
// Open flags other than the access mode. O_SYNC and O_TMPFILE include
// another flag's bit, so they come first and take theirs.
constexpr Name kOpenFlags[] = {
    NAMED(O_SYNC),      NAMED(O_TMPFILE),   NAMED(O_CREAT),     NAMED(O_EXCL),   NAMED(O_NOCTTY),
    NAMED(O_TRUNC),     NAMED(O_APPEND),    NAMED(O_NONBLOCK),  NAMED(O_DSYNC),  NAMED(O_ASYNC),
    NAMED(O_DIRECT),    NAMED(O_DIRECTORY), NAMED(O_NOFOLLOW), NAMED(O_NOATIME), NAMED(O_CLOEXEC),
    NAMED(O_PATH),
    // The kernel's bit (asm-generic/fcntl.h); glibc's O_LARGEFILE is 0 on 64-bit ABIs.
    Name{00100000, "O_LARGEFILE"}};
constexpr Name kAccessModes[] = {NAMED(O_RDONLY), NAMED(O_WRONLY), NAMED(O_RDWR)};
constexpr Name kModeBits[] = {NAMED(S_ISUID), NAMED(S_ISGID), NAMED(S_ISVTX)};
constexpr Name kFileTypes[] = {NAMED(S_IFREG), NAMED(S_IFCHR), NAMED(S_IFBLK), NAMED(S_IFIFO), NAMED(S_IFSOCK)};
constexpr Name kCloneFlags[] = {
    NAMED(CLONE_VM),      NAMED(CLONE_FS),        NAMED(CLONE_FILES),     NAMED(CLONE_SIGHAND),
    NAMED(CLONE_PIDFD),   NAMED(CLONE_PTRACE),    NAMED(CLONE_VFORK),     NAMED(CLONE_PARENT),
    NAMED(CLONE_THREAD),  NAMED(CLONE_NEWNS),     NAMED(CLONE_SYSVSEM),   NAMED(CLONE_SETTLS),
    NAMED(CLONE_PARENT_SETTID), NAMED(CLONE_CHILD_CLEARTID), NAMED(CLONE_UNTRACED), NAMED(CLONE_CHILD_SETTID),
    NAMED(CLONE_NEWCGROUP), NAMED(CLONE_NEWUTS),  NAMED(CLONE_NEWIPC),    NAMED(CLONE_NEWUSER),
    NAMED(CLONE_NEWPID),  NAMED(CLONE_NEWNET),    NAMED(CLONE_IO),        NAMED(CLONE_NEWTIME)};
constexpr Name kIoctls[] = {
    NAMED(TCGETS),     NAMED(TCSETS),     NAMED(TCSETSW),   NAMED(TCSETSF),   NAMED(TIOCSCTTY),
    NAMED(TIOCGPGRP),  NAMED(TIOCSPGRP),  NAMED(TIOCOUTQ),  NAMED(TIOCSTI),   NAMED(TIOCGWINSZ),
    NAMED(TIOCSWINSZ), NAMED(TIOCMGET),   NAMED(TIOCMSET),  NAMED(FIONREAD),  NAMED(TIOCLINUX),
    NAMED(TIOCCONS),   NAMED(FIONBIO),    NAMED(TIOCNOTTY), NAMED(TIOCSETD),  NAMED(TIOCGETD),
    NAMED(TIOCSBRK),   NAMED(TIOCCBRK),   NAMED(TIOCGSID),  NAMED(TIOCGPTN),  NAMED(TIOCSPTLCK),
    NAMED(TIOCGPTPEER), NAMED(FIONCLEX),  NAMED(FIOCLEX),   NAMED(FIOASYNC)};
#undef NAMED

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// One value of a table, or NAME_UNKNOWN(value).
std::string oneOf(std::span<const Name> table, std::uint64_t v, std::string_view unknown) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Name& n) { return n.value == v; });
  return it != table.end() ? std::string(it->name) : std::string(unknown) + "(" + std::to_string(v) + ")";
}

// Named bits joined with "|", the rest in hex; `empty` when no bit is set.
std::string bits(std::span<const Name> table, std::uint64_t v, std::string out = "") {
  for (const auto& n : table) {
    if (n.value != 0 && (v & n.value) == n.value) {
      out += (out.empty() ? "" : "|") + std::string(n.name);
      v &= ~n.value;
    }
  }
  if (v != 0) out += (out.empty() ? "" : "|") + hex(v);
  return out.empty() ? "0" : out;
}

// The kernel reads these arguments as int: only the low 32 bits count.
std::uint32_t low32(std::uint64_t v) { return static_cast<std::uint32_t>(v); }

std::string socketType(std::uint64_t raw) {
  std::uint32_t v = low32(raw);
  constexpr std::uint32_t kFlags = SOCK_NONBLOCK | SOCK_CLOEXEC;
  return bits(kSocketTypeFlags, v & kFlags, oneOf(kSocketTypes, v & ~kFlags, "SOCK_UNKNOWN"));
}

std::string protocol(std::uint32_t family, std::uint64_t raw) {
  std::uint32_t v = low32(raw);
  if (family == AF_INET || family == AF_INET6) return oneOf(kIpProtocols, v, "IPPROTO_UNKNOWN");
  if (family == AF_NETLINK) return oneOf(kNetlinkProtocols, v, "NETLINK_UNKNOWN");
  return std::to_string(v);
}

std::string openFlags(std::uint64_t raw) {
  std::uint32_t v = low32(raw);
  return bits(kOpenFlags, v & ~std::uint32_t{O_ACCMODE}, oneOf(kAccessModes, v & O_ACCMODE, "O_ACCMODE"));
}

// "04755 (S_ISUID)": octal, with the set-id and sticky bits named.
std::string mode(std::uint64_t raw, bool withType = false) {
  std::uint32_t v = low32(raw);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0%o", v & 07777);
  std::string out = buf;
  std::string named;
  if (withType && (v & S_IFMT)) named = oneOf(kFileTypes, v & S_IFMT, "S_IFUNKNOWN");
  for (const auto& n : kModeBits)
    if (v & n.value) named += (named.empty() ? "" : "|") + std::string(n.name);
  return named.empty() ? out : out + " (" + named + ")";
}

}  // namespace

DecodedArguments decodeArguments(std::string_view syscall, const std::array<std::uint64_t, 6>& a) {
  if (syscall == "socket" || syscall == "socketpair") {
    std::string family = oneOf(kFamilies, low32(a[0]), "AF_UNKNOWN");
    if (a[0] >> 32) family += " (bits above 32: " + hex(a[0] >> 32) + ", ignored by the kernel)";
    return {{"family", family}, {"type", socketType(a[1])}, {"protocol", protocol(low32(a[0]), a[2])}};
  }
  if (syscall == "open") return {{"flags", openFlags(a[1])}, {"mode", mode(a[2])}};
  if (syscall == "openat") return {{"flags", openFlags(a[2])}, {"mode", mode(a[3])}};
  if (syscall == "creat" || syscall == "chmod" || syscall == "fchmod") return {{"mode", mode(a[1])}};
  if (syscall == "fchmodat" || syscall == "fchmodat2") return {{"mode", mode(a[2])}};
  if (syscall == "mknod") return {{"mode", mode(a[1], true)}};
  if (syscall == "mknodat") return {{"mode", mode(a[2], true)}};
  if (syscall == "ioctl") return {{"request", oneOf(kIoctls, low32(a[1]), "IOCTL_UNKNOWN") + " " + hex(low32(a[1]))}};
  if (syscall == "unshare" || syscall == "clone") return {{"flags", bits(kCloneFlags, a[0])}};
  if (syscall == "setns") return {{"nstype", bits(kCloneFlags, low32(a[1]))}};
  return {};
}

}  // namespace stockade::platform
