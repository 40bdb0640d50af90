// Denied calls' arguments decoded for audit events, without a kernel.
#include "platform/linux/syscall_decode.h"

#include <gtest/gtest.h>

namespace stockade::platform {
namespace {

struct Case {
  const char* name;
  const char* syscall;
  std::array<std::uint64_t, 6> args;
  DecodedArguments expected;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DecodeTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeTest, NamesWhatItKnowsAndKeepsTheRestVisible) {
  EXPECT_EQ(decodeArguments(GetParam().syscall, GetParam().args), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, DecodeTest,
    ::testing::Values(
        Case{"UnixStreamCloexec", "socket", {1, 1 | 02000000, 0}, {{"family", "AF_UNIX"}, {"type", "SOCK_STREAM|SOCK_CLOEXEC"}, {"protocol", "0"}}},
        Case{"PacketRaw", "socket", {17, 3, 0x300}, {{"family", "AF_PACKET"}, {"type", "SOCK_RAW"}, {"protocol", "768"}}},
        Case{"Mptcp", "socket", {2, 1, 262}, {{"family", "AF_INET"}, {"type", "SOCK_STREAM"}, {"protocol", "IPPROTO_MPTCP"}}},
        Case{"NetlinkAudit", "socket", {16, 3, 9}, {{"family", "AF_NETLINK"}, {"type", "SOCK_RAW"}, {"protocol", "NETLINK_AUDIT"}}},
        Case{"HighBitsOfTheFamily", "socket", {0x100000001, 1, 0},
             {{"family", "AF_UNIX (bits above 32: 0x1, ignored by the kernel)"}, {"type", "SOCK_STREAM"}, {"protocol", "0"}}},
        Case{"UnknownFamilyAndType", "socket", {77, 9 | 0x40, 0}, {{"family", "AF_UNKNOWN(77)"}, {"type", "SOCK_UNKNOWN(73)"}, {"protocol", "0"}}},
        Case{"DatagramPair", "socketpair", {1, 2 | 04000, 0}, {{"family", "AF_UNIX"}, {"type", "SOCK_DGRAM|SOCK_NONBLOCK"}, {"protocol", "0"}}},
        Case{"OpenatSetuid", "openat", {static_cast<std::uint64_t>(-100), 0, 01 | 0100 | 02000000, 04755},
             {{"flags", "O_WRONLY|O_CREAT|O_CLOEXEC"}, {"mode", "04755 (S_ISUID)"}}},
        Case{"OpenLargefileUnknownBit", "open", {0, 02 | 00100000 | 0x40000000, 0},
             {{"flags", "O_RDWR|O_LARGEFILE|0x40000000"}, {"mode", "00"}}},
        Case{"OpenTmpfile", "open", {0, 02 | 020200000, 0600}, {{"flags", "O_RDWR|O_TMPFILE"}, {"mode", "0600"}}},
        Case{"ChmodSetgidSticky", "fchmodat", {0, 0, 03775}, {{"mode", "03775 (S_ISGID|S_ISVTX)"}}},
        Case{"MknodSetuidFile", "mknodat", {0, 0, 0100000 | 04700}, {{"mode", "04700 (S_IFREG|S_ISUID)"}}},
        Case{"Tiocsti", "ioctl", {0, 0x5412, 0}, {{"request", "TIOCSTI 0x5412"}}},
        Case{"TiocstiWithHighBits", "ioctl", {0, 0xffffffff00005412ull, 0}, {{"request", "TIOCSTI 0x5412"}}},
        Case{"UnknownIoctl", "ioctl", {0, 0xdead, 0}, {{"request", "IOCTL_UNKNOWN(57005) 0xdead"}}},
        Case{"UnshareUserAndNet", "unshare", {0x10000000 | 0x40000000}, {{"flags", "CLONE_NEWUSER|CLONE_NEWNET"}}},
        Case{"SetnsAny", "setns", {3, 0}, {{"nstype", "0"}}},
        Case{"NothingToSay", "ptrace", {0, 1, 2}, {}}),
    [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace stockade::platform
