// Request head parsing and origin-form rewriting, without sockets.
#include "proxy/http_request.h"

#include <gtest/gtest.h>

namespace stockade::proxy::http {
namespace {

struct Case {
  std::string head;
  int status;  // 0: accepted
};

TEST(HttpRequestTest, AcceptsAbsoluteFormAndConnectAndRefusesTheRestWithTheRightStatus) {
  const Case cases[] = {
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 0},
      {"GET http://example.com HTTP/1.1\r\nHost: example.com:80\r\n\r\n", 0},
      {"GET HTTP://Example.COM./x HTTP/1.1\r\nHost: example.com\r\n\r\n", 0},
      {"GET http://u:p@example.com:8080/x HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 0},
      {"GET http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 0},
      {"GET http://example.com/ HTTP/1.0\r\n\r\n", 0},
      {"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 0},
      {"CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"GET * HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: other.com\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com:81\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nHost: example.com\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: u@example.com\r\n\r\n", 400},
      {"GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 501},
      {"GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 501},
      {"GET http://example.com/ HTTP/2.0\r\nHost: example.com\r\n\r\n", 505},
      {"GET http://example.com/ HTTP/1.1 \r\nHost: example.com\r\n\r\n", 400},
      {"GET  http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"G(T http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"GET http://exa mple.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"GET http://example.com\\@evil.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", 400},
      {"GET http://example.com:0/ HTTP/1.1\r\nHost: example.com:0\r\n\r\n", 400},
      {"GET http://example.com:65536/ HTTP/1.1\r\nHost: example.com:65536\r\n\r\n", 400},
      {"GET http://example.com:/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"GET http://::1/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", 400},
      {"GET http:///x HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
      {"CONNECT example.com HTTP/1.1\r\n\r\n", 400},
      {"CONNECT u@example.com:443 HTTP/1.1\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\r\n b\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX : a\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n: a\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: a\x01\r\n\r\n", 400},
      {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nNoColon\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1, 2\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 2, 2\r\n\r\n", 0},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: +1\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: Chunked\r\n\r\n", 0},
  };
  for (const auto& c : cases) {
    Request r;
    Refusal why;
    bool ok = parseRequest(c.head, r, why);
    if (c.status == 0) {
      EXPECT_TRUE(ok) << c.head << " -> " << why.status << " " << why.message;
    } else {
      EXPECT_FALSE(ok) << c.head;
      EXPECT_EQ(why.status, c.status) << c.head << " -> " << why.message;
      EXPECT_FALSE(why.message.empty());
    }
  }
}

TEST(HttpRequestTest, AbsoluteFormBecomesOriginFormAndUserinfoIsDropped) {
  Request r;
  Refusal why;
  ASSERT_TRUE(parseRequest("GET http://user:pw@example.com:8080?q=1#frag HTTP/1.1\r\nHost: example.com:8080\r\n"
                           "Proxy-Connection: keep-alive\r\nConnection: X-Secret\r\nX-Secret: s\r\nAccept: */*\r\n\r\n",
                           r, why))
      << why.message;
  EXPECT_EQ(r.kind, Request::Kind::kAbsolute);
  EXPECT_EQ(r.host, "example.com");
  EXPECT_EQ(r.port, 8080);
  EXPECT_EQ(r.originForm, "/?q=1");
  EXPECT_TRUE(r.keepAlive);
  EXPECT_EQ(originHead(r), "GET /?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n");
}

TEST(HttpRequestTest, KeepAliveFollowsVersionAndConnectionFields) {
  struct K {
    const char* head;
    bool keepAlive;
  };
  const K cases[] = {
      {"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n", true},
      {"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nConnection: close\r\n\r\n", false},
      {"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nProxy-Connection: close\r\n\r\n", false},
      {"GET http://a.com/ HTTP/1.0\r\n\r\n", false},
      {"GET http://a.com/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n", true},
  };
  for (const auto& c : cases) {
    Request r;
    Refusal why;
    ASSERT_TRUE(parseRequest(c.head, r, why)) << c.head << why.message;
    EXPECT_EQ(r.keepAlive, c.keepAlive) << c.head;
  }
}

TEST(HttpRequestTest, ConnectionCannotDropTheHeadersThatFrameTheRequest) {
  // Found in review: "Connection: content-length" made the proxy forward the
  // body without its length, so the upstream read a second, undecided request.
  for (const char* head :
       {"POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: 3\r\nConnection: close, content-length\r\n\r\n",
        "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\nConnection: Transfer-Encoding\r\n\r\n",
        "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nConnection: host\r\n\r\n",
        "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nProxy-Connection: content-length\r\n\r\n",
        "POST http://a.com/ HTTP/1.0\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    Request r;
    Refusal why;
    EXPECT_FALSE(parseRequest(head, r, why)) << head;
    EXPECT_EQ(why.status, 400) << head;
  }
  Request r;
  Refusal why;
  EXPECT_TRUE(parseRequest("POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n",
                           r, why))
      << why.message;
}

TEST(HttpRequestTest, Http10RequestWithoutHostGetsOneFromTheUri) {
  Request r;
  Refusal why;
  ASSERT_TRUE(parseRequest("GET http://a.com:81/x HTTP/1.0\r\n\r\n", r, why));
  EXPECT_EQ(originHead(r), "GET /x HTTP/1.0\r\nHost: a.com:81\r\n\r\n");
}

TEST(HttpMessageTest, HeadLengthNeedsCrlfCrlf) {
  EXPECT_EQ(headLength("GET / HTTP/1.1\r\n\r\nbody"), 18u);
  EXPECT_FALSE(headLength("GET / HTTP/1.1\n\n"));
  EXPECT_FALSE(headLength("GET / HTTP/1.1\r\n"));
  EXPECT_EQ(skipLeadingEmptyLines("\r\n\r\nGET"), 4u);
}

TEST(HttpMessageTest, ResponseFramingFollowsStatusMethodAndFields) {
  struct R {
    const char* head;
    const char* method;
    Framing::Kind kind;
    bool keepAlive;
    int status;  // 0: accepted
  };
  const R cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", Framing::kLength, true, 0},
      {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", Framing::kNone, true, 0},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", Framing::kChunked, true, 0},
      {"HTTP/1.1 200 OK\r\n\r\n", "GET", Framing::kUntilClose, false, 0},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", Framing::kNone, true, 0},
      {"HTTP/1.1 204 No Content\r\n\r\n", "GET", Framing::kNone, true, 0},
      {"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "GET", Framing::kNone, true, 0},
      {"HTTP/1.1 100 Continue\r\n\r\n", "POST", Framing::kNone, true, 0},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n", "GET", Framing::kLength, false, 0},
      {"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", Framing::kLength, false, 0},
      {"HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n", "GET", Framing::kLength, true, 0},
      {"HTTP/1.1 200\r\nContent-Length: 5\r\n\r\n", "GET", Framing::kLength, true, 0},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/2 200 OK\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/1.1 20 OK\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/1.1 099 X\r\n\r\n", "GET", Framing::kNone, true, 502},
      {"HTTP/1.1 200OK\r\n\r\n", "GET", Framing::kNone, true, 502},
  };
  for (const auto& c : cases) {
    ResponseHead r;
    Refusal why;
    bool ok = parseResponseHead(c.head, c.method, r, why);
    if (c.status) {
      EXPECT_FALSE(ok) << c.head;
      EXPECT_EQ(why.status, c.status) << c.head;
      continue;
    }
    ASSERT_TRUE(ok) << c.head << why.message;
    EXPECT_EQ(r.framing.kind, c.kind) << c.head;
    EXPECT_EQ(r.keepAlive, c.keepAlive) << c.head;
  }
}

TEST(ChunkedScannerTest, FindsTheEndOfAChunkedBodyFedInAnyPieces) {
  const std::string body = "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\n";
  const std::string after = "NEXT";
  for (std::size_t piece = 1; piece <= body.size() + after.size(); ++piece) {
    ChunkedScanner s;
    std::string all = body + after;
    std::size_t used = 0;
    for (std::size_t off = 0; off < all.size() && !s.done(); off += piece) {
      auto n = s.feed(std::string_view(all).substr(off, piece));
      ASSERT_TRUE(n) << s.error();
      used += *n;
    }
    EXPECT_TRUE(s.done());
    EXPECT_EQ(used, body.size()) << "piece " << piece;
  }
}

TEST(ChunkedScannerTest, ChunkDataSkippedWithoutFeedingStillEndsTheBodyWhereItEnds) {
  // The proxy splices large chunk data without showing it to the scanner.
  ChunkedScanner s;
  EXPECT_EQ(s.dataRemaining(), 0u);  // in a size line, nothing may be skipped
  ASSERT_EQ(s.feed("100000\r\n"), 8u);
  EXPECT_EQ(s.dataRemaining(), 0x100000u);
  s.skipData(0x100000 - 5);
  EXPECT_EQ(s.dataRemaining(), 5u);
  ASSERT_EQ(s.feed("abc"), 3u);
  EXPECT_EQ(s.dataRemaining(), 2u);
  s.skipData(2);
  EXPECT_EQ(s.dataRemaining(), 0u);  // the CRLF after the data is scanned again
  const std::string rest = "\r\n0\r\n\r\nNEXT";
  auto n = s.feed(rest);
  ASSERT_TRUE(n) << s.error();
  EXPECT_EQ(*n, rest.size() - 4);
  EXPECT_TRUE(s.done());
}

TEST(ChunkedScannerTest, SkippedChunkDataMustStillBeFollowedByCrlf) {
  ChunkedScanner s;
  ASSERT_EQ(s.feed("10\r\n"), 4u);
  s.skipData(16);
  EXPECT_FALSE(s.feed("XX").has_value());
  EXPECT_NE(std::string(s.error()), "");
}

TEST(ChunkedScannerTest, RefusesMalformedBodies) {
  const char* bad[] = {"x\r\n", "\r\n", "5\r\nhelloXX", "5\nhello\r\n", "ffffffffffffffff\r\n",
                       "0\r\nTrailer\n", "0\r\n\rX", "5;\x01\r\n"};
  for (const char* b : bad) {
    ChunkedScanner s;
    auto n = s.feed(b);
    EXPECT_FALSE(n && s.done()) << b;
    EXPECT_FALSE(n.has_value()) << b;
    EXPECT_NE(std::string(s.error()), "");
  }
}

}  // namespace
}  // namespace stockade::proxy::http
