// The pure parts of the netlink socket bound (socket_limits.h): the kernel's
// count read from /proc/<pid>/net/protocols, whether a thread let go on may
// still be creating its socket, and the cap on a netlink socket's buffers.
#include "platform/linux/socket_limits.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <climits>
#include <cstdio>
#include <string>

namespace stockade::platform {
namespace {

constexpr const char* kHeader =
    "protocol  size sockets  memory press maxhdr  slab module     cl co di ac io in de sh ss gs se re bi br ha uh gp em\n";

TEST(NetlinkSocketsInTest, ReadsTheSocketsColumnOfTheNetlinkRow) {
  const std::string text = std::string(kHeader) +
                           "PACKET    1600      3      -1   NI       0   no   kernel      n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n\n"
                           "NETLINK   1096     12      -1   NI       0   no   kernel      n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n\n"
                           "UNIX      1088      7      -1   NI       0   yes  kernel      n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n  n\n";
  EXPECT_EQ(netlinkSocketsIn(text), 12);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINK   1096      0      -1   NI"), 0);  // no newline at the end
}

TEST(NetlinkSocketsInTest, NoRowOrAnUnreadableOneIsNoCount) {
  EXPECT_EQ(netlinkSocketsIn(""), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(kHeader), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINKX  1096     12      -1\n"), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINK   1096     1x2     -1\n"), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINK   1096     -3      -1\n"), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINK   1096\n"), std::nullopt);
  EXPECT_EQ(netlinkSocketsIn(std::string(kHeader) + "NETLINK   1096 99999999999999999999999 -1\n"), std::nullopt);
}

TEST(NetlinkSocketsInTest, ThisProcessesOwnTableHasTheRow) {
  // The live file, as the supervisor reads it for a sandbox.
  std::string text;
  if (FILE* f = std::fopen("/proc/self/net/protocols", "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
  }
  ASSERT_FALSE(text.empty());
  const auto sockets = netlinkSocketsIn(text);
  ASSERT_TRUE(sockets.has_value()) << text;
  EXPECT_GE(*sockets, 0);
}

TEST(MayStillBeInSocketTest, OnlyARunningThreadOrOneBlockedInSocketMay) {
  const std::string inSocket = std::to_string(SYS_socket) + " 0x10 0x3 0x0 0x0 0x0 0x0 0x7ffc 0x7f00\n";
  EXPECT_TRUE(mayStillBeInSocket("running\n"));
  EXPECT_TRUE(mayStillBeInSocket(inSocket));
  EXPECT_FALSE(mayStillBeInSocket("0 0x3 0x7f1a5b202000 0x20000 0x0 0x0 0x0 0x7ffc 0x7f1a\n"));  // read(2)
  EXPECT_FALSE(mayStillBeInSocket(std::to_string(SYS_socketpair) + " 0x1 0x1 0x0 0x7ffc 0x0 0x0 0x7ffc 0x7f00\n"));
  EXPECT_FALSE(mayStillBeInSocket("-1 0x7ffc 0x7f00\n"));  // not in a call
  EXPECT_FALSE(mayStillBeInSocket(""));                    // gone
  EXPECT_FALSE(mayStillBeInSocket(std::to_string(SYS_socket) + "x 0x10\n"));
}

TEST(NetlinkBufferRequestTest, CappedAtHalfWhatASocketStartsWith) {
  constexpr long kStart = 212992;  // net.core.rmem_default's default
  EXPECT_EQ(netlinkBufferRequest(8 << 20, kStart), kStart / 2);
  EXPECT_EQ(netlinkBufferRequest(kStart / 2 + 1, kStart), kStart / 2);
  EXPECT_EQ(netlinkBufferRequest(4096, kStart), 4096);  // smaller: as asked (the kernel raises it to its minimum)
  EXPECT_EQ(netlinkBufferRequest(0, kStart), 0);
  // The kernel reads the int as unsigned: a negative one is a huge request.
  EXPECT_EQ(netlinkBufferRequest(-1, kStart), kStart / 2);
  EXPECT_EQ(netlinkBufferRequest(INT_MIN, kStart), kStart / 2);
  EXPECT_EQ(netlinkBufferRequest(INT_MAX, 1), 1);  // never 0 from a tiny start
}

}  // namespace
}  // namespace stockade::platform
