// A running proxy with one listener on 127.0.0.1:0 for sandbox "sb-1",
// run "run-1", live rules that a test can swap (narrow) at any time, an
// audit log, and an origin server the names "files.test", "evil.test" and
// "other.test" resolve to via operator overrides.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "policy/domain.h"
#include "proxy/proxy.h"
#include "proxy_test_support.h"

namespace stockade::proxy::testing {

inline DerivedRules::Network makeRules(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  DerivedRules::Network n;
  for (const auto& a : allow) n.allowedDomains.push_back(std::get<DomainRule>(policy::parseDomainPattern(a)));
  for (const auto& d : deny) n.deniedDomains.push_back(std::get<DomainRule>(policy::parseDomainPattern(d)));
  return n;
}

class ProxyFixture : public ::testing::Test {
 protected:
  void SetUp() override { origin_ = std::make_unique<OriginServer>(); }
  void TearDown() override {
    handle_.close();
    proxy_.reset();
  }

  std::string files() const { return "files.test:" + std::to_string(origin_->port()); }
  std::string url(const std::string& path, const std::string& host = "files.test") const {
    return "http://" + host + ":" + std::to_string(origin_->port()) + path;
  }

  void start(const std::vector<std::string>& allow, const std::vector<std::string>& deny = {},
             ProxyLimits limits = {}, std::map<std::string, std::string> extraOverrides = {}) {
    proxy_ = std::make_unique<Proxy>(ProxyOptions{limits});
    proxy_->setAuditSink([this](const ProxyEvent& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    });
    setRules(allow, deny);
    std::map<std::string, std::string> overrides{
        {"files.test", "127.0.0.1"}, {"evil.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}};
    overrides.insert(extraOverrides.begin(), extraOverrides.end());
    auto fd = listenLoopback(port_);
    handle_ = proxy_->addListener(std::move(fd),
                                  ListenerContext{"sb-1", "run-1", [this] { return std::atomic_load(&rules_); },
                                                  overrides});
  }
  void setRules(const std::vector<std::string>& allow, const std::vector<std::string>& deny = {}) {
    std::atomic_store(&rules_, std::shared_ptr<const DerivedRules::Network>(
                                   std::make_shared<DerivedRules::Network>(makeRules(allow, deny))));
  }
  std::vector<ProxyEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::string httpProxy() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string socksProxy() const { return "socks5h://127.0.0.1:" + std::to_string(port_); }

  std::unique_ptr<OriginServer> origin_;
  std::unique_ptr<Proxy> proxy_;
  ListenerHandle handle_;
  std::uint16_t port_ = 0;
  std::shared_ptr<const DerivedRules::Network> rules_;
  std::mutex mu_;
  std::vector<ProxyEvent> events_;
};

enum class Via { kHttp, kConnect, kSocks5h };
inline const char* viaName(Via v) {
  return v == Via::kHttp ? "http" : v == Via::kConnect ? "connect" : "socks5h";
}

}  // namespace stockade::proxy::testing
