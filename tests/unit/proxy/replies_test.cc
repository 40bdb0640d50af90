// The proxy's refusal replies (proxy/replies.h).
#include "proxy/replies.h"

#include <gtest/gtest.h>

#include <set>

#include "proxy/socks5.h"

namespace stockade::proxy {
namespace {

TEST(RepliesTest, EveryErrorKindHasItsOwnName) {
  std::set<std::string_view> names;
  for (int k = 0; k <= static_cast<int>(ErrorKind::kVersionNotSupported); ++k) {
    auto name = errorKindName(static_cast<ErrorKind>(k));
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(errorKindName(ErrorKind::kConnectionLimit), "connection-limit");
  EXPECT_EQ(errorKindName(ErrorKind::kPendingLimit), "pending-limit");
  EXPECT_EQ(errorKindForStatus(503), ErrorKind::kTunnelLimit);
  EXPECT_EQ(errorKindForStatus(403), ErrorKind::kBlockedByPolicy);
}

TEST(RepliesTest, AnHttpErrorClosesTheConnectionAndNamesItsKind) {
  std::string r = httpError(503, ErrorKind::kPendingLimit, "too many");
  EXPECT_EQ(r,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 25\r\n"
            "Connection: close\r\nX-Proxy-Error: pending-limit\r\n\r\nstockade proxy: too many\n");
}

TEST(RepliesTest, AnUnreadSocks5RefusalIsTheMethodReplyThenAGeneralFailure) {
  std::string r = socks5RefusalUnread();
  EXPECT_EQ(r, socks5::methodReply(true) + socks5::reply(socks5::Reply::kGeneralFailure));
  ASSERT_EQ(r.size(), 12u);
  EXPECT_EQ(r[3], 0x01);
}

TEST(RepliesTest, PrintableEscapesEverythingButPlainAscii) {
  EXPECT_EQ(printable("ok.example"), "ok.example");
  EXPECT_EQ(printable(std::string("a\0\"\\\x7f", 5)), "a\\x00\\x22\\x5c\\x7f");
  EXPECT_EQ(printable(std::string(300, 'x')), std::string(256, 'x') + "...");
}

}  // namespace
}  // namespace stockade::proxy
