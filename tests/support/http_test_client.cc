#include "tests/support/http_test_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace stockade::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Proto = asio::generic::stream_protocol;

namespace {

Proto::socket connectUnix(asio::io_context& ioc, const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  Proto::socket s(ioc);
  s.connect(Proto::endpoint(&sa, sizeof sa));
  return s;
}

Proto::socket connectTcp(asio::io_context& ioc, const std::string& host, std::uint16_t port) {
  asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  Proto::socket s(ioc);
  s.connect(Proto::endpoint(ep.data(), static_cast<int>(ep.size())));
  return s;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

template <class Message>
void collectHeaders(const Message& m, HttpReply& out) {
  out.status = static_cast<int>(m.result_int());
  for (const auto& f : m) out.headers[lower(std::string(f.name_string()))] = std::string(f.value());
}

}  // namespace

struct HttpTestClient::Impl {
  asio::io_context ioc;
  std::optional<Proto::socket> sock;
  beast::flat_buffer buffer;
  std::string unixPath;
  std::string host;
  std::uint16_t port = 0;
  Headers defaults;

  void open() {
    if (sock && sock->is_open()) return;
    buffer.clear();
    sock.emplace(unixPath.empty() ? connectTcp(ioc, host, port) : connectUnix(ioc, unixPath));
  }

  http::request<http::string_body> build(const std::string& method, const std::string& target, const std::string& body,
                                         const Headers& headers) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    if (req.method() == http::verb::unknown) req.method_string(method);
    req.set(http::field::host, "localhost");
    for (const auto& [k, v] : defaults) req.set(k, v);
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty()) {
      req.body() = body;
      if (req.find(http::field::content_type) == req.end()) req.set(http::field::content_type, "application/json");
    }
    req.prepare_payload();
    return req;
  }
};

HttpTestClient::HttpTestClient(std::string unixPath) : impl_(std::make_unique<Impl>()) {
  impl_->unixPath = std::move(unixPath);
}
HttpTestClient::HttpTestClient(std::string host, std::uint16_t port) : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
}
HttpTestClient::~HttpTestClient() = default;
HttpTestClient::HttpTestClient(HttpTestClient&&) noexcept = default;
HttpTestClient& HttpTestClient::operator=(HttpTestClient&&) noexcept = default;

void HttpTestClient::setDefaultHeaders(Headers headers) { impl_->defaults = std::move(headers); }

HttpReply HttpTestClient::request(const std::string& method, const std::string& target, const std::string& body,
                                  const Headers& headers) {
  for (int attempt = 0;; ++attempt) {
    impl_->open();
    auto req = impl_->build(method, target, body, headers);
    beast::error_code ec;
    http::write(*impl_->sock, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    if (!ec) http::read(*impl_->sock, impl_->buffer, parser, ec);
    // A kept-alive connection the server closed meanwhile: reopen once.
    if (ec && attempt == 0 && (ec == http::error::end_of_stream || ec == asio::error::broken_pipe ||
                               ec == asio::error::connection_reset)) {
      close();
      continue;
    }
    if (ec) {
      close();
      throw std::runtime_error(method + " " + target + ": " + ec.message());
    }
    HttpReply out;
    collectHeaders(parser.get(), out);
    out.body = std::move(parser.get().body());
    if (!parser.get().keep_alive()) close();
    return out;
  }
}

HttpReply HttpTestClient::stream(const std::string& method, const std::string& target,
                                 const std::function<bool(std::string_view)>& onChunk, const std::string& body,
                                 const Headers& headers) {
  close();
  impl_->open();
  auto req = impl_->build(method, target, body, headers);
  http::write(*impl_->sock, req);
  http::response_parser<http::empty_body> head;
  head.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(*impl_->sock, impl_->buffer, head);
  HttpReply out;
  collectHeaders(head.get(), out);
  if (!head.get().chunked()) {
    // An error reply: read its body whole.
    http::response_parser<http::string_body> rest(std::move(head));
    http::read(*impl_->sock, impl_->buffer, rest);
    out.body = std::move(rest.get().body());
    close();
    return out;
  }
  http::response_parser<http::string_body> parser(std::move(head));
  bool stopped = false;
  auto onBody = [&](std::uint64_t, beast::string_view data, beast::error_code& ec) -> std::size_t {
    if (!onChunk(std::string_view(data.data(), data.size()))) {
      stopped = true;
      ec = asio::error::operation_aborted;
    }
    return data.size();
  };
  parser.on_chunk_body(onBody);
  beast::error_code ec;
  while (!parser.is_done() && !stopped) {
    http::read_some(*impl_->sock, impl_->buffer, parser, ec);
    if (ec) break;
  }
  close();
  return out;
}

HttpReply HttpTestClient::raw(const std::string& bytes) {
  close();
  impl_->open();
  asio::write(*impl_->sock, asio::buffer(bytes));
  http::response_parser<http::string_body> parser;
  http::read(*impl_->sock, impl_->buffer, parser);
  HttpReply out;
  collectHeaders(parser.get(), out);
  out.body = std::move(parser.get().body());
  close();
  return out;
}

void HttpTestClient::close() {
  if (impl_->sock) {
    beast::error_code ec;
    impl_->sock->shutdown(Proto::socket::shutdown_both, ec);
    impl_->sock->close(ec);
    impl_->sock.reset();
  }
}

bool HttpTestClient::connected() const { return impl_->sock && impl_->sock->is_open(); }

struct WebSocketTestClient::Impl {
  asio::io_context ioc;
  std::optional<websocket::stream<Proto::socket>> ws;
};

WebSocketTestClient::WebSocketTestClient(const std::string& unixPath, const std::string& target, const Headers& headers)
    : impl_(std::make_unique<Impl>()) {
  impl_->ws.emplace(connectUnix(impl_->ioc, unixPath));
  impl_->ws->set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [k, v] : headers) req.set(k, v);
  }));
  websocket::response_type res;
  beast::error_code ec;
  impl_->ws->handshake(res, "localhost", target, ec);
  if (ec)
    throw std::runtime_error("WebSocket upgrade of " + target + " refused: HTTP " + std::to_string(res.result_int()) +
                             " " + res.body() + " (" + ec.message() + ")");
  impl_->ws->binary(true);
}

WebSocketTestClient::~WebSocketTestClient() {
  beast::error_code ec;
  if (impl_->ws) impl_->ws->next_layer().close(ec);
}

void WebSocketTestClient::send(std::string_view bytes) { impl_->ws->write(asio::buffer(bytes.data(), bytes.size())); }

std::optional<std::string> WebSocketTestClient::receive() {
  beast::flat_buffer buf;
  beast::error_code ec;
  impl_->ws->read(buf, ec);
  if (ec) return std::nullopt;
  return beast::buffers_to_string(buf.data());
}

void WebSocketTestClient::close() {
  beast::error_code ec;
  impl_->ws->close(websocket::close_code::normal, ec);
}

std::size_t openFdCount() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

namespace {

std::size_t statusField(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::stoul(line.substr(name.size() + 1));
  }
  return 0;
}

}  // namespace

std::size_t threadCount() { return statusField("Threads"); }
std::size_t residentKiB() { return statusField("VmRSS"); }

}  // namespace stockade::testing
