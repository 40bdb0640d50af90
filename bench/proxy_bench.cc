// The proxy's cost on loopback, measured in one run:
//   - throughput of a 100 MB download: direct, via absolute-form HTTP, via
//     CONNECT and via SOCKS5 (target: every proxied path >= 80% of direct);
//   - round trip of a small request on a kept-alive connection: direct and
//     via each protocol (target: < 0.25 ms added per request).
// The origin serves bytes from memory so that it is never the bottleneck.
// All traffic stays on 127.0.0.1; the proxy points "origin.bench" at it with
// a resolve override.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "policy/domain.h"
#include "proxy/proxy.h"

namespace {

using stockade::platform::UniqueFd;

UniqueFd listenLoopback(std::uint16_t& port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 128) != 0) std::abort();
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

UniqueFd connectTo(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
  return fd;
}

void sendAll(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) std::abort();
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string readHead(int fd) {
  std::string out;
  char c;
  while (!out.ends_with("\r\n\r\n")) {
    if (::recv(fd, &c, 1, 0) != 1) std::abort();
    out += c;
  }
  return out;
}

void readBody(int fd, std::size_t n) {
  static thread_local std::vector<char> buf(256 * 1024);
  while (n > 0) {
    ssize_t got = ::recv(fd, buf.data(), std::min(buf.size(), n), 0);
    if (got <= 0) std::abort();
    n -= static_cast<std::size_t>(got);
  }
}

// GET /N -> N bytes from memory, keep-alive. One thread per connection.
class Origin {
 public:
  Origin() : block_(1 << 20, 'x') {
    listener_ = listenLoopback(port_);
    thread_ = std::thread([this] {
      while (true) {
        int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~Origin() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    std::lock_guard lock(mu_);
    for (auto& w : workers_) w.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  void serve(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string buf;
    char tmp[4096];
    while (true) {
      std::size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        buf.append(tmp, static_cast<std::size_t>(n));
      }
      auto sp = buf.find(' ');
      std::size_t size = std::stoull(buf.substr(sp + 2));
      buf.erase(0, end + 4);
      std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL | (size ? MSG_MORE : 0));
      while (size > 0) {
        std::size_t n = std::min(size, block_.size());
        ssize_t sent = ::send(fd, block_.data(), n, MSG_NOSIGNAL);
        if (sent <= 0) {
          ::close(fd);
          return;
        }
        size -= static_cast<std::size_t>(sent);
      }
    }
  }
  std::string block_;
  UniqueFd listener_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

struct World {
  Origin origin;
  stockade::proxy::Proxy proxy;
  stockade::proxy::ListenerHandle handle;
  std::uint16_t proxyPort = 0;
  std::shared_ptr<const stockade::DerivedRules::Network> rules;

  World() {
    auto n = std::make_shared<stockade::DerivedRules::Network>();
    n->allowedDomains.push_back(std::get<stockade::DomainRule>(
        stockade::policy::parseDomainPattern("origin.bench:" + std::to_string(origin.port()))));
    rules = n;
    handle = proxy.addListener(listenLoopback(proxyPort),
                               stockade::proxy::ListenerContext{"bench", "run", [this] { return rules; },
                                                                {{"origin.bench", "127.0.0.1"}}});
  }
  std::string authority() const { return "origin.bench:" + std::to_string(origin.port()); }
};

World& world() {
  static World w;
  return w;
}

enum Path { kDirect, kHttp, kConnect, kSocks5 };

// A connection ready to carry origin-form (direct, CONNECT, SOCKS5) or
// absolute-form (HTTP) requests.
UniqueFd open(Path path) {
  World& w = world();
  if (path == kDirect) return connectTo(w.origin.port());
  UniqueFd fd = connectTo(w.proxyPort);
  if (path == kConnect) {
    sendAll(fd.get(), "CONNECT " + w.authority() + " HTTP/1.1\r\nHost: " + w.authority() + "\r\n\r\n");
    if (!readHead(fd.get()).starts_with("HTTP/1.1 200")) std::abort();
  } else if (path == kSocks5) {
    std::string req = std::string("\x05\x01\x00\x05\x01\x00\x03\x0c", 8) + "origin.bench" +
                      char(w.origin.port() >> 8) + char(w.origin.port() & 0xff);
    sendAll(fd.get(), req);
    char reply[12];
    std::size_t got = 0;
    while (got < sizeof reply) {
      ssize_t n = ::recv(fd.get(), reply + got, sizeof reply - got, 0);
      if (n <= 0) std::abort();
      got += static_cast<std::size_t>(n);
    }
    if (reply[3] != 0) std::abort();
  }
  return fd;
}

std::string request(Path path, std::size_t size) {
  World& w = world();
  std::string target = path == kHttp ? "http://" + w.authority() + "/" + std::to_string(size) : "/" + std::to_string(size);
  return "GET " + target + " HTTP/1.1\r\nHost: " + w.authority() + "\r\n\r\n";
}

void BM_Download100MB(benchmark::State& state) {
  auto path = static_cast<Path>(state.range(0));
  constexpr std::size_t kSize = 100u << 20;
  for (auto _ : state) {
    UniqueFd fd = open(path);
    sendAll(fd.get(), request(path, kSize));
    readHead(fd.get());
    readBody(fd.get(), kSize);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kSize));
}

void BM_SmallRequestRoundTrip(benchmark::State& state) {
  auto path = static_cast<Path>(state.range(0));
  UniqueFd fd = open(path);
  std::string req = request(path, 16);
  for (auto _ : state) {
    sendAll(fd.get(), req);
    readHead(fd.get());
    readBody(fd.get(), 16);
  }
}

void paths(benchmark::internal::Benchmark* b) {
  b->ArgNames({"path"});
  for (int p : {kDirect, kHttp, kConnect, kSocks5}) b->Arg(p);
}

}  // namespace

// path: 0 direct, 1 absolute-form HTTP, 2 CONNECT, 3 SOCKS5
BENCHMARK(BM_Download100MB)->Apply(paths)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_SmallRequestRoundTrip)->Apply(paths)->Unit(benchmark::kMicrosecond)->MinTime(1.0)->UseRealTime();

BENCHMARK_MAIN();
