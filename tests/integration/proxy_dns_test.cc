// Name lookups through the proxy's real resolver (getaddrinfo) against a DNS
// server of the test's own. Before any thread starts, the binary moves itself
// into new mount and network namespaces (and a user namespace when not root),
// binds a resolv.conf naming 127.0.0.1 and an nsswitch.conf using files and
// DNS only over the host's, and serves DNS on 127.0.0.1:53 there: no query
// leaves the namespace, and every name is under .test.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy_fixture.h"

namespace stockade::proxy::testing {
namespace {

std::string gNoPrivateNetwork;  // why the namespaces could not be made ("" when they were)

bool writeFile(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Binds a file holding `text` over `target`.
bool bindText(const std::string& text, const char* target) {
  char path[] = "/tmp/stockade-dns-test-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  ok = ok && ::mount(path, target, nullptr, MS_BIND, nullptr) == 0;
  ::unlink(path);  // the bind keeps the file
  return ok;
}

std::string enterPrivateNetwork() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  const int flags = CLONE_NEWNS | CLONE_NEWNET | (uid != 0 ? CLONE_NEWUSER : 0);
  if (::unshare(flags) != 0) return std::string("unshare: ") + std::strerror(errno);
  if (uid != 0 && !(writeFile("/proc/self/setgroups", "deny") &&
                    writeFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
                    writeFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")))
    return std::string("writing the id maps: ") + std::strerror(errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("mount(MS_PRIVATE): ") + std::strerror(errno);
  // glibc waits 30 s for an answer, so a held query is held, not retried.
  if (!bindText("nameserver 127.0.0.1\noptions timeout:30 attempts:1\n", "/etc/resolv.conf"))
    return std::string("binding /etc/resolv.conf: ") + std::strerror(errno);
  if (!bindText("hosts: files dns\n", "/etc/nsswitch.conf"))
    return std::string("binding /etc/nsswitch.conf: ") + std::strerror(errno);
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "lo");
  bool up = s >= 0 && ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags |= IFF_UP, ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
  if (s >= 0) ::close(s);
  if (!up) return std::string("bringing up lo: ") + std::strerror(errno);
  return "";
}

// A DNS server on 127.0.0.1:53 (UDP): A queries get 127.0.0.1, others an
// empty answer; queries for names under a held suffix are answered only
// once release() is called.
class DnsServer {
 public:
  explicit DnsServer(std::string heldSuffix) : held_(std::move(heldSuffix)) {
    fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{0, 50'000};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    bound_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    thread_ = std::thread([this] { serve(); });
  }
  ~DnsServer() {
    release();
    stop_ = true;
    thread_.join();
  }
  bool bound() const { return bound_; }
  // Waits (bounded) until `n` queries for held names arrived.
  bool waitForHeld(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return heldCount_ >= n; });
  }
  void release() {
    std::vector<Query> pending;
    {
      std::lock_guard lock(mu_);
      released_ = true;
      pending.swap(pending_);
    }
    for (const auto& q : pending) reply(q);
  }

 private:
  struct Query {
    std::string bytes;
    sockaddr_in from{};
    std::string name;
    std::uint16_t type = 0;
    std::size_t end = 0;  // of the question
  };
  void serve() {
    while (!stop_) {
      char buf[512];
      Query q;
      socklen_t len = sizeof q.from;
      ssize_t n = ::recvfrom(fd_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&q.from), &len);
      if (n < 12) continue;
      q.bytes.assign(buf, static_cast<std::size_t>(n));
      std::size_t i = 12;
      while (i < q.bytes.size() && q.bytes[i] != 0) {
        const std::size_t label = static_cast<unsigned char>(q.bytes[i]);
        if (!q.name.empty()) q.name += '.';
        q.name += q.bytes.substr(i + 1, label);
        i += label + 1;
      }
      if (i + 5 > q.bytes.size()) continue;
      q.type = static_cast<std::uint16_t>((static_cast<unsigned char>(q.bytes[i + 1]) << 8) |
                                          static_cast<unsigned char>(q.bytes[i + 2]));
      q.end = i + 5;
      if (q.name.ends_with(held_)) {
        std::lock_guard lock(mu_);
        ++heldCount_;
        cv_.notify_all();
        if (!released_) {
          pending_.push_back(std::move(q));
          continue;
        }
      }
      reply(q);
    }
  }
  void reply(const Query& q) {
    const bool a = q.type == 1;
    std::string out = q.bytes.substr(0, 2) + std::string("\x81\x80", 2) + std::string("\x00\x01", 2) +
                      std::string(a ? "\x00\x01" : "\x00\x00", 2) + std::string(4, '\0') +
                      q.bytes.substr(12, q.end - 12);
    if (a) out += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04\x7f\x00\x00\x01", 16);
    ::sendto(fd_.get(), out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&q.from), sizeof q.from);
  }

  std::string held_;
  platform::UniqueFd fd_;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Query> pending_;
  std::size_t heldCount_ = 0;
  bool released_ = false;
};

class ProxyDnsTest : public ProxyFixture {
 protected:
  void SetUp() override {
    if (!gNoPrivateNetwork.empty()) GTEST_SKIP() << "no private network and DNS for this test: " << gNoPrivateNetwork;
    ProxyFixture::SetUp();
  }
};

// Asio ran every lookup of the proxy on one thread, in order: a sandbox
// holding eight slow lookups held another sandbox's lookup behind all of
// them (past connectTimeout). Each sandbox now waits only behind its own.
TEST_F(ProxyDnsTest, ASandboxsSlowLookupsDoNotHoldAnotherSandboxsLookup) {
  DnsServer dns("slow.test");
  ASSERT_TRUE(dns.bound()) << "bind(127.0.0.1:53): " << std::strerror(errno);
  ProxyLimits limits;
  limits.connectTimeout = std::chrono::seconds(8);
  start({"*.slow.test"}, {}, limits);
  std::uint16_t otherPort = 0;
  auto fd = listenLoopback(otherPort);
  auto other = proxy_->addListener(std::move(fd), ListenerContext{"sb-2", "run-2", [] {
                                     return std::make_shared<const DerivedRules::Network>(makeRules({"fast.test"}, {}));
                                   }});
  std::vector<platform::UniqueFd> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(connectLoopback(port_));
    sendAll(slow.back().get(), "CONNECT n" + std::to_string(i) + ".slow.test:80 HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_TRUE(dns.waitForHeld(1)) << "no slow lookup reached the DNS server";
  // While sandbox sb-1's lookups are held: sb-2's name resolves (to
  // 127.0.0.1, which the policy then refuses: the answer is the point).
  auto fast = connectLoopback(otherPort);
  sendAll(fast.get(), "CONNECT fast.test:80 HTTP/1.1\r\nHost: fast.test\r\n\r\n");
  const std::string reply = readHead(fast.get());
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << "sb-2's lookup waited behind sb-1's: " << reply;
  dns.release();
  // The held sandbox is answered too, once its names resolve.
  for (auto& s : slow) EXPECT_TRUE(readHead(s.get()).starts_with("HTTP/1.1 403"));
}

}  // namespace
}  // namespace stockade::proxy::testing

int main(int argc, char** argv) {
  stockade::proxy::testing::gNoPrivateNetwork = stockade::proxy::testing::enterPrivateNetwork();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
