// HTTP/1.x message heads, shared by requests and responses: finding the end of
// a head, splitting it into a start line and header fields, strictly.
// Pure functions over untrusted bytes: they never throw and never read past
// the view they are given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::proxy::http {

struct Field {
  std::string name;   // as received (case preserved); compare with iequals()
  std::string value;  // leading/trailing spaces and tabs removed
};

// Why a message was refused, with the status the proxy replies with
// (400, 431, 501, 505, 502 for bad upstream responses) and what was wrong.
struct Refusal {
  int status = 400;
  std::string message;
};

// Leading empty lines (CRLF) a client may send between pipelined requests.
std::size_t skipLeadingEmptyLines(std::string_view buffer) noexcept;

// Length of the head (start line through the empty line, CRLF CRLF included)
// at the start of `buffer`, or nullopt when the buffer does not hold a whole
// head yet. Bare LF line endings are not recognised (the head never ends and
// the size limit refuses it).
std::optional<std::size_t> headLength(std::string_view buffer) noexcept;

struct Head {
  std::string startLine;
  std::vector<Field> fields;
};
// Splits a complete head (as measured by headLength). Refuses control
// characters, obsolete line folding, whitespace before a colon, empty or
// non-token field names.
bool parseHead(std::string_view head, Head& out, Refusal& why);

bool iequals(std::string_view a, std::string_view b) noexcept;
bool isToken(std::string_view s) noexcept;
// The values of every field called `name`.
std::vector<std::string_view> fieldValues(const std::vector<Field>& fields, std::string_view name);
// True when a comma-separated field (Connection, Transfer-Encoding) contains
// `token`, case-insensitively.
bool listContains(const std::vector<Field>& fields, std::string_view name, std::string_view token);

// How the body that follows a head is delimited.
struct Framing {
  enum Kind { kNone, kLength, kChunked, kUntilClose } kind = kNone;
  std::uint64_t length = 0;  // kLength only
};
// Request framing from Content-Length / Transfer-Encoding. Refuses (smuggling
// defences): both present, several differing Content-Length values,
// non-numeric lengths, any transfer coding other than a lone "chunked".
bool requestFraming(const std::vector<Field>& fields, Framing& out, Refusal& why);

struct ResponseHead {
  int status = 0;
  int minorVersion = 1;  // HTTP/1.x
  Head head;
  Framing framing;
  bool keepAlive = true;  // false: the upstream closes after this response
};
// Parses an upstream response head. `requestMethod` decides bodiless HEAD
// responses. A malformed response is refused with status 502.
bool parseResponseHead(std::string_view head, std::string_view requestMethod, ResponseHead& out, Refusal& why);

// Finds where a chunked body ends, incrementally, without changing a byte:
// the proxy forwards chunked bodies exactly as received.
class ChunkedScanner {
 public:
  // Consumes bytes of the body; returns how many of `data` belong to it
  // (less than data.size() only once done()). Returns nullopt on a malformed
  // body; error() says why.
  std::optional<std::size_t> feed(std::string_view data) noexcept;
  bool done() const noexcept { return state_ == State::kDone; }
  const char* error() const noexcept { return error_; }
  // Bytes of chunk data due next: they need no scanning, so a caller may
  // forward them without feed() and account for them with skipData().
  std::uint64_t dataRemaining() const noexcept { return state_ == State::kData ? remaining_ : 0; }
  // Accounts for `n` bytes of chunk data forwarded without feed().
  // Precondition: n <= dataRemaining().
  void skipData(std::uint64_t n) noexcept;

 private:
  enum class State { kSize, kExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailerStart, kTrailerLine, kTrailerLf, kFinalLf, kDone };
  State state_ = State::kSize;
  std::uint64_t remaining_ = 0;
  int sizeDigits_ = 0;
  std::size_t lineBytes_ = 0;
  std::size_t trailerBytes_ = 0;
  const char* error_ = "";
};

}  // namespace stockade::proxy::http
