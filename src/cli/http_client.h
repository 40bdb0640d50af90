// A small HTTP/1.1 client for the CLI's daemon commands, over a unix socket
// or TCP: one request per call on a connection kept alive, Content-Length
// and chunked bodies, and a streaming read of chunked replies. No Asio or
// Beast: the CLI links it statically, and `stockade run` never touches it.
//
// Replies are read with limits (64 KiB of head, 256 MiB of a body read
// whole; a streamed body has none); a malformed reply is an error, never a
// crash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace stockade::cli {

struct Endpoint {
  std::string unixPath;  // set for unix:PATH
  std::string host;      // else an IP literal
  std::uint16_t port = 0;
  std::string text;      // as given
};

// "unix:PATH" or "HOST:PORT" (HOST an IP literal, "[::1]:PORT", or "localhost").
std::variant<Endpoint, std::string> parseEndpoint(std::string_view text);

// A transport failure: cannot connect, connection closed, malformed reply.
class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpClient {
 public:
  HttpClient(Endpoint endpoint, std::optional<std::string> token);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Throws ClientError naming the endpoint.
  HttpResult request(std::string_view method, std::string_view target, std::string_view body = {});

  // Sends the request; a 200 reply's body (chunked, or of any
  // Content-Length) is handed to onData piece by piece as it arrives (return
  // false to stop: the connection is closed). Any other reply is returned
  // whole. `onData` is not called then.
  HttpResult stream(std::string_view method, std::string_view target, std::string_view body,
                    const std::function<bool(std::string_view)>& onData);

  // Sends a streamed body: `read` fills up to n bytes and returns how many
  // (0 at the end; it throws to abort). With Content-Length when `length`
  // is known, chunked otherwise. "Expect: 100-continue" first: a refusal
  // (the path, the policy, the size) arrives before any byte is sent. The
  // reply is read whole; the connection is closed after it.
  using BodyRead = std::function<std::size_t(char*, std::size_t)>;
  HttpResult upload(std::string_view method, std::string_view target, std::string_view contentType,
                    std::optional<std::uint64_t> length, const BodyRead& read);

  const Endpoint& endpoint() const { return endpoint_; }
  const std::optional<std::string>& token() const { return token_; }
  // The connected socket (for a WebSocket upgrade); -1 when closed.
  int fd() const { return fd_; }
  // Bytes read past the last reply (a WebSocket's first frames).
  std::string takeBuffered();
  // Sends a request and reads only the head of the reply: for an upgrade.
  HttpResult upgrade(std::string_view target, const std::map<std::string, std::string>& headers);

 private:
  void connect();
  void close();
  void send(std::string_view method, std::string_view target, std::string_view body,
            const std::map<std::string, std::string>& extra = {});
  // Reads the status line and headers.
  HttpResult readHead();
  std::string readBody(const HttpResult& head, const std::function<bool(std::string_view)>* onData);
  bool fill();  // reads more into buf_; false at EOF
  void sendAll(std::string_view bytes);
  std::string readLine();

  Endpoint endpoint_;
  std::optional<std::string> token_;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace stockade::cli
