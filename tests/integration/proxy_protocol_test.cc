// Protocol behaviour: origin-form rewriting, keep-alive, pipelining, request
// bodies (Content-Length and chunked), SOCKS5 refusals with their reply codes.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "proxy_fixture.h"

namespace stockade::proxy::testing {
namespace {

class ProxyProtocolTest : public ProxyFixture {
 protected:
  std::string p() const { return std::to_string(origin_->port()); }
  std::string getRequest(const std::string& path, const std::string& extra = "") const {
    return "GET http://files.test:" + p() + path + " HTTP/1.1\r\nHost: files.test:" + p() + "\r\n" + extra + "\r\n";
  }
  // SOCKS5 greeting then `request`; returns the raw reply.
  std::string socks(std::string_view request) {
    auto fd = connectLoopback(port_);
    sendAll(fd.get(), std::string("\x05\x01\x00", 3));
    std::string method = readN(fd.get(), 2);
    if (method != std::string("\x05\x00", 2)) return "method:" + method;
    sendAll(fd.get(), request);
    return readAll(fd.get());
  }
};

TEST_F(ProxyProtocolTest, AbsoluteFormIsRewrittenToOriginFormWithoutHopByHopFields) {
  start({files()});
  std::string response = roundTrip(
      port_, "GET http://user:secret@files.test:" + p() +
                 "/hello?q=1#frag HTTP/1.1\r\nHost: files.test:" + p() +
                 "\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nX-Custom: kept\r\n"
                 "Connection: close, X-Drop\r\nX-Drop: gone\r\n\r\n");
  EXPECT_TRUE(response.starts_with("HTTP/1.1 200 OK")) << response;
  auto heads = origin_->heads();
  ASSERT_EQ(heads.size(), 1u);
  EXPECT_TRUE(heads[0].starts_with("GET /hello?q=1 HTTP/1.1\r\n")) << heads[0];
  EXPECT_NE(heads[0].find("Host: files.test:" + p() + "\r\n"), std::string::npos);
  EXPECT_NE(heads[0].find("X-Custom: kept\r\n"), std::string::npos);
  for (const char* gone : {"Proxy-Connection", "Proxy-Authorization", "X-Drop", "secret", "Connection:"})
    EXPECT_EQ(heads[0].find(gone), std::string::npos) << gone << " in " << heads[0];
}

TEST_F(ProxyProtocolTest, PipelinedRequestsOnOneKeepAliveConnectionAreAnsweredInOrder) {
  start({files()});
  auto fd = connectLoopback(port_);
  ASSERT_TRUE(sendAll(fd.get(), getRequest("/bytes/10/1") + getRequest("/chunked/20/2") + getRequest("/bytes/30/3")));
  std::string first = readHead(fd.get());
  EXPECT_TRUE(first.starts_with("HTTP/1.1 200")) << first;
  std::string b1 = readN(fd.get(), 10);
  std::string second = readHead(fd.get());
  EXPECT_NE(second.find("Transfer-Encoding: chunked"), std::string::npos) << second;
  std::string chunked = readN(fd.get(), 2 + 2 + 20 + 2 + 5);  // "14\r\n" + 20 bytes + "\r\n" + "0\r\n\r\n"
  std::string third = readHead(fd.get());
  EXPECT_TRUE(third.starts_with("HTTP/1.1 200")) << third;
  std::string b3 = readN(fd.get(), 30);
  std::string e1(10, 0), e2(20, 0), e3(30, 0);
  generate(1, 0, e1.data(), 10);
  generate(2, 0, e2.data(), 20);
  generate(3, 0, e3.data(), 30);
  EXPECT_EQ(b1, e1);
  EXPECT_EQ(chunked, "14\r\n" + e2 + "\r\n0\r\n\r\n");
  EXPECT_EQ(b3, e3);
  // One upstream connection served all three.
  EXPECT_EQ(origin_->heads().size(), 3u);
  fd.reset();
  proxy_->shutdown();
  auto ev = events();
  ASSERT_EQ(ev.size(), 3u);
  for (const auto& e : ev) EXPECT_EQ(e.status, 200);
}

// Large bodies move by relay() (splice.cc): through a pipe when the pool has
// one, copied through user space when it has none (splicePipeBytes 0 here).
// Either way the move stops exactly at the body's end: the next message on
// the same connection is then read and parsed afresh.
class ProxyRelayTest : public ProxyProtocolTest, public ::testing::WithParamInterface<std::size_t> {
 protected:
  void startRelay() {
    ProxyLimits limits;
    limits.splicePipeBytes = GetParam();
    start({files()}, {}, limits);
  }
};
INSTANTIATE_TEST_SUITE_P(PipeBudgets, ProxyRelayTest, ::testing::Values(ProxyLimits{}.splicePipeBytes, 0),
                         [](const ::testing::TestParamInfo<std::size_t>& p) { return p.param == 0 ? "CopyOnly" : "Splice"; });

TEST_P(ProxyRelayTest, LargeResponseBodiesLeaveTheNextPipelinedResponseIntact) {
  startRelay();
  auto fd = connectLoopback(port_);
  constexpr std::size_t kBig = 5 * 1024 * 1024 + 3;
  const std::string big = std::to_string(kBig);
  ASSERT_TRUE(sendAll(fd.get(), getRequest("/bytes/" + big + "/1") + getRequest("/chunked/" + big + "/2/1048576") +
                                    getRequest("/bytes/30/3")));
  std::string first = readHead(fd.get());
  EXPECT_TRUE(first.starts_with("HTTP/1.1 200")) << first;
  EXPECT_EQ(sha256Hex(readN(fd.get(), kBig)), expectedSha(1, kBig));

  std::string second = readHead(fd.get());
  EXPECT_NE(second.find("Transfer-Encoding: chunked"), std::string::npos) << second;
  std::string data;
  while (true) {  // 1 MiB chunks, the last one 3 bytes, then the zero chunk
    std::string line;
    while (!line.ends_with("\r\n")) {
      std::string c = readN(fd.get(), 1);
      ASSERT_EQ(c.size(), 1u) << "the chunked body was cut short after " << data.size() << " bytes";
      line += c;
    }
    std::size_t size = std::stoul(line, nullptr, 16);
    if (size == 0) break;
    EXPECT_EQ(size, std::min<std::size_t>(1048576, kBig - data.size()));
    data += readN(fd.get(), size);
    ASSERT_EQ(readN(fd.get(), 2), "\r\n");
  }
  EXPECT_EQ(readN(fd.get(), 2), "\r\n");
  EXPECT_EQ(data.size(), kBig);
  EXPECT_EQ(sha256Hex(data), expectedSha(2, kBig));

  std::string third = readHead(fd.get());
  EXPECT_TRUE(third.starts_with("HTTP/1.1 200")) << third;
  std::string e3(30, 0);
  generate(3, 0, e3.data(), e3.size());
  EXPECT_EQ(readN(fd.get(), 30), e3);
  EXPECT_EQ(origin_->heads().size(), 3u);
}

TEST_P(ProxyRelayTest, LargeRequestBodiesLeaveTheNextPipelinedRequestIntact) {
  startRelay();
  std::string data(3 * 1024 * 1024 + 5, 0);
  generate(7, 0, data.data(), data.size());
  std::string post = "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() + "\r\n";
  char size[32];
  std::snprintf(size, sizeof size, "%zx", data.size());
  std::string requests = post + "Content-Length: " + std::to_string(data.size()) + "\r\n\r\n" + data +  //
                         post + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n" + data + "\r\n0\r\n\r\n" +
                         getRequest("/bytes/10/4");
  auto fd = connectLoopback(port_);
  ASSERT_TRUE(sendAll(fd.get(), requests));
  for (const char* framing : {"Content-Length", "chunked"}) {
    std::string head = readHead(fd.get());
    EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << framing << ": " << head;
    EXPECT_EQ(readN(fd.get(), 64), sha256Hex(data)) << framing;
  }
  std::string last = readHead(fd.get());
  EXPECT_TRUE(last.starts_with("HTTP/1.1 200")) << last;
  std::string e4(10, 0);
  generate(4, 0, e4.data(), e4.size());
  EXPECT_EQ(readN(fd.get(), 10), e4);
  EXPECT_EQ(origin_->heads().size(), 3u);
}

TEST_P(ProxyRelayTest, RequestBodiesArriveByteExactWithLengthOrChunkedFraming) {
  startRelay();
  TempDir dir;
  std::string path = dir.path() + "/upload";
  std::string data(3 * 1024 * 1024 + 11, 0);
  generate(42, 0, data.data(), data.size());
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  std::string want = sha256Hex(data);
  for (bool tunnel : {false, true}) {
    std::vector<std::string> base{"--proxy", httpProxy(), "-sS"};
    if (tunnel) base.push_back("--proxytunnel");
    auto withLength = base;
    withLength.insert(withLength.end(), {"--data-binary", "@" + path, url("/sha")});
    CurlResult a = runCurl(withLength);
    EXPECT_EQ(a.exitCode, 0) << a.err;
    EXPECT_EQ(a.out, want) << "Content-Length upload, tunnel=" << tunnel;
    auto chunked = base;
    chunked.insert(chunked.end(), {"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + path, url("/sha")});
    CurlResult b = runCurl(chunked);
    EXPECT_EQ(b.exitCode, 0) << b.err;
    EXPECT_EQ(b.out, want) << "chunked upload, tunnel=" << tunnel;
  }
}

TEST_F(ProxyProtocolTest, ExpectContinueIsAnsweredByTheProxy) {
  start({files()});
  std::string body(5000, 'x');
  auto fd = connectLoopback(port_);
  ASSERT_TRUE(sendAll(fd.get(), "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() +
                                    "\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(readHead(fd.get()), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(sendAll(fd.get(), body));
  std::string head = readHead(fd.get());
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << head;
  EXPECT_EQ(readN(fd.get(), 64), sha256Hex(body));
  EXPECT_EQ(origin_->heads()[0].find("Expect"), std::string::npos);
}

TEST_F(ProxyProtocolTest, SmugglingShapedRequestsAreRefused) {
  start({files()});
  const std::string bad[] = {
      "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() +
          "\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() +
          "\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
      "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() +
          "\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
      "POST http://files.test:" + p() + "/sha HTTP/1.1\r\nHost: files.test:" + p() +
          "\r\nContent-Length : 5\r\n\r\nhello",
      "GET http://files.test:" + p() + "/ HTTP/1.1\r\nHost: files.test:" + p() + "\r\nX: a\r\n b\r\n\r\n",
      "GET http://files.test:" + p() + "/ HTTP/2.0\r\nHost: files.test:" + p() + "\r\n\r\n",
  };
  for (const auto& request : bad) {
    std::string response = roundTrip(port_, request);
    EXPECT_TRUE(response.starts_with("HTTP/1.1 400") || response.starts_with("HTTP/1.1 501") ||
                response.starts_with("HTTP/1.1 505"))
        << request << "\n-> " << response;
  }
  EXPECT_TRUE(origin_->heads().empty());
}

TEST_F(ProxyProtocolTest, Socks5RefusesBindUdpAssociateUnknownAddressTypesAndSocks4) {
  start({files()});
  std::string target = std::string("\x0a") + "files.test" + char(origin_->port() >> 8) + char(origin_->port() & 0xff);
  std::string bind = socks(std::string("\x05\x02\x00\x03", 4) + target);
  ASSERT_GE(bind.size(), 2u);
  EXPECT_EQ(bind[1], 0x07);  // command not supported
  std::string udp = socks(std::string("\x05\x03\x00\x03", 4) + target);
  ASSERT_GE(udp.size(), 2u);
  EXPECT_EQ(udp[1], 0x07);
  std::string atyp = socks(std::string("\x05\x01\x00\x05", 4) + "xxxxxx");
  ASSERT_GE(atyp.size(), 2u);
  EXPECT_EQ(atyp[1], 0x08);  // address type not supported
  // A greeting without the no-authentication method.
  std::string noAuth = roundTrip(port_, std::string("\x05\x01\x02", 3));
  EXPECT_EQ(noAuth, std::string("\x05\xff", 2));
  // SOCKS4 and 4a: request rejected.
  std::string s4 = roundTrip(port_, std::string("\x04\x01\x00\x50\x7f\x00\x00\x01user\x00", 13));
  ASSERT_GE(s4.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(s4[1]), 0x5B);
  EXPECT_TRUE(origin_->heads().empty());
}

TEST_F(ProxyProtocolTest, Socks5WithIpv6AndIpv4AddressTypesConnects) {
  std::string p6 = std::to_string(origin_->port());
  start({"127.0.0.1:" + p6});
  std::string req = std::string("\x05\x01\x00\x01\x7f\x00\x00\x01", 8) + char(origin_->port() >> 8) +
                    char(origin_->port() & 0xff);
  auto fd = connectLoopback(port_);
  sendAll(fd.get(), std::string("\x05\x01\x00", 3));
  ASSERT_EQ(readN(fd.get(), 2), std::string("\x05\x00", 2));
  sendAll(fd.get(), req);
  std::string reply = readN(fd.get(), 10);
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x00);
  sendAll(fd.get(), "GET /close/4/9 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(readAll(fd.get()).starts_with("HTTP/1.1 200"));
  // The IPv4-mapped IPv6 spelling of the same allowed address is the same destination.
  std::string mapped = std::string("\x05\x01\x00\x04", 4) + std::string(10, '\0') + "\xff\xff\x7f" +
                       std::string(2, '\0') + "\x01" + char(origin_->port() >> 8) + char(origin_->port() & 0xff);
  auto fd2 = connectLoopback(port_);
  sendAll(fd2.get(), std::string("\x05\x01\x00", 3));
  ASSERT_EQ(readN(fd2.get(), 2), std::string("\x05\x00", 2));
  sendAll(fd2.get(), mapped);
  std::string r2 = readN(fd2.get(), 10);
  ASSERT_EQ(r2.size(), 10u);
  EXPECT_EQ(r2[1], 0x00);
}

TEST_F(ProxyProtocolTest, ListenerOnIpv6LoopbackServesToo) {
  std::uint16_t port6 = 0;
  platform::UniqueFd fd;
  try {
    fd = listenLoopback(port6, true);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no IPv6 loopback on this machine: " << e.what();
  }
  start({files()});
  auto handle6 = proxy_->addListener(std::move(fd), ListenerContext{"sb-1", "run-1", [this] { return std::atomic_load(&rules_); },
                                                                    {{"files.test", "127.0.0.1"}}});
  CurlResult r = runCurl({"--proxy", "http://[::1]:" + std::to_string(port6), "-sS", url("/bytes/7/7"), "-o",
                          "/dev/null", "-w", "%{http_code}"});
  EXPECT_EQ(r.out, "200") << r.err;
}

}  // namespace
}  // namespace stockade::proxy::testing

namespace stockade::proxy {
namespace {

TEST(ProxyNamesTest, EveryProtocolAndVerdictHasAName) {
  for (auto p : {Protocol::kHttp, Protocol::kConnect, Protocol::kSocks5, Protocol::kSocks4, Protocol::kUnknown})
    EXPECT_FALSE(protocolName(p).empty());
  EXPECT_EQ(protocolName(Protocol::kSocks5), "socks5");
  for (auto v : {EventVerdict::kAllowed, EventVerdict::kDenied, EventVerdict::kRefused})
    EXPECT_NE(eventVerdictName(v), "unknown");
}

TEST(ProxyApiTest, AddListenerRefusesWhatIsNotAListeningTcpSocketOrABadOverride) {
  Proxy proxy;
  auto rules = [] { return std::make_shared<const DerivedRules::Network>(); };
  EXPECT_THROW(proxy.addListener(platform::UniqueFd(), ListenerContext{"s", "r", rules, {}}), std::invalid_argument);
  platform::UniqueFd unbound(::socket(AF_INET, SOCK_STREAM, 0));
  EXPECT_THROW(proxy.addListener(std::move(unbound), ListenerContext{"s", "r", rules, {}}), std::invalid_argument);
  std::uint16_t port = 0;
  EXPECT_THROW(proxy.addListener(testing::listenLoopback(port), ListenerContext{"s", "r", nullptr, {}}),
               std::invalid_argument);
  EXPECT_THROW(proxy.addListener(testing::listenLoopback(port), ListenerContext{"s", "r", rules, {{"a.test", "nope"}}}),
               std::invalid_argument);
  EXPECT_THROW(proxy.addListener(testing::listenLoopback(port), ListenerContext{"s", "r", rules, {{"1.2.3.4", "127.0.0.1"}}}),
               std::invalid_argument);
  auto ok = proxy.addListener(testing::listenLoopback(port), ListenerContext{"s", "r", rules, {{"A.Test.", "::1"}}});
  EXPECT_TRUE(ok.active());
  proxy.shutdown();
  EXPECT_THROW(proxy.addListener(testing::listenLoopback(port), ListenerContext{"s", "r", rules, {}}), std::logic_error);
}

}  // namespace
}  // namespace stockade::proxy
