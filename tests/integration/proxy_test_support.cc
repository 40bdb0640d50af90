#include "proxy_test_support.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

extern char** environ;

namespace stockade::proxy::testing {

namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Sha {
 public:
  Sha() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha() { EVP_MD_CTX_free(ctx_); }
  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx_, p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_, md, &len);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
      out += kHex[md[i] >> 4];
      out += kHex[md[i] & 15];
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::uint64_t toNumber(std::string_view s) {
  std::uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

void generate(std::uint64_t seed, std::uint64_t offset, char* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t pos = offset + i;
    std::uint64_t word = splitmix(seed * 0x100000001B3ull ^ (pos >> 3));
    out[i] = static_cast<char>(word >> ((pos & 7) * 8));
  }
}

std::string sha256Hex(std::string_view data) {
  Sha s;
  s.update(data.data(), data.size());
  return s.hex();
}

std::string expectedSha(std::uint64_t seed, std::uint64_t size) {
  Sha s;
  std::vector<char> block(1 << 16);
  for (std::uint64_t off = 0; off < size; off += block.size()) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - off));
    generate(seed, off, block.data(), n);
    s.update(block.data(), n);
  }
  return s.hex();
}

std::string fileSha(const std::string& path, std::uint64_t* size) {
  Sha s;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> block(1 << 16);
  std::uint64_t total = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    auto n = static_cast<std::size_t>(in.gcount());
    s.update(block.data(), n);
    total += n;
  }
  if (size) *size = total;
  return s.hex();
}

platform::UniqueFd listenLoopback(std::uint16_t& port, bool v6, int backlog) {
  platform::UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::runtime_error("socket() failed");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd.get(), backlog) != 0)
    throw std::runtime_error(std::string("bind/listen on loopback failed: ") + std::strerror(errno));
  len = sizeof ss;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

platform::UniqueFd connectLoopback(std::uint16_t port, bool v6) {
  platform::UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval tv{10, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(port);
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) fd.reset();
  return fd;
}

bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string_view readEndName(ReadEnd e) {
  switch (e) {
    case ReadEnd::kComplete: return "complete";
    case ReadEnd::kClosed: return "closed";
    case ReadEnd::kReset: return "reset";
    case ReadEnd::kHung: return "hung";
  }
  return "?";
}

namespace {

// One recv(); sets `end` unless bytes arrived.
ssize_t receiveSome(int fd, char* buf, std::size_t n, ReadEnd& end) {
  while (true) {
    ssize_t got = ::recv(fd, buf, n, 0);
    if (got > 0) return got;
    if (got < 0 && errno == EINTR) continue;
    end = got == 0 ? ReadEnd::kClosed : (errno == EAGAIN || errno == EWOULDBLOCK) ? ReadEnd::kHung : ReadEnd::kReset;
    return got;
  }
}

void failOnHang(const char* what, ReadEnd end, std::size_t got) {
  if (end == ReadEnd::kHung)
    ADD_FAILURE() << what << ": the peer sent nothing for 10 s and did not close (hung) after " << got << " bytes";
}

}  // namespace

Received receiveAll(int fd, std::size_t max) {
  Received r;
  r.end = ReadEnd::kComplete;
  char buf[65536];
  while (r.bytes.size() < max) {
    ssize_t n = receiveSome(fd, buf, std::min(sizeof buf, max - r.bytes.size()), r.end);
    if (n <= 0) return r;
    r.bytes.append(buf, static_cast<std::size_t>(n));
  }
  r.end = ReadEnd::kComplete;
  return r;
}

std::string readAll(int fd, std::size_t max) {
  Received r = receiveAll(fd, max);
  failOnHang("readAll", r.end, r.bytes.size());
  return std::move(r.bytes);
}

std::string readN(int fd, std::size_t want) {
  std::string out;
  char buf[65536];
  ReadEnd end = ReadEnd::kComplete;
  while (out.size() < want) {
    ssize_t n = receiveSome(fd, buf, std::min(sizeof buf, want - out.size()), end);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  failOnHang("readN", end, out.size());
  return out;
}

std::string readHead(int fd) {
  std::string out;
  char c;
  ReadEnd end = ReadEnd::kComplete;
  while (!out.ends_with("\r\n\r\n") && out.size() < 1 << 20) {
    if (receiveSome(fd, &c, 1, end) <= 0) break;
    out += c;
  }
  failOnHang("readHead", end, out.size());
  return out;
}

std::string roundTrip(std::uint16_t port, std::string_view request) {
  auto fd = connectLoopback(port);
  if (!fd) return "";
  sendAll(fd.get(), request);
  return readAll(fd.get());
}

// ---- OriginServer ------------------------------------------------------------

OriginServer::OriginServer() {
  listener_ = listenLoopback(port_);
  acceptor_ = std::thread([this] {
    while (!stopping_) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (stopping_) return;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::lock_guard lock(mu_);
      open_.push_back(fd);
      workers_.emplace_back([this, fd] {
        serve(fd);
        // Forget the fd before closing it, so that the destructor never
        // shuts down a number the process has reused.
        std::lock_guard l(mu_);
        open_.erase(std::find(open_.begin(), open_.end(), fd));
        ::close(fd);
      });
    }
  });
}

OriginServer::~OriginServer() {
  stopping_ = true;
  ::shutdown(listener_.get(), SHUT_RDWR);
  acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

std::vector<std::string> OriginServer::heads() const {
  std::lock_guard lock(mu_);
  return heads_;
}

void OriginServer::serve(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string buf;
  char tmp[65536];
  auto fill = [&]() {
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
    return true;
  };
  while (!stopping_) {
    std::size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return;
    }
    std::string head = buf.substr(0, end + 4);
    buf.erase(0, end + 4);
    {
      std::lock_guard lock(mu_);
      heads_.push_back(head);
    }
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto sp1 = head.find(' ');
    auto sp2 = head.find(' ', sp1 + 1);
    std::string method = head.substr(0, sp1);
    std::string path = head.substr(sp1 + 1, sp2 - sp1 - 1);

    // Request body.
    std::string body;
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      while (true) {
        std::size_t eol;
        while ((eol = buf.find("\r\n")) == std::string::npos) {
          if (!fill()) return;
        }
        std::uint64_t size = std::stoull(buf.substr(0, eol), nullptr, 16);
        buf.erase(0, eol + 2);
        while (buf.size() < size + 2) {
          if (!fill()) return;
        }
        body.append(buf, 0, size);
        buf.erase(0, size + 2);
        if (size == 0) break;  // no trailers from our clients
      }
    } else if (auto cl = lower.find("content-length:"); cl != std::string::npos) {
      std::uint64_t size = std::stoull(lower.substr(cl + 15));
      while (buf.size() < size) {
        if (!fill()) return;
      }
      body = buf.substr(0, size);
      buf.erase(0, size);
    }

    auto send = [&](std::string_view s) { return sendAll(fd, s); };
    auto streamBody = [&](std::uint64_t seed, std::uint64_t size, bool chunked, std::size_t chunk = 1 << 16) {
      std::vector<char> block(chunk);
      for (std::uint64_t off = 0; off < size; off += block.size()) {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - off));
        generate(seed, off, block.data(), n);
        if (chunked) {
          char line[32];
          int l = std::snprintf(line, sizeof line, "%zx\r\n", n);
          if (!send(std::string_view(line, static_cast<std::size_t>(l)))) return false;
        }
        if (!send(std::string_view(block.data(), n))) return false;
        if (chunked && !send("\r\n")) return false;
      }
      return !chunked || send("0\r\n\r\n");
    };
    std::vector<std::string_view> parts;
    std::string_view rest = path;
    while (!rest.empty()) {
      rest.remove_prefix(1);
      auto slash = rest.find('/');
      parts.push_back(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    }
    if (method == "GET" && parts.size() == 3 && parts[0] == "bytes") {
      std::uint64_t size = toNumber(parts[1]), seed = toNumber(parts[2]);
      if (!send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n") ||
          !streamBody(seed, size, false))
        return;
    } else if (method == "GET" && (parts.size() == 3 || parts.size() == 4) && parts[0] == "chunked") {
      std::size_t chunk = parts.size() == 4 ? static_cast<std::size_t>(toNumber(parts[3])) : 1 << 16;
      if (!send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") ||
          !streamBody(toNumber(parts[2]), toNumber(parts[1]), true, chunk == 0 ? 1 : chunk))
        return;
    } else if (method == "GET" && parts.size() == 3 && parts[0] == "close") {
      if (send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")) streamBody(toNumber(parts[2]), toNumber(parts[1]), false);
      ::shutdown(fd, SHUT_WR);
      // Let the proxy read everything: wait for its EOF before closing.
      while (fill()) buf.clear();
      return;
    } else if ((method == "POST" || method == "PUT") && path == "/sha") {
      std::string sha = sha256Hex(body);
      if (!send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(sha.size()) + "\r\n\r\n" + sha)) return;
    } else {
      if (!send("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")) return;
    }
  }
}

// ---- EchoServer ----------------------------------------------------------------

EchoServer::EchoServer() : wake_(::eventfd(0, EFD_CLOEXEC)) {
  listener_ = listenLoopback(port_);
  thread_ = std::thread([this] {
    std::map<int, std::string> pending;  // fd -> bytes not yet echoed
    std::vector<platform::UniqueFd> owned;
    std::map<int, std::size_t> index;
    while (true) {
      std::vector<pollfd> fds{{wake_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
      for (auto& [fd, data] : pending) fds.push_back({fd, static_cast<short>(data.empty() ? POLLIN : POLLOUT), 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
          owned.emplace_back(c);
          pending[c];
        }
      }
      for (std::size_t i = 2; i < fds.size(); ++i) {
        int fd = fds[i].fd;
        if (!fds[i].revents) continue;
        auto& data = pending[fd];
        bool drop = false;
        if (data.empty()) {
          char buf[16384];
          ssize_t n = ::recv(fd, buf, sizeof buf, 0);
          if (n > 0) data.assign(buf, static_cast<std::size_t>(n));
          else if (n == 0 || errno != EAGAIN) drop = true;
        } else {
          ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
          if (n > 0) data.erase(0, static_cast<std::size_t>(n));
          else if (errno != EAGAIN) drop = true;
        }
        if (drop) {
          pending.erase(fd);
          for (auto& o : owned) {
            if (o.get() == fd) o.reset();
          }
        }
      }
    }
  });
}

EchoServer::~EchoServer() {
  std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

// ---- curl ----------------------------------------------------------------------

CurlResult runCurl(const std::vector<std::string>& args) {
  TempDir dir;
  std::string outPath = dir.path() + "/stdout", errPath = dir.path() + "/stderr";
  std::vector<std::string> argv{"curl"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::string path = "PATH=/usr/local/bin:/usr/bin:/bin";
  std::string home = "HOME=" + dir.path();  // no ~/.curlrc
  char* envp[] = {path.data(), home.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  CurlResult r;
  if (posix_spawnp(&pid, "curl", &fa, nullptr, cargv.data(), envp) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    r.err = "posix_spawnp(curl) failed";
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream o(outPath), e(errPath);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "stockade-proxy-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace stockade::proxy::testing
