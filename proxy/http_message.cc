#include "proxy/http_message.h"

#include <algorithm>
#include <cassert>
#include <charconv>

namespace stockade::proxy::http {

namespace {

constexpr std::size_t kMaxChunkLine = 4096;
constexpr std::size_t kMaxTrailers = 64 * 1024;

bool isTchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hexValue(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool refuse(Refusal& why, int status, std::string message) {
  why.status = status;
  why.message = std::move(message);
  return false;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? x | 0x20 : x) == (y >= 'A' && y <= 'Z' ? y | 0x20 : y);
         });
}

bool isToken(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return isTchar(static_cast<unsigned char>(c)); });
}

std::size_t skipLeadingEmptyLines(std::string_view buffer) noexcept {
  std::size_t i = 0;
  while (i + 1 < buffer.size() && buffer[i] == '\r' && buffer[i + 1] == '\n') i += 2;
  return i;
}

std::optional<std::size_t> headLength(std::string_view buffer) noexcept {
  auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return end + 4;
}

bool parseHead(std::string_view head, Head& out, Refusal& why) {
  out = Head{};
  if (!head.ends_with("\r\n\r\n")) return refuse(why, 400, "the message head does not end with an empty line");
  head.remove_suffix(2);  // keep one CRLF after the last line
  bool first = true;
  while (!head.empty()) {
    auto eol = head.find("\r\n");
    if (eol == std::string_view::npos) return refuse(why, 400, "a header line does not end with CRLF");
    std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    for (unsigned char c : line) {
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        return refuse(why, 400, "the message head contains a control character");
    }
    if (first) {
      if (line.empty()) return refuse(why, 400, "the start line is empty");
      out.startLine = std::string(line);
      first = false;
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t')
      return refuse(why, 400, "obsolete line folding in a header field is refused");
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return refuse(why, 400, "a header line has no colon");
    std::string_view name = line.substr(0, colon);
    if (!isToken(name)) return refuse(why, 400, "a header field name is empty, has whitespace or is not a token");
    out.fields.push_back(Field{std::string(name), std::string(trimOws(line.substr(colon + 1)))});
  }
  if (first) return refuse(why, 400, "the message head is empty");
  return true;
}

std::vector<std::string_view> fieldValues(const std::vector<Field>& fields, std::string_view name) {
  std::vector<std::string_view> out;
  for (const Field& f : fields) {
    if (iequals(f.name, name)) out.push_back(f.value);
  }
  return out;
}

bool listContains(const std::vector<Field>& fields, std::string_view name, std::string_view token) {
  for (std::string_view value : fieldValues(fields, name)) {
    while (!value.empty()) {
      auto comma = value.find(',');
      std::string_view item = trimOws(value.substr(0, comma));
      if (iequals(item, token)) return true;
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  return false;
}

namespace {

// Content-Length values; all must be equal decimal numbers (a list "5, 5"
// counts as several values).
bool contentLength(const std::vector<Field>& fields, std::optional<std::uint64_t>& out, Refusal& why, int status) {
  out.reset();
  for (std::string_view value : fieldValues(fields, "content-length")) {
    while (true) {
      auto comma = value.find(',');
      std::string_view item = trimOws(value.substr(0, comma));
      std::uint64_t n = 0;
      auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() ||
          !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return refuse(why, status, "Content-Length is not a decimal number");
      if (out && *out != n) return refuse(why, status, "several different Content-Length values");
      out = n;
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  return true;
}

// Transfer-Encoding: absent, or exactly one coding "chunked".
bool transferEncoding(const std::vector<Field>& fields, bool& chunked, Refusal& why, int status) {
  chunked = false;
  auto values = fieldValues(fields, "transfer-encoding");
  if (values.empty()) return true;
  if (values.size() != 1 || !iequals(trimOws(values[0]), "chunked"))
    return refuse(why, status == 400 ? 501 : status, "Transfer-Encoding other than a lone \"chunked\" is refused");
  chunked = true;
  return true;
}

}  // namespace

bool requestFraming(const std::vector<Field>& fields, Framing& out, Refusal& why) {
  std::optional<std::uint64_t> length;
  bool chunked = false;
  if (!contentLength(fields, length, why, 400) || !transferEncoding(fields, chunked, why, 400)) return false;
  if (length && chunked) return refuse(why, 400, "both Content-Length and Transfer-Encoding are present");
  if (chunked) out = Framing{Framing::kChunked, 0};
  else if (length && *length > 0) out = Framing{Framing::kLength, *length};
  else out = Framing{Framing::kNone, 0};
  return true;
}

bool parseResponseHead(std::string_view head, std::string_view requestMethod, ResponseHead& out, Refusal& why) {
  out = ResponseHead{};
  if (!parseHead(head, out.head, why)) {
    why.status = 502;
    why.message = "upstream response: " + why.message;
    return false;
  }
  std::string_view line = out.head.startLine;
  // HTTP/1.x SP 3DIGIT SP reason
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
      !std::all_of(line.begin() + 9, line.begin() + 12, [](char c) { return c >= '0' && c <= '9'; }) ||
      (line.size() > 12 && line[12] != ' '))
    return refuse(why, 502, "upstream response has a malformed status line");
  out.minorVersion = line[7] - '0';
  out.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (out.status < 100) return refuse(why, 502, "upstream response has a status below 100");

  std::optional<std::uint64_t> length;
  bool chunked = false;
  if (!contentLength(out.head.fields, length, why, 502) || !transferEncoding(out.head.fields, chunked, why, 502))
    return false;
  if (length && chunked) return refuse(why, 502, "upstream response has both Content-Length and Transfer-Encoding");

  bool close = listContains(out.head.fields, "connection", "close");
  bool keep = listContains(out.head.fields, "connection", "keep-alive");
  out.keepAlive = out.minorVersion == 1 ? !close : keep && !close;

  if (out.status < 200 || out.status == 204 || out.status == 304 || iequals(requestMethod, "HEAD")) {
    out.framing = Framing{Framing::kNone, 0};
  } else if (chunked) {
    out.framing = Framing{Framing::kChunked, 0};
  } else if (length) {
    out.framing = Framing{*length > 0 ? Framing::kLength : Framing::kNone, *length};
  } else {
    out.framing = Framing{Framing::kUntilClose, 0};
    out.keepAlive = false;
  }
  return true;
}

void ChunkedScanner::skipData(std::uint64_t n) noexcept {
  assert(n <= dataRemaining());
  remaining_ -= n;
  if (remaining_ == 0) state_ = State::kDataCr;
}

std::optional<std::size_t> ChunkedScanner::feed(std::string_view data) noexcept {
  std::size_t i = 0;
  auto fail = [this](const char* why) -> std::optional<std::size_t> {
    error_ = why;
    return std::nullopt;
  };
  if (*error_ != '\0') return std::nullopt;  // already failed
  while (i < data.size() && state_ != State::kDone) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    switch (state_) {
      case State::kSize: {
        int h = hexValue(c);
        if (h >= 0) {
          if (++sizeDigits_ > 15) return fail("chunk size is too large");
          remaining_ = remaining_ * 16 + static_cast<unsigned>(h);
          ++i;
        } else if (sizeDigits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = State::kExtension;
          lineBytes_ = 0;
          ++i;
        } else if (sizeDigits_ > 0 && c == '\r') {
          state_ = State::kSizeLf;
          ++i;
        } else {
          return fail("chunk size is not a hex number");
        }
        break;
      }
      case State::kExtension:
        if (c == '\r') state_ = State::kSizeLf;
        else if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f) return fail("control character in a chunk extension");
        else if (++lineBytes_ > kMaxChunkLine) return fail("chunk extension is too long");
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') return fail("chunk size line does not end with CRLF");
        ++i;
        sizeDigits_ = 0;
        state_ = remaining_ == 0 ? State::kTrailerStart : State::kData;
        break;
      case State::kData: {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size() - i));
        i += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c != '\r') return fail("chunk data is not followed by CRLF");
        ++i;
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return fail("chunk data is not followed by CRLF");
        ++i;
        state_ = State::kSize;
        break;
      case State::kTrailerStart:
        if (c == '\r') {
          state_ = State::kFinalLf;
        } else if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f) {
          return fail("control character in a trailer");
        } else {
          state_ = State::kTrailerLine;
          if (++trailerBytes_ > kMaxTrailers) return fail("trailers are too large");
        }
        ++i;
        break;
      case State::kTrailerLine:
        if (c == '\r') state_ = State::kTrailerLf;
        else if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f) return fail("control character in a trailer");
        else if (++trailerBytes_ > kMaxTrailers) return fail("trailers are too large");
        ++i;
        break;
      case State::kTrailerLf:
        if (c != '\n') return fail("trailer line does not end with CRLF");
        ++i;
        state_ = State::kTrailerStart;
        break;
      case State::kFinalLf:
        if (c != '\n') return fail("chunked body does not end with CRLF");
        ++i;
        state_ = State::kDone;
        break;
      case State::kDone:
        break;
    }
  }
  return i;
}

}  // namespace stockade::proxy::http
