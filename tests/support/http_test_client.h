// A real HTTP/1.1 and WebSocket client for the daemon's tests (Boost.Beast,
// synchronous), over a unix socket or loopback TCP. No Beast type appears
// here: tests that include it compile fast.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stockade::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpTestClient {
 public:
  // `unixPath` for a unix socket; or TCP with `host` and `port`.
  explicit HttpTestClient(std::string unixPath);
  HttpTestClient(std::string host, std::uint16_t port);
  ~HttpTestClient();
  HttpTestClient(HttpTestClient&&) noexcept;
  HttpTestClient& operator=(HttpTestClient&&) noexcept;

  // Headers sent with every request (Authorization, typically).
  void setDefaultHeaders(Headers headers);

  // One request on this client's connection (opened on first use, kept
  // alive, reopened when the server closed it). Throws std::runtime_error
  // on a transport failure.
  HttpReply request(const std::string& method, const std::string& target, const std::string& body = "",
                    const Headers& headers = {});

  // Sends the request and reads a chunked reply piece by piece: onChunk gets
  // each piece as it arrives and returns false to stop reading (the
  // connection is then closed at once). The reply's body is left empty.
  HttpReply stream(const std::string& method, const std::string& target,
                   const std::function<bool(std::string_view)>& onChunk, const std::string& body = "",
                   const Headers& headers = {});

  // Writes raw bytes and reads one reply (for malformed requests).
  HttpReply raw(const std::string& bytes);

  void close();
  bool connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class WebSocketTestClient {
 public:
  // Connects and performs the upgrade; throws std::runtime_error naming the
  // HTTP status when the server refuses it.
  WebSocketTestClient(const std::string& unixPath, const std::string& target, const Headers& headers = {});
  ~WebSocketTestClient();

  void send(std::string_view bytes);  // one binary message
  // The next message, or nullopt once the server closed the WebSocket.
  std::optional<std::string> receive();
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Resources of this process, for leak checks.
std::size_t openFdCount();
std::size_t threadCount();
std::size_t residentKiB();

}  // namespace stockade::testing
