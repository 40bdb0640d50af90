// A minimal WebSocket client (RFC 6455) for `stockade attach`: the upgrade
// over an HttpClient's connection, masked binary frames out, frames in
// (ping answered, close answered, fragments joined). Reads are driven by
// the caller's poll() on fd(): readable() says whether a whole message is
// already buffered, so nothing waits in a buffer poll() cannot see.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/cli/http_client.h"

namespace stockade::cli {

class WebSocketClient {
 public:
  // Upgrades `target` on a fresh connection of `http`. Throws ClientError;
  // a refused upgrade carries the daemon's reply in `refusal`.
  WebSocketClient(HttpClient& http, const std::string& target);

  int fd() const { return http_.fd(); }
  // One binary message.
  void send(std::string_view bytes);
  // Reads what the socket has (one recv) and returns the next complete
  // message, if any. `closed` is set once the server closed the WebSocket
  // or the connection ended.
  std::optional<std::string> receive(bool& closed);
  // A message already buffered (call receive() again before polling).
  bool hasBuffered() const;
  void close();

 private:
  void sendFrame(int opcode, std::string_view payload);
  // Parses one frame from buf_; false when incomplete.
  bool parseFrame(int& opcode, bool& fin, std::string& payload);

  HttpClient& http_;
  std::string buf_;
  std::string partial_;  // a fragmented message so far
  bool closed_ = false;
};

// base64(SHA-1(key + the RFC's GUID)): what the server must answer.
std::string webSocketAccept(std::string_view key);

}  // namespace stockade::cli
