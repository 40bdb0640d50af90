// The seccomp table and the filter compiled from it, without spawning: the
// built-in filter is the table compiled now, and a classic-BPF evaluator runs
// that very filter over seccomp_data to check its answers call by call.
#include "platform/linux/seccomp.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "platform/linux/seccomp_compile.h"

namespace stockade::platform {
namespace {

// --- a classic BPF evaluator, as the kernel runs a seccomp filter ---------

struct SeccompCall {
  int nr = 0;
  std::uint64_t args[6] = {};
};

// The filter's return value for `call`, or nullopt (with `why`) when the
// program does something a seccomp filter may not (the kernel would refuse it).
std::optional<std::uint32_t> runFilter(std::span<const sock_filter> program, const SeccompCall& call,
                                       std::string& why) {
  seccomp_data data{};
  data.nr = call.nr;
  data.arch = AUDIT_ARCH_X86_64;
  std::memcpy(data.args, call.args, sizeof data.args);
  unsigned char bytes[sizeof data];
  std::memcpy(bytes, &data, sizeof data);
  std::uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& i = program[pc];
    const std::uint32_t src = BPF_SRC(i.code) == BPF_X ? x : i.k;
    switch (BPF_CLASS(i.code)) {
      case BPF_LD:
        if (i.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (i.k % 4 != 0 || i.k + 4 > sizeof bytes) return why = "unaligned or out-of-range load", std::nullopt;
          std::memcpy(&a, bytes + i.k, 4);
        } else if (i.code == (BPF_LD | BPF_IMM)) {
          a = i.k;
        } else if (i.code == (BPF_LD | BPF_MEM) && i.k < BPF_MEMWORDS) {
          a = mem[i.k];
        } else {
          return why = "unsupported load " + std::to_string(i.code), std::nullopt;
        }
        break;
      case BPF_LDX:
        if (i.code == (BPF_LDX | BPF_IMM)) x = i.k;
        else if (i.code == (BPF_LDX | BPF_MEM) && i.k < BPF_MEMWORDS) x = mem[i.k];
        else return why = "unsupported ldx " + std::to_string(i.code), std::nullopt;
        break;
      case BPF_ST:
      case BPF_STX:
        if (i.k >= BPF_MEMWORDS) return why = "store out of range", std::nullopt;
        mem[i.k] = BPF_CLASS(i.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(i.code)) {
          case BPF_ADD: a += src; break;
          case BPF_SUB: a -= src; break;
          case BPF_MUL: a *= src; break;
          case BPF_DIV: if (src == 0) return why = "division by zero", std::nullopt; a /= src; break;
          case BPF_MOD: if (src == 0) return why = "division by zero", std::nullopt; a %= src; break;
          case BPF_AND: a &= src; break;
          case BPF_OR: a |= src; break;
          case BPF_XOR: a ^= src; break;
          case BPF_LSH: a <<= (src & 31); break;
          case BPF_RSH: a >>= (src & 31); break;
          case BPF_NEG: a = 0u - a; break;
          default: return why = "unsupported alu " + std::to_string(i.code), std::nullopt;
        }
        break;
      case BPF_JMP: {
        if (BPF_OP(i.code) == BPF_JA) {
          pc += i.k;
          break;
        }
        bool taken = false;
        switch (BPF_OP(i.code)) {
          case BPF_JEQ: taken = a == src; break;
          case BPF_JGT: taken = a > src; break;
          case BPF_JGE: taken = a >= src; break;
          case BPF_JSET: taken = (a & src) != 0; break;
          default: return why = "unsupported jump " + std::to_string(i.code), std::nullopt;
        }
        pc += taken ? i.jt : i.jf;
        break;
      }
      case BPF_RET: return BPF_RVAL(i.code) == BPF_A ? a : i.k;
      case BPF_MISC:
        if (BPF_MISCOP(i.code) == BPF_TAX) x = a;
        else a = x;
        break;
      default: return why = "unsupported class " + std::to_string(i.code), std::nullopt;
    }
  }
  why = "ran off the end of the program";
  return std::nullopt;
}

// The filter's answer to `call`; 0, and a failure naming why, when the
// program could not be run.
std::uint32_t answerOf(std::span<const sock_filter> program, const SeccompCall& call) {
  std::string why;
  auto a = runFilter(program, call, why);
  EXPECT_TRUE(a) << why;
  return a.value_or(0);
}

// --- the table -------------------------------------------------------------

TEST(SeccompTableTest, EveryRuleHasAReasonAndTheIssuesCallsAreCovered) {
  auto table = seccompDenials({});
  for (const auto& d : table) EXPECT_FALSE(d.reason.empty()) << d.syscall << " " << d.condition;
  auto has = [&](const std::string& name) {
    return std::any_of(table.begin(), table.end(), [&](const SeccompDenialInfo& d) { return d.syscall == name; });
  };
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "keyctl",
                           "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter",
                           "io_uring_register", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                           "delete_module", "mount", "umount2", "pivot_root", "unshare", "setns", "clone", "clone3",
                           "open_by_handle_at", "name_to_handle_at", "ioctl", "socket", "socketpair"})
    EXPECT_TRUE(has(name)) << name;
}

// Every request of the terminal and console drivers' spaces: only the
// allow-list passes; the refused ones go to the supervisor (EPERM, audited);
// requests of every other driver are untouched.
TEST(SeccompTableTest, TerminalIoctlsAreAnAllowList) {
  const std::vector<std::uint64_t> allowed = {
      TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETA, TCSETA, TCSETAW, TCSETAF, TCSBRK, TCFLSH, TCSBRKP,
      TIOCSCTTY, TIOCGPGRP, TIOCSPGRP, TIOCGSID, TIOCOUTQ, FIONREAD, TIOCGWINSZ, TIOCSWINSZ, TIOCMGET, TIOCGSOFTCAR,
      TIOCGSERIAL, 0x542e /* TIOCGRS485 */, TIOCPKT, TIOCNOTTY, TIOCGETD, TIOCCBRK, FIONBIO, FIONCLEX, FIOCLEX,
      FIOASYNC, 0x5441 /* TIOCGPTPEER */, TIOCGLCKTRMIOS, TIOCSERGETLSR, TIOCMIWAIT, TIOCGICOUNT, FIOQSIZE,
      0x802c542a /* TCGETS2 */, 0x402c542b, 0x402c542c, 0x402c542d, TIOCGPTN, TIOCSPTLCK, TIOCGDEV, TIOCSIG,
      TIOCGPKT, TIOCGPTLCK, TIOCGEXCL, 0x80285442 /* TIOCGISO7816 */, 0x4b31, 0x4b33, 0x4b3b, 0x4b44, 0x4b62,
      0x4b64, 0x5600, 0x5601, 0x5603};
  std::string why;
  auto act = [&](std::uint64_t request) {
    auto a = runFilter(seccompProgram({}).instructions, {SYS_ioctl, {0, request}}, why);
    EXPECT_TRUE(a) << why;
    return a.value_or(0);
  };
  auto isAllowed = [&](std::uint64_t r) { return std::find(allowed.begin(), allowed.end(), r) != allowed.end(); };
  std::vector<std::uint64_t> walked;
  for (std::uint64_t n = 0; n < 0x100; ++n)
    for (std::uint64_t type : {0x54, 0x4b, 0x56}) walked.push_back(type << 8 | n);
  for (std::uint64_t r : allowed)  // every encoded neighbour of an allowed request: one bit of 16..31 flipped
    for (int bit = 16; bit < 32; ++bit)
      if ((r & 0xff00) == 0x5400) walked.push_back(r ^ (1ULL << bit));
  for (std::uint64_t r : walked) {
    const std::uint32_t expected = isAllowed(r) ? SECCOMP_RET_ALLOW : SECCOMP_RET_USER_NOTIF;
    EXPECT_EQ(act(r), expected) << std::hex << "request 0x" << r;
    EXPECT_EQ(act(r | 0xdead00000000ULL), expected) << std::hex << "request 0x" << r << " with bits above 32";
  }
  // The ones that outlive the program on the operator's terminal, by name.
  for (std::uint64_t r : std::initializer_list<std::uint64_t>{
           TIOCSTI, TIOCLINUX, TIOCSETD, TCXONC, TIOCCONS, TIOCEXCL, TIOCSBRK, TIOCVHANGUP, TIOCSSERIAL, TIOCMSET,
           TIOCMBIS, TIOCMBIC, TIOCSSOFTCAR, TIOCSLCKTRMIOS, 0x4b32 /* KDSETLED */, 0x4b65 /* KDSKBLED */,
           0x4b72 /* KDFONTOP */, 0x4b3a /* KDSETMODE */, 0x5606 /* VT_ACTIVATE */})
    EXPECT_EQ(act(r), SECCOMP_RET_USER_NOTIF) << std::hex << "request 0x" << r;
  // Other drivers' spaces, and encoded 'K' and 'V' (video4linux), are not this table's.
  for (std::uint64_t r : {0x80086601ULL /* FS_IOC_GETFLAGS */, 0x40049409ULL /* FICLONE */, 0x8912ULL /* SIOCGIFCONF */,
                          0x80685600ULL /* VIDIOC_QUERYCAP */, 0x80044b33ULL, 0x1234ULL})
    EXPECT_EQ(act(r), SECCOMP_RET_ALLOW) << std::hex << "request 0x" << r;
  // Every call walks this filter: it stays far below the kernel's BPF_MAXINSNS.
  EXPECT_LT(seccompProgram({}).instructions.size(), std::size_t{BPF_MAXINSNS} / 2);
}

TEST(SeccompTableTest, NoRuleComparesAnArgumentTwice) {
  for (bool allowUnix : {false, true}) {
    for (const auto& r : seccompRules({.allowUnixSockets = allowUnix, .limitFileSize = true})) {
      std::vector<unsigned> seen;
      for (const auto& a : r.args) {
        EXPECT_EQ(std::count(seen.begin(), seen.end(), a.index), 0) << r.syscall << " " << r.reason;
        seen.push_back(a.index);
      }
    }
  }
}

// The filter in the library was compiled at build time; it must be exactly
// what the table compiles to now, for every options value.
TEST(SeccompTableTest, TheBuiltInFilterIsTheTableCompiledNow) {
  for (bool allowUnix : {false, true}) {
    for (bool limitFileSize : {false, true}) {
      const SeccompOptions options{.allowUnixSockets = allowUnix, .limitFileSize = limitFileSize};
      auto compiled = compileSeccompFilter(options);
      ASSERT_TRUE(std::holds_alternative<std::vector<sock_filter>>(compiled)) << std::get<std::string>(compiled);
      const auto& expected = std::get<std::vector<sock_filter>>(compiled);
      const auto builtIn = seccompProgram(options).instructions;
      EXPECT_GT(builtIn.size(), 10u);
      ASSERT_EQ(builtIn.size(), expected.size()) << "allowUnixSockets=" << allowUnix << " limitFileSize=" << limitFileSize;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(builtIn[i].code, expected[i].code) << i;
        EXPECT_EQ(builtIn[i].jt, expected[i].jt) << i;
        EXPECT_EQ(builtIn[i].jf, expected[i].jf) << i;
        EXPECT_EQ(builtIn[i].k, expected[i].k) << i;
      }
    }
  }
}

TEST(SeccompTableTest, AllowingUnixSocketsGivesADifferentFilter) {
  const auto denied = seccompProgram({false}).instructions, allowed = seccompProgram({true}).instructions;
  EXPECT_TRUE(denied.size() != allowed.size() ||
              !std::equal(denied.begin(), denied.end(), allowed.begin(), [](const sock_filter& a, const sock_filter& b) {
                return a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k;
              }));
}

// --- the compiled filter, call by call -------------------------------------

// The socket allow-list as the issue states it, written independently of the
// table: exact types after masking the two flags, listed protocols only.
bool socketAllowed(bool unixAllowed, std::uint64_t family, std::uint64_t type, std::uint64_t protocol) {
  const std::uint64_t t = type & ~static_cast<std::uint64_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
  switch (family) {
    case AF_INET:
    case AF_INET6:
      return (t == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP)) ||
             (t == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP));
    case AF_NETLINK: return (t == SOCK_RAW || t == SOCK_DGRAM) && protocol == NETLINK_ROUTE;
    case AF_UNIX: return unixAllowed && (t == SOCK_STREAM || t == SOCK_DGRAM || t == SOCK_SEQPACKET) && protocol == 0;
    default: return false;
  }
}

bool socketpairAllowed(bool unixAllowed, std::uint64_t family, std::uint64_t type, std::uint64_t protocol) {
  const std::uint64_t t = type & ~static_cast<std::uint64_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
  return family == AF_UNIX && protocol == 0 &&
         (t == SOCK_STREAM || t == SOCK_SEQPACKET || (unixAllowed && t == SOCK_DGRAM));
}

TEST(SeccompFilterTest, SocketAndSocketpairFollowTheAllowListForEveryTypeValue) {
  // Every family the table names, and some it does not (AF_PACKET, AF_VSOCK,
  // AF_ALG, AF_BLUETOOTH, AF_XDP, unassigned ones, high bits the kernel ignores).
  const std::uint64_t families[] = {0, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, 40, 38, AF_BLUETOOTH, 44,
                                    3, 45, 255, (1ULL << 32) | AF_UNIX, (1ULL << 32) | AF_INET, 1ULL << 63};
  std::vector<std::uint64_t> types;
  for (std::uint64_t t = 0; t < 16; ++t)
    for (std::uint64_t flags : {0ULL, 0ULL + SOCK_NONBLOCK, 0ULL + SOCK_CLOEXEC, 0ULL + (SOCK_NONBLOCK | SOCK_CLOEXEC)})
      types.push_back(t | flags);
  for (std::uint64_t odd : {0x10ULL | SOCK_DGRAM, 0x100ULL | SOCK_STREAM, (1ULL << 32) | SOCK_STREAM,
                            (1ULL << 40) | SOCK_DGRAM, 0x40000ULL | SOCK_STREAM})
    types.push_back(odd);
  const std::uint64_t protocols[] = {0, 1, IPPROTO_TCP, IPPROTO_UDP, NETLINK_AUDIT, 132, 136, 262, 255,
                                     1ULL << 32, (1ULL << 32) | IPPROTO_TCP};
  for (bool unixAllowed : {false, true}) {
    const auto program = seccompProgram({unixAllowed}).instructions;
    // The supervisor's row test (seccompMatches) must agree with the filter.
    const auto rules = seccompRules({unixAllowed});
    auto rowFor = [&](const char* call) {
      auto row = std::find_if(rules.begin(), rules.end(), [&](const SeccompRule& r) { return r.syscall == std::string(call); });
      EXPECT_NE(row, rules.end()) << call;
      return *row;
    };
    const SeccompRule socketRow = rowFor("socket"), socketpairRow = rowFor("socketpair");
    int checked = 0, allowed = 0;
    for (int nr : {SYS_socket, SYS_socketpair}) {
      for (auto family : families)
        for (auto type : types)
          for (auto protocol : protocols) {
            SeccompCall call{nr, {family, type, protocol, 0, 0, 0}};
            std::string why;
            auto action = runFilter(program, call, why);
            ASSERT_TRUE(action) << why;
            const bool expected = nr == SYS_socket ? socketAllowed(unixAllowed, family, type, protocol)
                                                   : socketpairAllowed(unixAllowed, family, type, protocol);
            // Netlink sockets are allowed but counted: trapped, and let go
            // on by the supervisor while the count allows (socket_limits.h).
            const bool counted = nr == SYS_socket && expected && family == AF_NETLINK;
            ASSERT_EQ(nr == SYS_socket && countedSocket(call.args), counted)
                << family << ", 0x" << std::hex << type << std::dec << ", " << protocol;
            const std::uint32_t want = expected && !counted ? SECCOMP_RET_ALLOW : SECCOMP_RET_USER_NOTIF;
            ASSERT_EQ(*action, want) << (nr == SYS_socket ? "socket(" : "socketpair(") << family << ", 0x"
                                     << std::hex << type << std::dec << ", " << protocol
                                     << ") allowUnixSockets=" << unixAllowed;
            ASSERT_EQ(seccompMatches(nr == SYS_socket ? socketRow : socketpairRow, call.args), !expected || counted)
                << family << ", 0x" << std::hex << type << std::dec << ", " << protocol;
            ++checked;
            allowed += expected && !counted;
          }
    }
    EXPECT_GT(allowed, 0);
    EXPECT_GT(checked, 10000);
  }
}

TEST(SeccompFilterTest, DeniedCallsOutsideSocketsKeepTheirAnswers) {
  const auto program = seccompProgram({false}).instructions;
  auto act = [&](SeccompCall c) { return answerOf(program, c); };
  EXPECT_EQ(act({SYS_ptrace, {}}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(act({SYS_clone3, {}}), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(act({SYS_io_setup, {64}}), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(act({SYS_io_submit, {}}), SECCOMP_RET_ALLOW);  // harmless without a context
  EXPECT_EQ(act({SYS_getpid, {}}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(act({SYS_chmod, {0, 04755}}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(act({SYS_chmod, {0, 0755}}), SECCOMP_RET_USER_NOTIF);  // brokered: decided by name
  EXPECT_EQ(act({SYS_seccomp, {1, SECCOMP_FILTER_FLAG_NEW_LISTENER}}), SECCOMP_RET_ERRNO | EPERM);
}

// setsockopt(SOL_SOCKET, a buffer size) goes to the supervisor, which caps a
// netlink socket's (socket_limits.h); every other option stays in the kernel.
TEST(SeccompFilterTest, SocketBufferSizesGoToTheSupervisorAndNothingElseOfSetsockopt) {
  const auto program = seccompProgram({false}).instructions;
  auto act = [&](SeccompCall c) { return answerOf(program, c); };
  for (std::uint64_t option : {SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE}) {
    EXPECT_EQ(act({SYS_setsockopt, {3, SOL_SOCKET, option, 0, 4}}), SECCOMP_RET_USER_NOTIF) << option;
    // The kernel reads level and name as ints: bits above 32 do not hide them.
    EXPECT_EQ(act({SYS_setsockopt, {3, (1ULL << 32) | SOL_SOCKET, (1ULL << 40) | option, 0, 4}}),
              SECCOMP_RET_USER_NOTIF)
        << option;
    EXPECT_EQ(act({SYS_setsockopt, {3, IPPROTO_TCP, option, 0, 4}}), SECCOMP_RET_ALLOW) << option;
  }
  for (std::uint64_t option : {SO_REUSEADDR, SO_KEEPALIVE, SO_RCVLOWAT, SO_LINGER, SO_SNDTIMEO_OLD})
    EXPECT_EQ(act({SYS_setsockopt, {3, SOL_SOCKET, option, 0, 4}}), SECCOMP_RET_ALLOW) << option;
  EXPECT_EQ(act({SYS_getsockopt, {3, SOL_SOCKET, SO_RCVBUF, 0, 0}}), SECCOMP_RET_ALLOW);
}

// limits.fileSizeBytes (allocation_limit.h): fallocate() is handed to the
// supervisor, which decides on its register arguments, only in the filter
// for policies with that limit; the preallocation ioctls, whose range is in
// memory, are refused by the filter itself.
TEST(SeccompFilterTest, FallocateGoesToTheSupervisorOnlyUnderAFileSizeLimit) {
  auto act = [](const SeccompOptions& o, SeccompCall c) { return answerOf(seccompProgram(o).instructions, c); };
  constexpr std::uint64_t kKeepSize = 1, kGiB = 1ULL << 30;
  constexpr std::uint64_t kResvsp = 0x40305828, kResvsp64 = 0x4030582a, kZeroRange = 0x40305839;  // _IOW('X', 40/42/57, 48 bytes)
  for (bool allowUnix : {false, true}) {
    const SeccompOptions limited{.allowUnixSockets = allowUnix, .limitFileSize = true};
    const SeccompOptions free{.allowUnixSockets = allowUnix, .limitFileSize = false};
    EXPECT_EQ(act(limited, {SYS_fallocate, {3, kKeepSize, 0, kGiB}}), SECCOMP_RET_USER_NOTIF);
    EXPECT_EQ(act(limited, {SYS_fallocate, {3, 0, 0, 4096}}), SECCOMP_RET_USER_NOTIF);  // every mode: the supervisor decides
    EXPECT_EQ(act(free, {SYS_fallocate, {3, kKeepSize, 0, kGiB}}), SECCOMP_RET_ALLOW);
    for (std::uint64_t request : {kResvsp, kResvsp64, kZeroRange}) {
      EXPECT_EQ(act(limited, {SYS_ioctl, {3, request}}), SECCOMP_RET_ERRNO | EOPNOTSUPP) << std::hex << request;
      EXPECT_EQ(act(free, {SYS_ioctl, {3, request}}), SECCOMP_RET_ALLOW) << std::hex << request;
    }
    // The neighbours keep their answers in the limited variant.
    EXPECT_EQ(act(limited, {SYS_ioctl, {0, TIOCSTI}}), SECCOMP_RET_USER_NOTIF);
    EXPECT_EQ(act(limited, {SYS_ioctl, {3, 0x40305829 /* FS_IOC_UNRESVSP: frees space */}}), SECCOMP_RET_ALLOW);
    EXPECT_EQ(act(limited, {SYS_ftruncate, {3, kGiB}}), SECCOMP_RET_ALLOW);  // RLIMIT_FSIZE's
    EXPECT_EQ(act(limited, {SYS_ptrace, {}}), SECCOMP_RET_USER_NOTIF);
  }
  EXPECT_STREQ(seccompSyscallName(SYS_fallocate), "fallocate");
}

}  // namespace
}  // namespace stockade::platform

namespace stockade::platform {
namespace {

// The brokered calls (write_broker.h): every write-shaped call reaches the
// supervisor, and what is not write-shaped stays in the kernel.
TEST(SeccompFilterTest, WriteShapedCallsAreTrappedAndReadsAreNot) {
  std::string why;
  auto act = [&](SeccompCall c) {
    auto a = runFilter(seccompProgram({false}).instructions, c, why);
    EXPECT_TRUE(a) << why;
    return a.value_or(0);
  };
  constexpr std::uint32_t kTrap = SECCOMP_RET_USER_NOTIF, kAllow = SECCOMP_RET_ALLOW;
  EXPECT_EQ(act({SYS_open, {0, O_RDONLY}}), kAllow);
  EXPECT_EQ(act({SYS_open, {0, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW}}), kAllow);
  EXPECT_EQ(act({SYS_openat, {3, 0, O_RDONLY | O_NONBLOCK}}), kAllow);
  for (std::uint64_t flags : {std::uint64_t{O_WRONLY}, std::uint64_t{O_RDWR}, std::uint64_t{O_CREAT},
                              std::uint64_t{O_TRUNC}, std::uint64_t{O_TMPFILE | O_WRONLY}, std::uint64_t{O_TMPFILE}}) {
    EXPECT_EQ(act({SYS_open, {0, flags}}), kTrap) << std::hex << flags;
    EXPECT_EQ(act({SYS_openat, {3, 0, flags}}), kTrap) << std::hex << flags;
  }
  // openat2's flags are in memory: always the supervisor's.
  EXPECT_EQ(act({SYS_openat2, {3, 0, 0, 24}}), kTrap);
  for (int nr : {SYS_creat, SYS_mkdir, SYS_mkdirat, SYS_mknod, SYS_mknodat, SYS_symlink, SYS_symlinkat, SYS_link,
                 SYS_linkat, SYS_rename, SYS_renameat, SYS_renameat2, SYS_unlink, SYS_unlinkat, SYS_rmdir,
                 SYS_truncate, SYS_chmod, SYS_fchmodat, SYS_chown, SYS_lchown, SYS_fchownat, SYS_utime, SYS_utimes,
                 SYS_futimesat, SYS_setxattr, SYS_lsetxattr, SYS_removexattr, SYS_lremovexattr})
    EXPECT_EQ(act({nr, {}}), kTrap) << nr;
  EXPECT_EQ(act({SYS_utimensat, {static_cast<std::uint64_t>(AT_FDCWD), 0x1000, 0, 0}}), kTrap);  // by name
  EXPECT_EQ(act({SYS_utimensat, {3, 0, 0, 0}}), kAllow);              // futimens(): on a descriptor
  EXPECT_EQ(act({452, {}}), kTrap);  // fchmodat2
  EXPECT_EQ(act({463, {}}), kTrap);  // setxattrat
  EXPECT_EQ(act({466, {}}), kTrap);  // removexattrat
  // A question about writing is the broker's; one about reading is not.
  EXPECT_EQ(act({SYS_access, {0, W_OK}}), kTrap);
  EXPECT_EQ(act({SYS_access, {0, R_OK | X_OK}}), kAllow);
  EXPECT_EQ(act({SYS_faccessat, {3, 0, W_OK}}), kTrap);
  EXPECT_EQ(act({SYS_faccessat2, {3, 0, F_OK, 0}}), kAllow);
  // Calls on a descriptor stay in the kernel: the sandbox's own view of a
  // writable tree is read-only, and a file the broker opened is unprotected.
  for (int nr : {SYS_write, SYS_ftruncate, SYS_read, SYS_stat, SYS_getdents64, SYS_readlink, SYS_fchmod, SYS_fchown,
                 SYS_fsetxattr, SYS_fremovexattr})
    EXPECT_EQ(act({nr, {}}), kAllow) << nr;
}

// The supervisor evaluates the table's rows itself (seccompMatches()) for a
// call the kernel handed over: for every row, arguments the filter traps for
// that row must be ones seccompMatches() says the row matches.
TEST(SeccompFilterTest, TheSupervisorsRowTestAgreesWithTheFilter) {
  std::string why;
  for (const auto& rule : seccompRules({false})) {
    if (!rule.viaSupervisor) continue;
    const int nr = seccompSyscallNumber(rule.syscall);
    ASSERT_GE(nr, 0) << rule.syscall;
    SeccompCall call{nr, {}};
    for (const auto& a : rule.args) call.args[a.index] = a.value;  // meets (x & mask) == value and x >= value alike
    // A rule with an allow-list: the first value of its space (the last
    // argument the list compares) that the list leaves out.
    if (!rule.unless.empty()) {
      const unsigned arg = rule.unless.front().back().index;
      while (!seccompMatches(rule, call.args) && call.args[arg] < 0x10000) ++call.args[arg];
    }
    EXPECT_TRUE(seccompMatches(rule, call.args)) << rule.syscall << " " << rule.reason;
    auto action = runFilter(seccompProgram({false}).instructions, call, why);
    ASSERT_TRUE(action) << why;
    EXPECT_EQ(*action, SECCOMP_RET_USER_NOTIF) << rule.syscall << " " << rule.reason;
  }
  // And a row does not match arguments it does not name.
  SeccompRule chmodSetuid{"chmod", {{1, SeccompArg::Op::kMaskedEquals, S_ISUID, S_ISUID}}, EPERM, "", true};
  std::uint64_t plain[6] = {0, 0755};
  EXPECT_FALSE(seccompMatches(chmodSetuid, plain));
  // Nor arguments its allow-list names (compared in the low 32 bits, as the filter does).
  SeccompRule terminal{"ioctl", {{1, SeccompArg::Op::kMaskedEquals, 0xff00, 0x5400}}, EPERM, "", true};
  terminal.unless = {{{1, SeccompArg::Op::kMaskedEquals, 0xffffffff, 0x5401}}};
  std::uint64_t tcgets[6] = {0, 0xdead00005401ULL}, tiocsti[6] = {0, 0x5412};
  EXPECT_FALSE(seccompMatches(terminal, tcgets));
  EXPECT_TRUE(seccompMatches(terminal, tiocsti));
}

}  // namespace
}  // namespace stockade::platform
