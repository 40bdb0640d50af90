// The daemon's HTTP server: HTTP/1.1 with keep-alive on a unix socket or
// loopback TCP, chunked NDJSON streams and WebSocket upgrades. It reads and
// checks requests (route, Origin, token, limits) and hands each one to a
// Handler; what a route does lives in the handler, never here.
//
// No Asio or Beast type appears here (pimpl): including this header is cheap.
//
// Threads: a few io threads serve every connection; handlers run on a
// separate pool of worker threads, so a handler that blocks briefly (a
// ledger write, a spawn) does not hold up other clients. A handler with a
// long wait returns a Deferred, a stream returns a ChunkSource: both are
// polled on io threads and must never block.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/daemon/api_error.h"
#include "src/daemon/auth.h"
#include "src/daemon/routes.h"

namespace stockade::daemon {

struct ListenAddress {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;        // kUnix
  std::string host;        // kTcp: an IP literal
  std::uint16_t port = 0;  // kTcp: 0 picks a free port
  std::string text() const;  // "unix:/run/stockade.sock", "127.0.0.1:7070", "[::1]:7070"
};
// "unix:PATH" or "ADDRESS:PORT" with a loopback IP literal ("127.0.0.1:7070",
// "[::1]:7070"). Other addresses are refused: the API is for this machine.
std::variant<ListenAddress, std::string> parseListenAddress(std::string_view text);

struct ServerLimits {
  std::size_t maxJsonBodyBytes = 16u << 20;  // 413 too_large beyond
  // Streamed bodies (BodyKind::kRaw: file uploads, tar trees): 413 too_large
  // beyond, announced or counted. They are read piece by piece as the
  // handler consumes them, never held whole.
  std::uint64_t maxRawBodyBytes = std::uint64_t{8} << 30;
  std::size_t maxHeaderBytes = 64u << 10;    // 413 too_large beyond (request line and headers)
  std::size_t maxConcurrentRequests = 256;   // requests being served at once, streams included: 503 beyond
  std::size_t maxConnections = 1024;         // open connections: 503 and close beyond
  std::size_t maxWebSocketMessageBytes = 1u << 20;
  std::chrono::milliseconds headerTimeout{30'000};  // a request head (or an idle keep-alive) must arrive within
  std::chrono::milliseconds bodyTimeout{120'000};   // the whole body must arrive within (a streamed body:
                                                    // each piece of it, so a long upload that moves is not cut)
  std::chrono::milliseconds writeTimeout{60'000};   // a client that reads nothing for this long is dropped
};

struct ServerOptions {
  ListenAddress listen;
  RouteTable routes = daemon::routes();  // must outlive the server
  AuthPolicy auth;
  ServerLimits limits;
  int ioThreads = 2;
  int workerThreads = 8;
};

// Who is on the other end of a connection.
struct Peer {
  std::optional<std::uint32_t> uid;  // unix sockets: SO_PEERCRED
  std::optional<std::int32_t> pid;
  std::string address;               // TCP: "127.0.0.1:53412"
};

// The body of a BodyKind::kRaw request, read as it arrives: one of
// announced length straight off the socket by read() itself, a chunked one
// through the server's parser and a bounded queue. Blocking:
// read it from a thread of the handler's own (a Deferred's), never from
// handle() itself, which runs before the server starts reading the body.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Up to buf.size() bytes, waiting for them; 0 at the end of the body. An
  // error when the client went away, stalled past the body timeout, sent a
  // malformed body or passed ServerLimits::maxRawBodyBytes (413 too_large).
  virtual std::variant<std::size_t, ApiError> read(std::span<char> buf) = 0;
  // Content-Length, when the client announced one.
  virtual std::optional<std::uint64_t> announcedLength() const = 0;
};

struct Request {
  Method method = Method::kGet;
  RouteMatch match;  // match.route is never null
  Query query;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // BodyKind::kJson routes only
  std::shared_ptr<BodyReader> rawBody;         // BodyKind::kRaw routes only (never null there)
  Peer peer;
};

struct Response {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;

  static Response json(std::string body, int status = 200);
  static Response noContent();  // 204
  static Response error(const ApiError& e);
};

// Thread-safe; may be called any number of times, from any thread, also
// after the reply it belongs to is gone (it then does nothing).
using Waker = std::function<void()>;

// A chunked body produced piece by piece. next() is called on an io thread,
// never concurrently with itself, and must not block. Destroying the source
// is how a client's disconnect (or the end of the stream) frees what it holds.
class ChunkSource {
 public:
  enum class Step {
    kData,     // `out` holds the next bytes (appended)
    kPending,  // nothing yet: `wake` will be called when there may be more (spurious calls are fine)
    kEnd,      // the stream is complete
    kAbort,    // the stream failed: the connection is cut without the body's end, so
               // the client sees the reply incomplete (never a short file or archive
               // that looks whole)
  };
  virtual ~ChunkSource() = default;
  virtual Step next(std::string& out, const Waker& wake) = 0;
};

// A reply computed later (a wait with a timeout). Polled like a ChunkSource.
class DeferredReply {
 public:
  virtual ~DeferredReply() = default;
  // The response, or nullopt after arranging for `wake` to be called.
  virtual std::optional<Response> poll(const Waker& wake) = 0;
};

// Both directions of a WebSocket (binary frames). Called on an io thread,
// never concurrently; must not block.
class Duplex {
 public:
  virtual ~Duplex() = default;
  // One message from the client.
  virtual void receive(std::string_view bytes) = 0;
  // The next message to the client; kEnd closes the WebSocket normally.
  virtual ChunkSource::Step next(std::string& out, const Waker& wake) = 0;
};

struct StreamReply {
  std::shared_ptr<ChunkSource> source;
  std::string contentType = "application/x-ndjson";
  // Set: the reply carries this Content-Length instead of being chunked (a
  // file of known size); a source that ends short of it cuts the connection,
  // so the client sees the reply incomplete, never a short file.
  std::optional<std::uint64_t> contentLength;
};
struct Deferred {
  std::shared_ptr<DeferredReply> reply;
};
struct Upgrade {
  std::shared_ptr<Duplex> duplex;
};
using Reply = std::variant<Response, StreamReply, Deferred, Upgrade>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on a worker thread for a request that passed the route, Origin,
  // token and size checks. An exception becomes a 500 `internal` reply.
  // A kRaw route's body is read only once handle() returned a Deferred (from
  // the Deferred's own thread); any other reply leaves it unread and closes
  // the connection after the reply.
  virtual Reply handle(Request& request) = 0;
};

// One line of the access log, written when the reply is complete (for a
// stream or a WebSocket: when it ends).
struct AccessRecord {
  std::string method;
  std::string path;
  int status = 0;
  std::chrono::microseconds duration{0};
  std::string sandboxId;  // the {id} path parameter, if any
  std::uint64_t bytesOut = 0;
};
using AccessLog = std::function<void(const AccessRecord&)>;

struct ServerStats {
  std::size_t connections = 0;
  std::size_t requestsInFlight = 0;
  std::uint64_t requestsServed = 0;
};

class Server {
 public:
  // Binds and listens before returning: a unix socket is created with mode
  // 0600 before listen() (no moment when another user could connect); a
  // stale socket file nobody listens on is replaced, anything else at the
  // path is an error. Throws std::runtime_error naming the call and errno,
  // std::invalid_argument for a TCP address without a token.
  Server(ServerOptions options, std::shared_ptr<Handler> handler, AccessLog log = {});
  // stop().
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts the io and worker threads; returns at once.
  void start();
  // Stops accepting, closes every connection, waits for handlers in flight
  // and joins every thread. Idempotent.
  void stop();

  // The address really bound (the port chosen for port 0).
  ListenAddress address() const;
  // Replaces the bearer token (stockaded's SIGHUP re-reads --token-file): a
  // request examined from now on needs the new one; one already past its
  // check goes on. Only a server started with a token has one to replace
  // (std::logic_error otherwise: a unix socket without a token stays one).
  void replaceToken(std::string token);
  ServerStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace stockade::daemon
