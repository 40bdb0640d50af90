// libmd's SHA1Init/Update/Final: see webSocketAccept().
#include "src/cli/websocket.h"

#include <sha1.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace stockade::cli {

namespace {

constexpr std::size_t kMaxMessage = 16u << 20;

std::string base64(const unsigned char* data, std::size_t n) {
  static constexpr char kA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < n; i += 3) {
    unsigned v = data[i] << 16;
    if (i + 1 < n) v |= data[i + 1] << 8;
    if (i + 2 < n) v |= data[i + 2];
    out += kA[(v >> 18) & 63];
    out += kA[(v >> 12) & 63];
    out += i + 1 < n ? kA[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kA[v & 63] : '=';
  }
  return out;
}

void randomBytes(unsigned char* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw ClientError(std::string("getrandom() failed: ") + std::strerror(errno));
    got += static_cast<std::size_t>(r);
  }
}

}  // namespace

std::string webSocketAccept(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  // libmd, not OpenSSL: no constructor runs at the CLI's start (CMakeLists.txt).
  unsigned char digest[SHA1_DIGEST_LENGTH];
  SHA1_CTX ctx;
  SHA1Init(&ctx);
  SHA1Update(&ctx, reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  SHA1Final(digest, &ctx);
  return base64(digest, sizeof digest);
}

WebSocketClient::WebSocketClient(HttpClient& http, const std::string& target) : http_(http) {
  unsigned char nonce[16];
  randomBytes(nonce, sizeof nonce);
  std::string key = base64(nonce, sizeof nonce);
  HttpResult r = http_.upgrade(target, {{"Upgrade", "websocket"},
                                        {"Connection", "Upgrade"},
                                        {"Sec-WebSocket-Version", "13"},
                                        {"Sec-WebSocket-Key", key}});
  if (r.status != 101) throw ClientError(r.body.empty() ? "HTTP " + std::to_string(r.status) : r.body);
  auto accept = r.headers.find("sec-websocket-accept");
  if (accept == r.headers.end() || accept->second != webSocketAccept(key))
    throw ClientError(http_.endpoint().text + " answered the upgrade without a valid Sec-WebSocket-Accept");
  buf_ = http_.takeBuffered();
}

void WebSocketClient::sendFrame(int opcode, std::string_view payload) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);
  std::size_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(0x80 | n);
  } else if (n <= 0xffff) {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(n >> 8);
    frame += static_cast<char>(n & 0xff);
  } else {
    frame += static_cast<char>(0x80 | 127);
    for (int i = 7; i >= 0; --i) frame += static_cast<char>((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xff);
  }
  unsigned char mask[4];
  randomBytes(mask, sizeof mask);
  frame.append(reinterpret_cast<char*>(mask), 4);
  for (std::size_t i = 0; i < n; ++i) frame += static_cast<char>(payload[i] ^ mask[i % 4]);
  std::size_t off = 0;
  while (off < frame.size()) {
    ssize_t w = ::send(fd(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw ClientError(std::string("WebSocket send failed: ") + std::strerror(errno));
    off += static_cast<std::size_t>(w);
  }
}

void WebSocketClient::send(std::string_view bytes) { sendFrame(0x2, bytes); }

bool WebSocketClient::parseFrame(int& opcode, bool& fin, std::string& payload) {
  if (buf_.size() < 2) return false;
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(buf_[i]); };
  fin = (b(0) & 0x80) != 0;
  opcode = b(0) & 0x0f;
  bool masked = (b(1) & 0x80) != 0;
  std::uint64_t len = b(1) & 0x7f;
  std::size_t pos = 2;
  if (len == 126) {
    if (buf_.size() < 4) return false;
    len = (b(2) << 8) | b(3);
    pos = 4;
  } else if (len == 127) {
    if (buf_.size() < 10) return false;
    len = 0;
    for (int i = 0; i < 8; ++i) len = (len << 8) | b(2 + static_cast<std::size_t>(i));
    pos = 10;
  }
  if (len > kMaxMessage) throw ClientError("the daemon sent a WebSocket frame over 16 MiB");
  unsigned char mask[4] = {0, 0, 0, 0};
  if (masked) {
    if (buf_.size() < pos + 4) return false;
    for (int i = 0; i < 4; ++i) mask[i] = b(pos + static_cast<std::size_t>(i));
    pos += 4;
  }
  if (buf_.size() < pos + len) return false;
  payload = buf_.substr(pos, len);
  if (masked)
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(payload[i] ^ mask[i % 4]);
  buf_.erase(0, pos + len);
  return true;
}

bool WebSocketClient::hasBuffered() const { return buf_.size() >= 2 && !closed_; }

std::optional<std::string> WebSocketClient::receive(bool& closed) {
  closed = closed_;
  if (closed_) return std::nullopt;
  for (int round = 0; round < 2; ++round) {
    int opcode = 0;
    bool fin = false;
    std::string payload;
    while (parseFrame(opcode, fin, payload)) {
      switch (opcode) {
        case 0x9: sendFrame(0xA, payload); break;  // ping -> pong
        case 0xA: break;                            // pong
        case 0x8:                                   // close: answer it
          if (!closed_) {
            try {
              sendFrame(0x8, payload.substr(0, 2));
            } catch (const ClientError&) {
            }
          }
          closed_ = closed = true;
          return std::nullopt;
        default:
          partial_ += payload;
          if (partial_.size() > kMaxMessage) throw ClientError("the daemon sent a WebSocket message over 16 MiB");
          if (fin) {
            std::string message;
            message.swap(partial_);
            return message;
          }
      }
    }
    if (round == 1) break;
    char chunk[65536];
    ssize_t n = ::recv(fd(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      closed_ = closed = true;
      return std::nullopt;
    }
    if (n > 0) buf_.append(chunk, static_cast<std::size_t>(n));
  }
  return std::nullopt;
}

void WebSocketClient::close() {
  if (closed_) return;
  try {
    sendFrame(0x8, std::string("\x03\xe8", 2));  // 1000 normal closure
  } catch (const ClientError&) {
  }
  closed_ = true;
}

}  // namespace stockade::cli
