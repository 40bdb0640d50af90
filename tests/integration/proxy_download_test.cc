// Allowed traffic through the real proxy with real curl: bodies arrive
// byte-exact (SHA-256 compared) over absolute-form HTTP, CONNECT and socks5h.
#include <gtest/gtest.h>

#include "proxy_fixture.h"

namespace stockade::proxy::testing {
namespace {

class ProxyDownloadTest : public ProxyFixture {
 protected:
  std::vector<std::string> viaArgs(Via via) const {
    switch (via) {
      case Via::kHttp: return {"--proxy", httpProxy()};
      case Via::kConnect: return {"--proxy", httpProxy(), "--proxytunnel"};
      case Via::kSocks5h: return {"--proxy", socksProxy()};
    }
    return {};
  }
};

// Every body again with no pipe to splice through (ProxyLimits.splicePipeBytes
// 0): every transfer copies through user space, as it does when the pool or
// the user's pipe quota is spent.
TEST_F(ProxyDownloadTest, WithoutPipesBodiesStillArriveByteExactOverEveryProtocol) {
  ProxyLimits limits;
  limits.splicePipeBytes = 0;
  start({files()}, {}, limits);
  TempDir dir;
  std::uint64_t seed = 100;
  for (Via via : {Via::kHttp, Via::kConnect, Via::kSocks5h}) {
    for (const char* route : {"bytes", "chunked", "close"}) {
      ++seed;
      constexpr std::uint64_t kSize = 8ull << 20;
      std::string out = dir.path() + "/body";
      std::vector<std::string> args = viaArgs(via);
      args.insert(args.end(), {"-sS", "-o", out, "-w", "%{http_code}",
                               url("/" + std::string(route) + "/" + std::to_string(kSize) + "/" + std::to_string(seed))});
      CurlResult r = runCurl(args);
      SCOPED_TRACE(std::string(viaName(via)) + " " + route);
      ASSERT_EQ(r.exitCode, 0) << r.err;
      EXPECT_EQ(r.out, "200");
      std::uint64_t size = 0;
      EXPECT_EQ(fileSha(out, &size), expectedSha(seed, kSize));
      EXPECT_EQ(size, kSize);
    }
  }
}

TEST_F(ProxyDownloadTest, BodiesFromOneByteToOneHundredMegabytesArriveByteExactOverEveryProtocol) {
  start({files()});
  TempDir dir;
  struct Case {
    const char* route;
    std::uint64_t size;
  };
  const Case cases[] = {{"bytes", 1}, {"chunked", 1000}, {"close", 65536 + 7}, {"chunked", 1 << 20},
                        {"bytes", 100ull << 20}};
  std::uint64_t seed = 1;
  for (Via via : {Via::kHttp, Via::kConnect, Via::kSocks5h}) {
    for (const auto& c : cases) {
      ++seed;
      std::string out = dir.path() + "/body";
      std::vector<std::string> args = viaArgs(via);
      args.insert(args.end(), {"-sS", "-o", out, "-w", "%{http_code}",
                               url("/" + std::string(c.route) + "/" + std::to_string(c.size) + "/" + std::to_string(seed))});
      CurlResult r = runCurl(args);
      SCOPED_TRACE(std::string(viaName(via)) + " " + c.route + " " + std::to_string(c.size));
      ASSERT_EQ(r.exitCode, 0) << r.err;
      EXPECT_EQ(r.out, "200");
      std::uint64_t size = 0;
      EXPECT_EQ(fileSha(out, &size), expectedSha(seed, c.size));
      EXPECT_EQ(size, c.size);
    }
  }
}

}  // namespace
}  // namespace stockade::proxy::testing
