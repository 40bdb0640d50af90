#include "proxy/environment.h"

#include <gtest/gtest.h>

#include <map>

namespace stockade::proxy {
namespace {

TEST(ProxyEnvironmentTest, SetsEveryVariableInBothCasesWithSocks5hAndEmptyNoProxy) {
  auto env = proxyEnvironment("127.0.0.1", 3128);
  std::map<std::string, std::string> m(env.begin(), env.end());
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(m["HTTP_PROXY"], "http://127.0.0.1:3128");
  EXPECT_EQ(m["https_proxy"], "http://127.0.0.1:3128");
  EXPECT_EQ(m["ALL_PROXY"], "socks5h://127.0.0.1:3128");
  EXPECT_EQ(m["all_proxy"], "socks5h://127.0.0.1:3128");
  EXPECT_EQ(m.at("NO_PROXY"), "");
  EXPECT_EQ(m.at("no_proxy"), "");
}

TEST(ProxyEnvironmentTest, BracketsIpv6AndRefusesAMissingPort) {
  auto env = proxyEnvironment("::1", 8080);
  EXPECT_EQ(env[0].second, "http://[::1]:8080");
  EXPECT_THROW(proxyEnvironment("127.0.0.1", 0), std::invalid_argument);
}

TEST(ProxyEnvironmentTest, RecognisesProxyVariablesInAnyCase) {
  for (const char* n : {"HTTP_PROXY", "http_proxy", "Https_Proxy", "ALL_PROXY", "no_proxy"}) EXPECT_TRUE(isProxyVariable(n)) << n;
  for (const char* n : {"PATH", "HTTP_PROXY_X", "FTP_PROXY", ""}) EXPECT_FALSE(isProxyVariable(n)) << n;
}

}  // namespace
}  // namespace stockade::proxy
