#include "src/cli/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace stockade::cli {

namespace {

constexpr std::size_t kMaxHead = 64 * 1024;
constexpr std::size_t kMaxBody = 256u << 20;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

std::optional<std::uint64_t> parseNumber(std::string_view s, int base) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  return v;
}

}  // namespace

std::variant<Endpoint, std::string> parseEndpoint(std::string_view text) {
  Endpoint e;
  e.text = std::string(text);
  if (text.starts_with("unix:")) {
    e.unixPath = std::string(text.substr(5));
    if (e.unixPath.empty() || e.unixPath.size() >= sizeof(sockaddr_un{}.sun_path))
      return "--connect " + e.text + ": give unix:PATH with a socket path";
    return e;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return "--connect " + e.text + ": give unix:PATH or HOST:PORT";
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  auto port = parseNumber(text.substr(colon + 1), 10);
  if (!port || *port == 0 || *port > 65535) return "--connect " + e.text + ": the port must be 1 to 65535";
  in6_addr a6{};
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) != 1 && ::inet_pton(AF_INET6, host.c_str(), &a6) != 1)
    return "--connect " + e.text + ": \"" + host + "\" is not an IP address (or localhost)";
  e.host = host;
  e.port = static_cast<std::uint16_t>(*port);
  return e;
}

HttpClient::HttpClient(Endpoint endpoint, std::optional<std::string> token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_.clear();
}

void HttpClient::connect() {
  if (fd_ >= 0) return;
  int rc = -1;
  if (!endpoint_.unixPath.empty()) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, endpoint_.unixPath.c_str(), endpoint_.unixPath.size() + 1);
    if (fd_ >= 0) rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    bool v6 = endpoint_.host.find(':') != std::string::npos;
    fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (v6) {
      auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
      s6->sin6_family = AF_INET6;
      s6->sin6_port = htons(endpoint_.port);
      ::inet_pton(AF_INET6, endpoint_.host.c_str(), &s6->sin6_addr);
      len = sizeof *s6;
    } else {
      auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
      s4->sin_family = AF_INET;
      s4->sin_port = htons(endpoint_.port);
      ::inet_pton(AF_INET, endpoint_.host.c_str(), &s4->sin_addr);
      len = sizeof *s4;
    }
    if (fd_ >= 0) rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&ss), len);
    int one = 1;
    if (rc == 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (rc != 0) {
    int err = errno;
    close();
    std::string hint = (err == ENOENT || err == ECONNREFUSED) ? " (is stockaded running? see --connect)" : "";
    if (err == EACCES) hint = " (the socket is mode 0600: run as the daemon's user)";
    throw ClientError("cannot connect to " + endpoint_.text + ": " + std::strerror(err) + hint);
  }
}

void HttpClient::send(std::string_view method, std::string_view target, std::string_view body,
                      const std::map<std::string, std::string>& extra) {
  std::string req;
  req.reserve(256 + body.size());
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: localhost\r\n");
  if (token_) req.append("Authorization: Bearer ").append(*token_).append("\r\n");
  for (const auto& [k, v] : extra) req.append(k).append(": ").append(v).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT") {
    req.append("Content-Type: application/json\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  req.append("\r\n").append(body);
  std::size_t off = 0;
  while (off < req.size()) {
    ssize_t n = ::send(fd_, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ClientError("sending to " + endpoint_.text + " failed: " + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
}

bool HttpClient::fill() {
  // Large reads: a download streams through here.
  constexpr std::size_t kRead = std::size_t{1} << 18;
  for (;;) {
    std::size_t had = buf_.size();
    buf_.resize(had + kRead);
    ssize_t n = ::recv(fd_, buf_.data() + had, kRead, 0);
    buf_.resize(had + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ClientError("reading from " + endpoint_.text + " failed: " + std::strerror(errno));
    return n > 0;
  }
}

std::string HttpClient::readLine() {
  for (;;) {
    auto nl = buf_.find("\r\n");
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 2);
      return line;
    }
    if (buf_.size() > kMaxHead) throw ClientError(endpoint_.text + " sent a line longer than 64 KiB");
    if (!fill()) throw ClientError(endpoint_.text + " closed the connection mid-reply");
  }
}

HttpResult HttpClient::readHead() {
  HttpResult r;
  std::string status = readLine();
  // "HTTP/1.1 200 OK"
  if (!status.starts_with("HTTP/1.") || status.size() < 12 || status[8] != ' ')
    throw ClientError(endpoint_.text + " did not answer HTTP (\"" + status.substr(0, 40) + "\"): is it stockaded?");
  auto code = parseNumber(std::string_view(status).substr(9, 3), 10);
  if (!code) throw ClientError(endpoint_.text + " sent a bad status line");
  r.status = static_cast<int>(*code);
  std::size_t headBytes = status.size();
  for (;;) {
    std::string line = readLine();
    if (line.empty()) break;
    headBytes += line.size();
    if (headBytes > kMaxHead) throw ClientError(endpoint_.text + " sent more than 64 KiB of headers");
    auto colon = line.find(':');
    if (colon == std::string::npos) throw ClientError(endpoint_.text + " sent a malformed header");
    r.headers[lower(std::string_view(line).substr(0, colon))] = trim(std::string_view(line).substr(colon + 1));
  }
  return r;
}

std::string HttpClient::readBody(const HttpResult& head, const std::function<bool(std::string_view)>* onData) {
  std::string body;
  auto deliver = [&](std::string_view piece) -> bool {
    if (onData) return (*onData)(piece);
    if (body.size() + piece.size() > kMaxBody) throw ClientError(endpoint_.text + " sent a body over 256 MiB");
    body.append(piece);
    return true;
  };
  auto te = head.headers.find("transfer-encoding");
  if (te != head.headers.end() && lower(te->second) == "chunked") {
    for (;;) {
      std::string sizeLine = readLine();
      if (auto semi = sizeLine.find(';'); semi != std::string::npos) sizeLine.resize(semi);
      auto size = parseNumber(trim(sizeLine), 16);
      if (!size) throw ClientError(endpoint_.text + " sent a malformed chunk");
      if (*size == 0) {
        while (!readLine().empty()) {
        }
        return body;
      }
      if (*size > kMaxBody) throw ClientError(endpoint_.text + " sent a chunk over 256 MiB");
      while (buf_.size() < *size + 2)
        if (!fill()) throw ClientError(endpoint_.text + " closed the connection mid-chunk");
      std::string piece = buf_.substr(0, *size);
      buf_.erase(0, *size + 2);
      if (!deliver(piece)) {
        close();
        return body;
      }
    }
  }
  auto cl = head.headers.find("content-length");
  if (cl != head.headers.end()) {
    auto len = parseNumber(cl->second, 10);
    if (!len || (!onData && *len > kMaxBody)) throw ClientError(endpoint_.text + " sent a bad Content-Length");
    if (onData) {
      // Streamed as it arrives (a file download): any size, bounded memory.
      for (std::uint64_t left = *len; left > 0;) {
        if (buf_.empty() && !fill()) throw ClientError(endpoint_.text + " closed the connection mid-body");
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf_.size()));
        bool more = deliver(std::string_view(buf_.data(), n));
        buf_.erase(0, n);
        left -= n;
        if (!more) {
          close();
          return body;
        }
      }
      return body;
    }
    while (buf_.size() < *len)
      if (!fill()) throw ClientError(endpoint_.text + " closed the connection mid-body");
    std::string piece = buf_.substr(0, *len);
    buf_.erase(0, *len);
    deliver(piece);
    return body;
  }
  if (head.status == 204 || head.status == 304 || head.status / 100 == 1) return body;
  // No length: the body runs to the end of the connection.
  while (fill()) {
  }
  deliver(buf_);
  buf_.clear();
  close();
  return body;
}

HttpResult HttpClient::request(std::string_view method, std::string_view target, std::string_view body) {
  return stream(method, target, body, nullptr);
}

HttpResult HttpClient::stream(std::string_view method, std::string_view target, std::string_view body,
                              const std::function<bool(std::string_view)>& onData) {
  for (int attempt = 0;; ++attempt) {
    bool reused = fd_ >= 0;
    connect();
    try {
      send(method, target, body);
      HttpResult r = readHead();
      bool streamIt = onData && r.status == 200;
      r.body = readBody(r, streamIt ? &onData : nullptr);
      auto conn = r.headers.find("connection");
      if (conn != r.headers.end() && lower(conn->second) == "close") close();
      return r;
    } catch (const ClientError&) {
      // A kept-alive connection the daemon closed meanwhile: once more, fresh.
      close();
      if (!reused || attempt > 0) throw;
    }
  }
}

void HttpClient::sendAll(std::string_view bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ClientError("sending to " + endpoint_.text + " failed: " + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
}

HttpResult HttpClient::upload(std::string_view method, std::string_view target, std::string_view contentType,
                              std::optional<std::uint64_t> length, const BodyRead& read) {
  close();  // a fresh connection: a refusal closes it, and nothing is retried
  connect();
  std::string head;
  head.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: localhost\r\n");
  if (token_) head.append("Authorization: Bearer ").append(*token_).append("\r\n");
  head.append("Content-Type: ").append(contentType).append("\r\n");
  if (length)
    head.append("Content-Length: ").append(std::to_string(*length)).append("\r\n");
  else
    head.append("Transfer-Encoding: chunked\r\n");
  head.append("Expect: 100-continue\r\n\r\n");
  sendAll(head);
  // The daemon refuses (the path, the policy, the size) before the body.
  HttpResult r = readHead();
  if (r.status != 100) {
    r.body = readBody(r, nullptr);
    close();
    return r;
  }
  std::string buf(std::size_t{1} << 18, '\0');
  for (;;) {
    std::size_t n = read(buf.data(), buf.size());
    if (n == 0) break;
    if (length) {
      sendAll(std::string_view(buf.data(), n));
    } else {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", n);
      sendAll(size);
      sendAll(std::string_view(buf.data(), n));
      sendAll("\r\n");
    }
  }
  if (!length) sendAll("0\r\n\r\n");
  r = readHead();
  r.body = readBody(r, nullptr);
  close();
  return r;
}

HttpResult HttpClient::upgrade(std::string_view target, const std::map<std::string, std::string>& headers) {
  close();
  connect();
  send("GET", target, {}, headers);
  HttpResult r = readHead();
  if (r.status != 101) r.body = readBody(r, nullptr);
  return r;
}

std::string HttpClient::takeBuffered() {
  std::string out;
  out.swap(buf_);
  return out;
}

}  // namespace stockade::cli
