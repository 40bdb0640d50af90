// SOCKS5 parsing and replies, without sockets.
#include "proxy/socks5.h"

#include <gtest/gtest.h>

namespace stockade::proxy::socks5 {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

TEST(Socks5Test, GreetingNeedsTheWholeMethodList) {
  Greeting g;
  std::string err;
  EXPECT_EQ(parseGreeting(bytes({5}), g, err), Status::kNeedMore);
  EXPECT_EQ(parseGreeting(bytes({5, 2, 2}), g, err), Status::kNeedMore);
  EXPECT_EQ(parseGreeting(bytes({5, 2, 2, 0}), g, err), Status::kOk);
  EXPECT_TRUE(g.noAuthOffered);
  EXPECT_EQ(g.length, 4u);
  EXPECT_EQ(parseGreeting(bytes({5, 1, 2}), g, err), Status::kOk);
  EXPECT_FALSE(g.noAuthOffered);
  EXPECT_EQ(parseGreeting(bytes({5, 0}), g, err), Status::kError);
  EXPECT_EQ(parseGreeting(bytes({4, 1, 0}), g, err), Status::kError);
  EXPECT_EQ(methodReply(true), bytes({5, 0}));
  EXPECT_EQ(methodReply(false), bytes({5, 0xff}));
}

TEST(Socks5Test, RequestsOfEveryAddressType) {
  Request r;
  Reply code;
  std::string err;
  ASSERT_EQ(parseRequest(bytes({5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90}), r, code, err), Status::kOk);
  EXPECT_EQ(r.host, "127.0.0.1");
  EXPECT_EQ(r.port, 8080);
  EXPECT_EQ(r.length, 10u);
  ASSERT_EQ(parseRequest(bytes({5, 1, 0, 3, 3, 'a', '.', 'b', 0, 80, 'X'}), r, code, err), Status::kOk);
  EXPECT_EQ(r.host, "a.b");
  EXPECT_EQ(r.port, 80);
  EXPECT_EQ(r.length, 10u);
  ASSERT_EQ(parseRequest(bytes({5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80}), r, code, err),
            Status::kOk);
  EXPECT_EQ(r.host, "::1");
}

TEST(Socks5Test, IncompleteRequestsNeedMore) {
  const std::string full = bytes({5, 1, 0, 3, 3, 'a', '.', 'b', 0, 80});
  for (std::size_t n = 0; n < full.size(); ++n) {
    Request r;
    Reply code;
    std::string err;
    EXPECT_EQ(parseRequest(full.substr(0, n), r, code, err), Status::kNeedMore) << n;
  }
}

TEST(Socks5Test, RefusedRequestsCarryTheirReplyCode) {
  struct C {
    std::string request;
    Reply reply;
  };
  const C cases[] = {
      {bytes({5, 2, 0, 1, 1, 2, 3, 4, 0, 80}), Reply::kCommandNotSupported},
      {bytes({5, 3, 0, 1, 1, 2, 3, 4, 0, 80}), Reply::kCommandNotSupported},
      {bytes({5, 9, 0, 1, 1, 2, 3, 4, 0, 80}), Reply::kCommandNotSupported},
      {bytes({5, 1, 0, 5, 1, 2, 3, 4, 0, 80}), Reply::kAddressTypeNotSupported},
      {bytes({5, 1, 0, 3, 0, 0, 80}), Reply::kGeneralFailure},
      {bytes({5, 1, 1, 1, 1, 2, 3, 4, 0, 80}), Reply::kGeneralFailure},
      {bytes({4, 1, 0, 1, 1, 2, 3, 4, 0, 80}), Reply::kGeneralFailure},
  };
  for (const auto& c : cases) {
    Request r;
    Reply code = Reply::kSucceeded;
    std::string err;
    EXPECT_EQ(parseRequest(c.request, r, code, err), Status::kError);
    EXPECT_EQ(code, c.reply);
    EXPECT_FALSE(err.empty());
  }
}

TEST(Socks5Test, RepliesAndEveryReplyCodeHasAName) {
  EXPECT_EQ(reply(Reply::kNotAllowedByRuleset), bytes({5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(socks4Rejected(), bytes({0, 0x5b, 0, 0, 0, 0, 0, 0}));
  for (int c = 0; c <= 8; ++c) EXPECT_NE(replyName(static_cast<Reply>(c)), "unknown") << c;
}

}  // namespace
}  // namespace stockade::proxy::socks5
