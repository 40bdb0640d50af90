// The manager's children reach the network only through stockade's proxy:
// real curl inside a real sandbox, a real origin server on 127.0.0.1, names
// pointed at it through resolve overrides (no DNS query ever leaves).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "proxy_test_support.h"
#include "stockade/stockade.h"
#include "tests/support/manager_fixture.h"

namespace stockade {
namespace {

class ManagerNetworkTest : public testing::ManagerFixture {
 protected:
  SandboxPolicy policy(const std::string& domains) {
    return SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[],"allowWrite":[]},"network":{"allowedDomains":)" +
                                   domains + R"(},"env":{"allow":["PATH"]}})");
  }
  RunOptions curl(const std::string& script) {
    RunOptions o{.argv = {"/bin/sh", "-c", script}, .correlationId = "net", .cwd = "/"};
    o.resolve = {{"origin.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}, {"denied.test", "127.0.0.1"}};
    return o;
  }
  std::string url(const std::string& host, const std::string& path = "/") {
    return "http://" + host + ":" + std::to_string(origin_.port()) + path;
  }
  // curl through the environment's proxy; prints the status code.
  std::string get(const std::string& host) { return "curl -s -o /dev/null -w '%{http_code}' " + url(host); }

  proxy::testing::OriginServer origin_;
};

TEST_F(ManagerNetworkTest, AllowedNameIsReachedThroughTheProxyAndDeniedNameGets403) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test"])"));
  auto out = h.run(curl("curl -sS " + url("origin.test", "/hello") + "; echo; " + get("denied.test"))).collect();
  EXPECT_EQ(out.out, "hello\n\n403") << out.err;
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) {
    return j["event"] == "proxy" && j["host"] == "denied.test" && j["verdict"] == "denied";
  })) << "every proxy decision is an audit event";
}

TEST_F(ManagerNetworkTest, Socks5hThroughTheSameListenerWorks) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test"])"));
  auto out = h.run(curl("curl -sS --proxy \"$ALL_PROXY\" " + url("origin.test", "/hello"))).collect();
  EXPECT_EQ(out.out, "hello\n") << out.err;
}

TEST_F(ManagerNetworkTest, DirectConnectionsBypassingTheProxyFail) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test"])"));
  auto out = h.run(curl("curl -s --noproxy '*' --max-time 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                        std::to_string(origin_.port()) + "/; echo \" exit=$?\""))
                 .collect();
  EXPECT_EQ(out.out.substr(0, 3), "000") << "the host's loopback is not the sandbox's: " << out.out;
}

TEST_F(ManagerNetworkTest, NarrowAppliesToARunningChildAtItsNextConnection) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test","other.test"])"));
  stockade::Run r = h.run(curl(get("other.test") + "; read go; " + get("other.test")));
  // First request done when its status is printed.
  std::string first(3, '\0');
  ASSERT_EQ(::read(r.stdoutFd(), first.data(), 3), 3);
  EXPECT_EQ(first, "200");
  h.narrow(policy(R"(["origin.test"])"));
  ASSERT_EQ(::write(r.stdinFd(), "go\n", 3), 3);
  auto rest = r.collect();
  EXPECT_EQ(rest.out, "403") << "the narrowed rules apply to the child already running";
}

TEST_F(ManagerNetworkTest, PerCallNetworkNarrowingIsHonouredForThatChildAlone) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test","other.test"])"));
  RunOptions narrowed = curl(get("origin.test") + "; printf ' '; " + get("other.test"));
  narrowed.policy = policy(R"(["origin.test"])");
  stockade::Run a = h.run(std::move(narrowed));
  stockade::Run b = h.run(curl(get("other.test")));
  EXPECT_EQ(a.collect().out, "200 403");
  EXPECT_EQ(b.collect().out, "200") << "the session's other children keep the session's rules";
}

TEST_F(ManagerNetworkTest, APerCallNarrowedChildStillFollowsLaterSessionNarrowing) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test","other.test"])"));
  RunOptions o = curl(get("origin.test") + "; read go; " + get("origin.test"));
  o.policy = policy(R"(["origin.test"])");  // strictly narrower: the child's own rules
  stockade::Run r = h.run(std::move(o));
  std::string first(3, '\0');
  ASSERT_EQ(::read(r.stdoutFd(), first.data(), 3), 3);
  EXPECT_EQ(first, "200");
  h.narrow(policy(R"(["other.test"])"));  // the session drops origin.test
  ASSERT_EQ(::write(r.stdinFd(), "go\n", 3), 3);
  EXPECT_EQ(r.collect().out, "403") << "a child's own rules never outlast a narrowing of the session";
}

TEST_F(ManagerNetworkTest, ProxyVariablesAreSetAndNoProxyIsEmpty) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy(R"(["origin.test"])"));
  auto out = h.run(curl("echo \"$HTTP_PROXY|$https_proxy|$ALL_PROXY|${NO_PROXY-unset}|${no_proxy-unset}\"")).collect();
  EXPECT_EQ(out.out, "http://127.0.0.1:3128|http://127.0.0.1:3128|socks5h://127.0.0.1:3128||\n");
}

TEST_F(ManagerNetworkTest, WithoutAllowedDomainsThereIsNoProxyAtAll) {
  SandboxHandle h = SandboxManager::instance().createSandbox(policy("[]"));
  auto out = h.run(curl("echo \"${HTTP_PROXY-unset}\"; " + get("origin.test"))).collect();
  EXPECT_EQ(out.out, "unset\n000");
}

}  // namespace
}  // namespace stockade
