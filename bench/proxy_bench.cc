// The proxy's cost on loopback, measured in one run:
//   - throughput of a 100 MB download: direct, via absolute-form HTTP, via
//     CONNECT and via SOCKS5 (target: every proxied path >= 80% of direct);
//   - round trip of a small request on a kept-alive connection: direct and
//     via each protocol (target: < 0.25 ms added per request).
//   - with --tunnels=N, instead: N tunnels at once, none stalled (issue 15;
//     see tunnelsMain()).
// The origin serves bytes from memory so that it is never the bottleneck.
// All traffic stays on 127.0.0.1; the proxy points "origin.bench" at it with
// a resolve override.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <iterator>
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

// CPU time of the origin's worker threads, live and exited, so that the
// benchmark can say what each party spent (see usageNow()).
class OriginCpu {
 public:
  struct Slot {
    clockid_t clock{};
    std::atomic<bool> done{false};
    double finalNs = 0;
  };
  static OriginCpu& get() {
    static OriginCpu c;
    return c;
  }
  // Called by a worker thread when it starts; finish() when it ends.
  std::shared_ptr<Slot> enter() {
    auto slot = std::make_shared<Slot>();
    ::pthread_getcpuclockid(::pthread_self(), &slot->clock);
    std::lock_guard lock(mu_);
    slots_.push_back(slot);
    return slot;
  }
  static void finish(Slot& slot) {
    slot.finalNs = threadNs(CLOCK_THREAD_CPUTIME_ID);
    slot.done = true;
  }
  double totalNs() {
    std::lock_guard lock(mu_);
    double sum = 0;
    for (const auto& s : slots_) {
      if (!s->done) {
        timespec ts{};
        if (::clock_gettime(s->clock, &ts) == 0) {
          sum += static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
          continue;
        }
        while (!s->done) std::this_thread::yield();  // exited between the two reads
      }
      sum += s->finalNs;
    }
    return sum;
  }
  static double threadNs(clockid_t clock) {
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Slot>> slots_;
};

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
        workers_.emplace_back([this, fd] {
          auto slot = OriginCpu::get().enter();
          serve(fd);
          OriginCpu::finish(*slot);
        });
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


// The upper bound for any relay on this machine: a minimal transparent relay
// with no protocol, no event loop and no bookkeeping -- per connection, one
// blocking thread per direction moving bytes socket -> pipe -> socket with
// splice(2), as the proxy's tunnels do. Whatever it loses against direct is
// the cost of a third party and a second TCP connection, not of the proxy.
class SpliceRelay {
 public:
  explicit SpliceRelay(std::uint16_t origin) : origin_(origin) {
    listener_ = listenLoopback(port_);
    thread_ = std::thread([this] {
      while (true) {
        int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        auto pair = std::make_shared<std::pair<UniqueFd, UniqueFd>>(UniqueFd(fd), connectTo(origin_));
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::lock_guard lock(mu_);
        workers_.emplace_back([pair] { relay(pair->first.get(), pair->second.get()); });
        workers_.emplace_back([pair] { relay(pair->second.get(), pair->first.get()); });
      }
    });
  }
  ~SpliceRelay() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    std::lock_guard lock(mu_);
    for (auto& w : workers_) w.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  static void relay(int from, int to) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) std::abort();
    UniqueFd r(p[0]), w(p[1]);
    ::fcntl(w.get(), F_SETPIPE_SZ, 1 << 20);
    while (true) {
      ssize_t n = ::splice(from, nullptr, w.get(), nullptr, 1 << 20, SPLICE_F_MOVE);
      if (n <= 0) break;
      while (n > 0) {
        ssize_t m = ::splice(r.get(), nullptr, to, nullptr, static_cast<std::size_t>(n), SPLICE_F_MOVE);
        if (m <= 0) return;
        n -= m;
      }
    }
    ::shutdown(to, SHUT_WR);
  }
  std::uint16_t origin_;
  UniqueFd listener_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

struct World {
  Origin origin;
  SpliceRelay relay{origin.port()};
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

enum Path { kDirect, kHttp, kConnect, kSocks5, kRelay };

// A connection ready to carry origin-form (direct, CONNECT, SOCKS5) or
// absolute-form (HTTP) requests.
UniqueFd open(Path path) {
  World& w = world();
  if (path == kDirect) return connectTo(w.origin.port());
  if (path == kRelay) return connectTo(w.relay.port());
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


// CPU time of each party and context switches, for the whole process:
// the client is the benchmark's own thread, the origin its worker threads
// (OriginCpu), and the relay everything else -- the proxy's io thread, or the
// minimal relay's threads. The parties share the machine's cores, so these
// say who spends what per download.
struct Usage {
  double clientNs = 0, originNs = 0, relayNs = 0, switches = 0;
};

Usage usageNow() {
  Usage u;
  u.clientNs = OriginCpu::threadNs(CLOCK_THREAD_CPUTIME_ID);
  u.originNs = OriginCpu::get().totalNs();
  u.relayNs = OriginCpu::threadNs(CLOCK_PROCESS_CPUTIME_ID) - u.clientNs - u.originNs;
  rusage r{};
  ::getrusage(RUSAGE_SELF, &r);
  u.switches = static_cast<double>(r.ru_nvcsw + r.ru_nivcsw);
  return u;
}

void reportUsage(benchmark::State& state, const Usage& before, const Usage& after) {
  double n = static_cast<double>(state.iterations());
  state.counters["client_ms"] = (after.clientNs - before.clientNs) / n / 1e6;
  state.counters["origin_ms"] = (after.originNs - before.originNs) / n / 1e6;
  state.counters["relay_ms"] = (after.relayNs - before.relayNs) / n / 1e6;
  state.counters["switches"] = (after.switches - before.switches) / n;
}

constexpr std::size_t kDownloadBytes = 100u << 20;
constexpr Path kAllPaths[] = {kDirect, kRelay, kHttp, kConnect, kSocks5};

void download(Path path, std::size_t bytes = kDownloadBytes) {
  UniqueFd fd = open(path);
  sendAll(fd.get(), request(path, bytes));
  readHead(fd.get());
  readBody(fd.get(), bytes);
}

void BM_Download100MB(benchmark::State& state) {
  auto path = static_cast<Path>(state.range(0));
  constexpr std::size_t kSize = kDownloadBytes;
  world();
  Usage before = usageNow();
  for (auto _ : state) download(path);
  reportUsage(state, before, usageNow());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kSize));
}

// Each share of direct from one round: direct's time over the path's time,
// per download size (pairedShares() is the 100 MB one the summary prints).
std::map<std::size_t, std::map<int, std::vector<double>>>& pairedSharesBySize() {
  static std::map<std::size_t, std::map<int, std::vector<double>>> shares;
  return shares;
}
std::map<int, std::vector<double>>& pairedShares() { return pairedSharesBySize()[kDownloadBytes]; }

// One round downloads 100 MB over every path back to back, starting at a
// different path each round; each path's share of direct comes from the
// same round, so load that comes and goes on a shared machine falls on both
// sides of each ratio alike.
void pairedRounds(benchmark::State& state, std::size_t bytes) {
  world();
  std::size_t round = 0;
  for (auto _ : state) {
    std::map<int, double> seconds;
    for (std::size_t i = 0; i < std::size(kAllPaths); ++i) {
      Path path = kAllPaths[(round + i) % std::size(kAllPaths)];
      auto start = std::chrono::steady_clock::now();
      download(path, bytes);
      seconds[path] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (auto [path, s] : seconds) pairedSharesBySize()[bytes][path].push_back(seconds[kDirect] / s);
    ++round;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes * std::size(kAllPaths)));
}
void BM_Download100MBPaired(benchmark::State& state) { pairedRounds(state, kDownloadBytes); }
// The same with 1 MB downloads: connection setup and the proxy's decision
// weigh more than the copy.
void BM_Download1MBPaired(benchmark::State& state) { pairedRounds(state, 1u << 20); }

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
  for (Path p : kAllPaths) b->Arg(p);
}

const char* pathName(int path) {
  switch (path) {
    case kDirect: return "direct";
    case kRelay: return "minimal splice relay";
    case kHttp: return "absolute-form HTTP";
    case kConnect: return "CONNECT";
    case kSocks5: return "SOCKS5";
  }
  return "?";
}

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

// "57%" of a baseline, or "-" when the baseline was not run (filtered out).
std::string percent(double value, double baseline) {
  return baseline > 0 ? std::to_string(static_cast<int>(std::lround(100 * value / baseline))) + "%" : "-";
}

// The console report, then a summary: each path's median over the
// repetitions with its range, as a share of direct throughput (and of the
// minimal relay's) or as the time it adds to the direct round trip -- both
// baselines measured in this same run.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      std::string name = r.benchmark_name();
      auto at = name.find("path:");
      if (at == std::string::npos) continue;
      int path = name[at + 5] - '0';
      if (name.starts_with("BM_Download100MB")) {
        Download& d = downloads_[path];
        d.gibps.push_back(r.counters.at("bytes_per_second").value / (1 << 30));
        for (const char* c : {"client_ms", "origin_ms", "relay_ms", "switches"}) d.usage[c].push_back(r.counters.at(c).value);
      } else {
        roundTrips_[path].push_back(r.GetAdjustedRealTime());
      }
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::FILE* out = stdout;
    if (!downloads_.empty()) {
      std::size_t reps = downloads_.begin()->second.gibps.size();
      long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
      std::fprintf(out, "\n100 MB download: median of %zu runs [min-max]; CPU ms per download (medians)\n", reps);
      std::fprintf(out, "  %-21s %-22s %9s %9s   %7s %7s %7s %9s %10s\n", "path", "GiB/s", "of direct", "of relay",
                   "client", "origin", "relay", "switches", "CPU bound");
      auto medianOf = [&](int path) {
        auto it = downloads_.find(path);
        return it == downloads_.end() ? 0.0 : spread(it->second.gibps).median;
      };
      double direct = medianOf(kDirect), relay = medianOf(kRelay);  // 0: not run (filtered out)
      for (auto& [path, d] : downloads_) {
        Spread g = spread(d.gibps);
        double client = spread(d.usage["client_ms"]).median, origin = spread(d.usage["origin_ms"]).median,
               relayCpu = spread(d.usage["relay_ms"]).median;
        // The most this path could reach even if every core were busy all
        // the time: its CPU per download spread over all cores, against
        // direct's wall time per download.
        double directMs = direct > 0 ? 100.0 / 1024 / direct * 1000 : 0;
        double fastestMs = (client + origin + relayCpu) / static_cast<double>(cores);
        std::fprintf(out, "  %-21s %5.2f [%5.2f-%5.2f]     %9s %9s   %7.1f %7.1f %7.1f %9.0f %10s\n", pathName(path),
                     g.median, g.min, g.max, percent(g.median, direct).c_str(), percent(g.median, relay).c_str(), client,
                     origin, relayCpu, spread(d.usage["switches"]).median,
                     percent(directMs > 0 ? 1 / fastestMs : 0, directMs > 0 ? 1 / directMs : 0).c_str());
      }
      std::fprintf(out,
                   "  (CPU bound: the share of direct a path could reach at most if all %ld cores were busy all the time)\n",
                   cores);
    }
    if (!pairedShares().empty()) {
      std::size_t rounds = pairedShares().begin()->second.size();
      std::fprintf(out,
                   "\n100 MB download, paired: every path in each round, back to back; share of direct within a round,\n"
                   "median [25th-75th percentile] of %zu rounds\n",
                   rounds);
      for (auto& [path, v] : pairedShares()) {
        std::vector<double> sorted = v;
        std::sort(sorted.begin(), sorted.end());
        auto at = [&](double q) { return 100 * sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))]; };
        std::fprintf(out, "  %-21s %4.0f%% [%3.0f%%-%3.0f%%]\n", pathName(path), 100 * spread(v).median, at(0.25), at(0.75));
      }
    }
    if (!roundTrips_.empty()) {
      std::fprintf(out, "\nsmall request round trip on a kept-alive connection: median [min-max]\n");
      std::fprintf(out, "  %-21s %-24s %s\n", "path", "us", "added to direct");
      auto it = roundTrips_.find(kDirect);
      double direct = it == roundTrips_.end() ? 0.0 : spread(it->second).median;
      for (auto& [path, v] : roundTrips_) {
        Spread t = spread(v);
        std::string added = direct > 0 ? std::to_string(static_cast<int>(std::lround(t.median - direct))) + " us" : "-";
        if (direct > 0 && t.median >= direct) added.insert(0, "+");
        std::fprintf(out, "  %-21s %6.1f [%6.1f-%6.1f]    %8s\n", pathName(path), t.median, t.min, t.max, added.c_str());
      }
    }
    std::fflush(out);
    if (!jsonPath_.empty()) writeJson();
  }
  // --stockade_json=FILE: the paired shares (per size, per path, every round)
  // and the small-request round trips (per path, every repetition), for bench/compare.
  void setJsonPath(std::string path) { jsonPath_ = std::move(path); }

 private:
  void writeJson() const {
    std::FILE* f = std::fopen(jsonPath_.c_str(), "w");
    if (!f) return;
    auto list = [&](const std::vector<double>& v) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    };
    std::fprintf(f, "{\"paired_share_of_direct\": {");
    bool firstSize = true;
    for (const auto& [bytes, byPath] : pairedSharesBySize()) {
      std::fprintf(f, "%s\"%zu\": {", firstSize ? "" : ", ", bytes);
      bool first = true;
      for (const auto& [path, v] : byPath) {
        std::fprintf(f, "%s\"%s\": %s", first ? "" : ", ", pathName(path), list(v).c_str());
        first = false;
      }
      std::fprintf(f, "}");
      firstSize = false;
    }
    std::fprintf(f, "}, \"small_request_us\": {");
    bool first = true;
    for (const auto& [path, v] : roundTrips_) {
      std::fprintf(f, "%s\"%s\": %s", first ? "" : ", ", pathName(path), list(v).c_str());
      first = false;
    }
    std::fprintf(f, "}}\n");
    std::fclose(f);
  }
  std::string jsonPath_;

  struct Download {
    std::vector<double> gibps;
    std::map<std::string, std::vector<double>> usage;
  };
  std::map<int, Download> downloads_;
  std::map<int, std::vector<double>> roundTrips_;
};


// --tunnels=N: N tunnels through the proxy at once (half CONNECT, half
// SOCKS5) to an echo server, each carrying --tunnel_bytes each way at the same
// time, beside the same N connections made directly to the echo server, in
// alternating rounds (--tunnel_rounds). Per round: the time until every
// connection had all its bytes back, the slowest and the median connection's
// time, the most pipe descriptors open at once in this process (the proxy's
// splice pipes: the benchmark itself opens none), and the connections that
// stalled (no byte moved on any of them for 10 s) or broke. Not google
// benchmark: one exchange is seconds long.
class EchoServer {
 public:
  EchoServer() {
    listener_ = listenLoopback(port_);
    ::listen(listener_.get(), 4096);
    ::fcntl(listener_.get(), F_SETFL, O_NONBLOCK);
    epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
    int stop[2];
    if (::pipe2(stop, O_CLOEXEC) != 0) std::abort();
    stopRead_ = UniqueFd(stop[0]);
    stopWrite_ = UniqueFd(stop[1]);
    add(listener_.get(), EPOLLIN);
    add(stopRead_.get(), EPOLLIN);
    thread_ = std::thread([this] { loop(); });
  }
  ~EchoServer() {
    ::write(stopWrite_.get(), "x", 1);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  struct Conn {
    UniqueFd fd;
    std::string pending;  // read, not yet echoed
  };
  void add(int fd, std::uint32_t events) {
    epoll_event e{events, {.fd = fd}};
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &e);
  }
  void loop() {
    std::vector<char> buf(64 * 1024);
    std::vector<epoll_event> events(256);
    for (;;) {
      int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), -1);
      for (int k = 0; k < n; ++k) {
        int fd = events[k].data.fd;
        if (fd == stopRead_.get()) return;
        if (fd == listener_.get()) {
          for (int c; (c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
            conns_[c].fd = UniqueFd(c);
            add(c, EPOLLIN);
          }
          continue;
        }
        Conn& c = conns_[fd];
        bool closed = false;
        if (c.pending.empty()) {
          ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
          if (r > 0) c.pending.assign(buf.data(), static_cast<std::size_t>(r));
          else closed = r == 0 || (errno != EAGAIN && errno != EINTR);
        }
        while (!closed && !c.pending.empty()) {
          ssize_t w = ::send(fd, c.pending.data(), c.pending.size(), MSG_NOSIGNAL);
          if (w > 0) c.pending.erase(0, static_cast<std::size_t>(w));
          else if (errno == EAGAIN) break;
          else closed = true;
        }
        if (closed) {
          ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
          conns_.erase(fd);
          continue;
        }
        // Full: wait until it drains, reading nothing more meanwhile.
        epoll_event e{c.pending.empty() ? EPOLLIN : EPOLLOUT, {.fd = fd}};
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &e);
      }
    }
  }
  UniqueFd listener_, epoll_, stopRead_, stopWrite_;
  std::uint16_t port_ = 0;
  std::map<int, Conn> conns_;
  std::thread thread_;
};

std::size_t openPipeFds() {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.native().starts_with("pipe:")) ++n;
  }
  return n;
}

struct Exchange {
  double totalMs = 0, slowestMs = 0, medianMs = 0;
  std::size_t maxPipeFds = 0, stalled = 0, broken = 0;
};

// Every connection sends `bytes` and reads them back, all at once.
Exchange exchangeOnAll(std::vector<UniqueFd>& fds, std::size_t bytes, std::size_t pipesBefore) {
  struct Flow {
    std::size_t sent = 0, received = 0;
    double doneMs = -1;
    bool broken = false;
  };
  std::vector<Flow> flows(fds.size());
  std::vector<char> chunk(64 * 1024, 'x');
  for (auto& fd : fds) ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  Exchange out;
  const auto start = std::chrono::steady_clock::now();
  auto lastProgress = start;
  auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  std::size_t done = 0;
  for (std::size_t round = 0; done < fds.size(); ++round) {
    if (round % 16 == 0) {  // sampled: reading 4,000 fd links is not free
      const std::size_t open = openPipeFds();
      out.maxPipeFds = std::max(out.maxPipeFds, open - std::min(open, pipesBefore));
    }
    std::vector<pollfd> pfds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (flows[i].doneMs >= 0 || flows[i].broken) continue;
      pfds.push_back({fds[i].get(), static_cast<short>(POLLIN | (flows[i].sent < bytes ? POLLOUT : 0)), 0});
      which.push_back(i);
    }
    int ready = ::poll(pfds.data(), pfds.size(), 200);
    bool progressed = false;
    for (std::size_t k = 0; k < pfds.size() && ready > 0; ++k) {
      Flow& f = flows[which[k]];
      if ((pfds[k].revents & POLLOUT) && f.sent < bytes) {
        ssize_t w = ::send(pfds[k].fd, chunk.data(), std::min(chunk.size(), bytes - f.sent), MSG_NOSIGNAL);
        if (w > 0) f.sent += static_cast<std::size_t>(w), progressed = true;
      }
      if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = ::recv(pfds[k].fd, chunk.data(), std::min(chunk.size(), bytes - f.received), 0);
        if (r > 0) {
          f.received += static_cast<std::size_t>(r);
          progressed = true;
          if (f.received == bytes) f.doneMs = ms(), ++done;
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          f.broken = true;
          ++done;
        }
      }
    }
    if (progressed) {
      lastProgress = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - lastProgress > std::chrono::seconds(10)) {
      break;
    }
  }
  out.totalMs = ms();
  std::vector<double> times;
  for (const Flow& f : flows) {
    if (f.broken) ++out.broken;
    else if (f.doneMs < 0) ++out.stalled;
    else times.push_back(f.doneMs);
  }
  std::sort(times.begin(), times.end());
  if (!times.empty()) out.slowestMs = times.back(), out.medianMs = times[times.size() / 2];
  return out;
}

std::string loadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  char a[16] = "?", b[16] = "?", c[16] = "?";
  if (f) {
    if (std::fscanf(f, "%15s %15s %15s", a, b, c) != 3) a[0] = '?';
    std::fclose(f);
  }
  return std::string(a) + " " + b + " " + c;
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "proxy_bench: %s\n", why.c_str());
  std::exit(1);
}

int tunnelsMain(std::size_t tunnels, std::size_t bytes, int rounds, const std::string& jsonPath) {
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &nofile);
  if (nofile.rlim_cur < 4 * tunnels + 64) {
    std::fprintf(stderr, "proxy_bench: --tunnels=%zu needs %zu descriptors, RLIMIT_NOFILE allows %llu\n", tunnels,
                 4 * tunnels + 64, static_cast<unsigned long long>(nofile.rlim_cur));
    return 1;
  }
  std::printf("load average before: %s\n", loadAverage().c_str());
  EchoServer echo;
  stockade::proxy::ProxyLimits limits;
  limits.maxConnectionsPerSandbox = limits.maxPendingPerListener = limits.maxTunnelsPerSandbox = tunnels;
  stockade::proxy::Proxy proxy(stockade::proxy::ProxyOptions{limits});
  const std::string target = "echo.bench:" + std::to_string(echo.port());
  auto network = std::make_shared<stockade::DerivedRules::Network>();
  network->allowedDomains.push_back(std::get<stockade::DomainRule>(stockade::policy::parseDomainPattern(target)));
  std::shared_ptr<const stockade::DerivedRules::Network> rules = network;
  std::uint16_t proxyPort = 0;
  UniqueFd listening = listenLoopback(proxyPort);
  ::listen(listening.get(), 4096);
  auto handle = proxy.addListener(std::move(listening), stockade::proxy::ListenerContext{
                                                            "bench", "tunnels", [&] { return rules; },
                                                            {{"echo.bench", "127.0.0.1"}}});
  auto openAll = [&](bool viaProxy) {
    std::vector<UniqueFd> fds;
    for (std::size_t i = 0; i < tunnels; ++i) {
      fds.push_back(connectTo(viaProxy ? proxyPort : echo.port()));
      if (!viaProxy) continue;
      if (i % 2 == 0)
        sendAll(fds.back().get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
      else
        sendAll(fds.back().get(), std::string("\x05\x01\x00\x05\x01\x00\x03\x0a", 8) + "echo.bench" +
                                      char(echo.port() >> 8) + char(echo.port() & 0xff));
    }
    for (std::size_t i = 0; viaProxy && i < tunnels; ++i) {
      if (i % 2 == 0) {
        std::string head = readHead(fds[i].get());
        if (!head.starts_with("HTTP/1.1 200")) fail("tunnel " + std::to_string(i) + ": CONNECT answered " + head);
      } else {
        char reply[12];
        for (std::size_t got = 0; got < sizeof reply;) {
          ssize_t n = ::recv(fds[i].get(), reply + got, sizeof reply - got, 0);
          if (n <= 0) fail("tunnel " + std::to_string(i) + ": SOCKS5 closed during the handshake");
          got += static_cast<std::size_t>(n);
        }
        if (reply[3] != 0) fail("tunnel " + std::to_string(i) + ": SOCKS5 reply " + std::to_string(reply[3]));
      }
    }
    return fds;
  };
  std::map<std::string, std::vector<Exchange>> results;
  for (int round = 0; round < rounds; ++round) {
    for (bool viaProxy : round % 2 ? std::vector<bool>{true, false} : std::vector<bool>{false, true}) {
      const std::size_t pipesBefore = openPipeFds();
      auto fds = openAll(viaProxy);
      results[viaProxy ? "proxy" : "direct"].push_back(exchangeOnAll(fds, bytes, pipesBefore));
      fds.clear();
      for (int i = 0; i < 500 && proxy.activeConnections("bench") > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  const std::string loadAfter = loadAverage();
  std::printf("%zu connections at once, %zu KiB each way on every one, %d alternating rounds (ms)\n", tunnels,
              bytes >> 10, rounds);
  std::printf("  %-8s %10s %10s %10s %9s %8s %7s\n", "", "all done", "slowest", "median", "pipe fds", "stalled", "broken");
  for (auto& [path, list] : results)
    for (const Exchange& e : list)
      std::printf("  %-8s %10.1f %10.1f %10.1f %9zu %8zu %7zu\n", path.c_str(), e.totalMs, e.slowestMs, e.medianMs,
                  e.maxPipeFds, e.stalled, e.broken);
  std::printf("load average after: %s\n", loadAfter.c_str());
  if (!jsonPath.empty()) {
    std::FILE* f = std::fopen(jsonPath.c_str(), "w");
    if (!f) return 1;
    std::fprintf(f, "{\"tunnels\": %zu, \"bytes_each_way\": %zu, \"rounds\": %d, \"load_after\": \"%s\"", tunnels, bytes,
                 rounds, loadAfter.c_str());
    for (auto& [path, list] : results) {
      std::fprintf(f, ", \"%s\": [", path.c_str());
      for (std::size_t i = 0; i < list.size(); ++i)
        std::fprintf(f, "%s{\"all_done_ms\": %.3f, \"slowest_ms\": %.3f, \"median_ms\": %.3f, \"pipe_fds\": %zu, "
                        "\"stalled\": %zu, \"broken\": %zu}",
                     i ? ", " : "", list[i].totalMs, list[i].slowestMs, list[i].medianMs, list[i].maxPipeFds,
                     list[i].stalled, list[i].broken);
      std::fprintf(f, "]");
    }
    std::fprintf(f, "}\n");
    std::fclose(f);
  }
  for (auto& [path, list] : results)
    for (const Exchange& e : list)
      if (e.stalled || e.broken) return 2;
  return 0;
}

}  // namespace

// path: 0 direct, 1 absolute-form HTTP, 2 CONNECT, 3 SOCKS5, 4 minimal splice relay
BENCHMARK(BM_Download100MB)->Apply(paths)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_Download100MBPaired)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_Download1MBPaired)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_SmallRequestRoundTrip)->Apply(paths)->Unit(benchmark::kMicrosecond)->MinTime(0.5)->UseRealTime();

// Unless told otherwise, five repetitions in random order, so that a burst
// of load elsewhere on the machine falls on every path alike.
int main(int argc, char** argv) {
  std::vector<char*> args;
  bool repetitions = false, interleaving = false;
  std::string jsonPath;
  std::size_t tunnels = 0, tunnelBytes = 256 * 1024;
  int tunnelRounds = 3;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--stockade_json=")) {
      jsonPath = a.substr(16);
      continue;
    }
    if (a.starts_with("--tunnels=")) {
      tunnels = std::stoul(std::string(a.substr(10)));
      continue;
    }
    if (a.starts_with("--tunnel_bytes=")) {
      tunnelBytes = std::stoul(std::string(a.substr(15)));
      continue;
    }
    if (a.starts_with("--tunnel_rounds=")) {
      tunnelRounds = std::stoi(std::string(a.substr(16)));
      continue;
    }
    args.push_back(argv[i]);
    repetitions = repetitions || a.starts_with("--benchmark_repetitions");
    interleaving = interleaving || a.starts_with("--benchmark_enable_random_interleaving");
  }
  if (tunnels > 0) return tunnelsMain(tunnels, tunnelBytes, tunnelRounds, jsonPath);
  std::string reps = "--benchmark_repetitions=5", shuffle = "--benchmark_enable_random_interleaving=true";
  if (!repetitions) args.push_back(reps.data());
  if (!interleaving) args.push_back(shuffle.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  SummaryReporter reporter;
  reporter.setJsonPath(jsonPath);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
