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
