// libFuzzer target: bytes -> the proxy's SOCKS5 greeting and request parsing,
// fed the way a connection delivers them (greeting first, then the request).
// Nothing here may crash, hang, leak or throw on any input, and the parsers
// are consistent however the bytes are split: every prefix of the input
// either needs more bytes, or gives exactly the answer the whole input gives
// (the same request and length, or the same refusal), and once a prefix has
// an answer every longer prefix has that same answer.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "proxy/decision.h"
#include "proxy/socks5.h"

namespace {

using namespace stockade::proxy;

struct GreetingAnswer {
  socks5::Status status;
  bool noAuth = false;
  std::size_t length = 0;
  std::string error;
  bool operator==(const GreetingAnswer&) const = default;
};
GreetingAnswer greetingOf(std::string_view in) {
  socks5::Greeting g;
  GreetingAnswer a;
  a.status = socks5::parseGreeting(in, g, a.error);
  if (a.status == socks5::Status::kOk) {
    a.noAuth = g.noAuthOffered;
    a.length = g.length;
  }
  if (a.status != socks5::Status::kError) a.error.clear();
  return a;
}

struct RequestAnswer {
  socks5::Status status;
  socks5::Request request;
  socks5::Reply reply = socks5::Reply::kSucceeded;
  std::string error;
  bool operator==(const RequestAnswer& o) const {
    return status == o.status && request.command == o.request.command &&
           request.addressType == o.request.addressType && request.host == o.request.host &&
           request.port == o.request.port && request.length == o.request.length && reply == o.reply &&
           error == o.error;
  }
};
RequestAnswer requestOf(std::string_view in) {
  RequestAnswer a;
  a.status = socks5::parseRequest(in, a.request, a.reply, a.error);
  if (a.status == socks5::Status::kNeedMore) a = RequestAnswer{socks5::Status::kNeedMore, {}, {}, {}};
  if (a.status == socks5::Status::kOk) {
    a.reply = socks5::Reply::kSucceeded;
    a.error.clear();
  } else if (a.status == socks5::Status::kError) {
    a.request = {};  // what a refused request holds is unspecified
  }
  return a;
}

// Walks every prefix of `in`: NeedMore until some length, then the whole
// input's answer at every length from there on.
template <class Answer, class Parse>
void checkPrefixes(std::string_view in, Parse parse) {
  const Answer whole = parse(in);
  bool answered = false;
  for (std::size_t n = 0; n <= in.size(); ++n) {
    Answer a = parse(in.substr(0, n));
    if (a.status == socks5::Status::kNeedMore) {
      FUZZ_CHECK(!answered);  // an answer never turns back into "need more"
      continue;
    }
    answered = true;
    FUZZ_CHECK(a == whole);
  }
  FUZZ_CHECK(answered == (whole.status != socks5::Status::kNeedMore));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() > 1024) in = in.substr(0, 1024);  // the prefix walks are quadratic
  checkPrefixes<GreetingAnswer>(in, greetingOf);
  GreetingAnswer g = greetingOf(in);
  if (g.status == socks5::Status::kError) FUZZ_CHECK(!g.error.empty());
  if (g.status != socks5::Status::kOk) return 0;
  FUZZ_CHECK(g.length <= in.size());
  std::string_view rest = in.substr(g.length);
  checkPrefixes<RequestAnswer>(rest, requestOf);
  RequestAnswer r = requestOf(rest);
  if (r.status == socks5::Status::kOk) {
    FUZZ_CHECK(r.request.length <= rest.size());
    FUZZ_CHECK(requestOf(rest.substr(0, r.request.length)) == r);  // complete exactly at its own length
    stockade::DerivedRules::Network rules;
    rules.allowedDomains.push_back(stockade::DomainRule{"example.com", std::nullopt});
    (void)decide(rules, r.request.host, r.request.port);
  } else if (r.status == socks5::Status::kError) {
    FUZZ_CHECK(r.reply != socks5::Reply::kSucceeded);
    FUZZ_CHECK(!r.error.empty());
  }
  return 0;
}
