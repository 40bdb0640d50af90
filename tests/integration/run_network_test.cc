// `stockade run` with network: the child reaches only the proxy on its own
// loopback; real curl, a real origin on 127.0.0.1, names via --resolve.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "proxy_test_support.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

class RunNetworkTest : public ::testing::Test {
 protected:
  testing::ProcessResult run(const std::string& script, const std::string& allowed = R"(["origin.test"])") {
    std::string policy = t_.file("policy.json", R"({"network":{"allowedDomains":)" + allowed + R"(},"env":{"allow":["PATH"]}})");
    return testing::runProcess({testing::stockadeBinary(), "run", "--policy", policy, "--cwd", t_.path(), "--resolve",
                                "origin.test=127.0.0.1", "--resolve", "denied.test=127.0.0.1", "--audit", audit_,
                                "--", "/bin/sh", "-c", script});
  }
  std::string url(const std::string& host, const std::string& path = "/") {
    return "http://" + host + ":" + std::to_string(origin_.port()) + path;
  }
  std::vector<nlohmann::json> auditEvents() {
    std::ifstream in(audit_);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  proxy::testing::OriginServer origin_;
  testing::TempDir t_;
  testing::TempDir logs_;  // outside the writable cwd: stockade refuses an audit log inside a writable tree
  std::string audit_ = logs_ / "audit.jsonl";
};

TEST_F(RunNetworkTest, AllowedNameThroughHttpProxyAndSocks5hDeliversTheBody) {
  auto r = run("curl -sS " + url("origin.test", "/hello") + "; curl -sS --proxy \"$ALL_PROXY\" " +
               url("origin.test", "/hello"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "hello\nhello\n") << r.err;
}

TEST_F(RunNetworkTest, DeniedNameGets403AndBothDecisionsAreAudited) {
  auto r = run("curl -s -o /dev/null -w '%{http_code}' " + url("denied.test"));
  EXPECT_EQ(r.out, "403");
  bool denied = false;
  for (const auto& e : auditEvents())
    denied = denied || (e["event"] == "proxy" && e["host"] == "denied.test" && e["verdict"] == "denied");
  EXPECT_TRUE(denied) << "the proxy's decision is in the --audit log";
}

TEST_F(RunNetworkTest, AnAllowedNameThatResolvesToADeniedAddressGets403) {
  std::string port = std::to_string(origin_.port());
  std::string otherPort = std::to_string(origin_.port() == 65535 ? 1 : origin_.port() + 1);
  // origin.test is allowed, and --resolve points it at 127.0.0.1, which is denied on this port.
  auto r = run("curl -s -o /dev/null -w '%{http_code}' " + url("origin.test"),
               R"(["origin.test"],"deniedDomains":["127.0.0.1:)" + port + R"("])");
  EXPECT_EQ(r.out, "403") << r.err;
  bool named = false;
  for (const auto& e : auditEvents())
    named = named || (e["event"] == "proxy" && e["verdict"] == "denied" &&
                      e["rule"].get<std::string>().find("127.0.0.1 is denied") != std::string::npos);
  EXPECT_TRUE(named) << "the audit event names the denied address";
  // The same address denied on another port does not touch this one.
  auto ok = run("curl -sS " + url("origin.test", "/hello"), R"(["origin.test"],"deniedDomains":["127.0.0.1:)" +
                                                                otherPort + R"("])");
  EXPECT_EQ(ok.out, "hello\n") << ok.err;
}

TEST_F(RunNetworkTest, DirectTcpAndUdpToTheHostLoopbackFail) {
  // A UDP socket on the host's loopback that the child tries to reach.
  platform::UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(udp.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(udp.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string udpPort = std::to_string(ntohs(addr.sin_port));

  auto r = run("curl -s --noproxy '*' -m 5 http://127.0.0.1:" + std::to_string(origin_.port()) +
               "/ >/dev/null; echo tcp=$?; /usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET, "
               "socket.SOCK_DGRAM); print(\"udp-sent\", s.sendto(b\"leak\", (\"127.0.0.1\", " + udpPort + ")))'");
  EXPECT_NE(r.out.find("tcp=7"), std::string::npos) << "connection refused inside the sandbox's own netns: " << r.out;
  EXPECT_NE(r.out.find("udp-sent 4"), std::string::npos) << "the datagram left the child: " << r.out << r.err;
  pollfd pfd{udp.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 500), 0) << "a datagram sent inside the sandbox must never reach the host's loopback";
  // The allowed neighbour: the same port through the proxy works.
  auto ok = run("curl -s -o /dev/null -w '%{http_code}' " + url("origin.test"));
  EXPECT_EQ(ok.out, "200");
}

// A child that holds more silent connections to its proxy listener than
// ProxyLimits.maxPendingPerListener (64 by default) gets the proxy's refusal
// for the next request, audited; once it lets them go it is served again.
TEST_F(RunNetworkTest, AChildHoldingTooManyIdleProxyConnectionsIsRefusedNamingTheLimit) {
  std::string script = R"(
    for fd in $(seq 10 73); do eval "exec $fd<>/dev/tcp/127.0.0.1/3128" || exit 3; done
    curl -s -D - -o /dev/null )" + url("origin.test", "/hello") + R"( | tr -d '\r' | grep -E '^(HTTP/|X-Proxy-Error)'
    for fd in $(seq 10 73); do eval "exec $fd>&-"; done
    for try in $(seq 1 50); do
      out=$(curl -s )" + url("origin.test", "/hello") + R"() && [ "$out" = hello ] && { echo "served: $out"; exit 0; }
      sleep 0.1
    done
    exit 4)";
  auto r = run("exec /bin/bash " + t_.file("flood.sh", script));
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "HTTP/1.1 503 Service Unavailable\nX-Proxy-Error: pending-limit\nserved: hello\n") << r.err;
  bool audited = false;
  for (const auto& e : auditEvents())
    audited = audited || (e["event"] == "proxy" && e["verdict"] == "refused" &&
                          e["rule"].get<std::string>().find("ProxyLimits.maxPendingPerListener") != std::string::npos);
  EXPECT_TRUE(audited) << "the refusal is in the --audit log";
}

TEST_F(RunNetworkTest, EnvCannotOverrideTheProxyVariables) {
  std::string policy = t_.file("p.json", R"({"network":{"allowedDomains":["origin.test"]}})");
  auto r = testing::runProcess({testing::stockadeBinary(), "run", "--policy", policy, "--cwd", t_.path(), "--env",
                                "HTTPS_PROXY=http://evil:1", "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_NE(r.err.find("HTTPS_PROXY"), std::string::npos) << r.err;
  auto shown = run("echo \"$HTTP_PROXY $ALL_PROXY\"");
  EXPECT_EQ(shown.out, "http://127.0.0.1:3128 socks5h://127.0.0.1:3128\n");
}

// sandbox-runtime's "*:port" in deniedDomains: every host on that port is
// denied, even an allowed one; the same host on another deny's port is not.
TEST_F(RunNetworkTest, ADenyOfEveryHostOnAPortWinsOverAnAllowedName) {
  auto withDeny = [&](const std::string& deny) {
    std::string policy = t_.file("deny.json", R"({"network":{"allowedDomains":["origin.test"],"deniedDomains":[")" +
                                                  deny + R"("]},"env":{"allow":["PATH"]}})");
    return testing::runProcess({testing::stockadeBinary(), "run", "--policy", policy, "--cwd", t_.path(), "--resolve",
                                "origin.test=127.0.0.1", "--", "/bin/sh", "-c",
                                "curl -s -o /dev/null -w '%{http_code}' " + url("origin.test")});
  };
  auto denied = withDeny("*:" + std::to_string(origin_.port()));
  EXPECT_EQ(denied.out, "403") << denied.err;
  auto everyHost = withDeny("*");
  EXPECT_EQ(everyHost.out, "403") << everyHost.err;
  auto otherPort = withDeny(origin_.port() == 1 ? "*:2" : "*:1");
  EXPECT_EQ(otherPort.out, "200") << otherPort.err;
}

TEST_F(RunNetworkTest, NoAllowedDomainsMeansNoProxyAndNoNetwork) {
  auto r = run("echo \"${HTTP_PROXY-unset}\"; curl -s -m 5 -o /dev/null -w '%{http_code}' " + url("origin.test"), "[]");
  EXPECT_EQ(r.out, "unset\n000");
}

}  // namespace
}  // namespace stockade
