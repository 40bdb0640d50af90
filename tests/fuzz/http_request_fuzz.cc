// libFuzzer target: bytes -> the proxy's HTTP parsing (request heads and
// their origin-form rewrite, response heads, chunked bodies) and the host
// decision. Nothing here may crash, hang, leak or throw on any input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/decision.h"
#include "proxy/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  using namespace stockade::proxy;

  std::size_t skip = http::skipLeadingEmptyLines(in);
  std::string_view rest = in.substr(skip);
  if (auto len = http::headLength(rest)) {
    std::string_view head = rest.substr(0, *len);
    http::Request request;
    http::Refusal why;
    if (http::parseRequest(head, request, why)) {
      std::string rewritten = http::originHead(request);
      // The rewrite is itself a valid origin-form head.
      http::Head reparsed;
      if (request.kind == http::Request::Kind::kAbsolute && !http::parseHead(rewritten, reparsed, why)) __builtin_trap();
      stockade::DerivedRules::Network rules;
      rules.allowedDomains.push_back(stockade::DomainRule{"example.com", std::nullopt});
      rules.allowedDomains.push_back(stockade::DomainRule{"127.0.0.1", 80});
      Verdict v = decide(rules, request.host, request.port);
      if (v.allowed()) (void)decideAddress(rules, v, v.host.isAddress ? v.host.text : "10.0.0.1", AddressSource::kResolved);
    } else if (why.status < 400 || why.message.empty()) {
      __builtin_trap();  // every refusal names a 4xx/5xx status and why
    }
    http::ResponseHead response;
    (void)http::parseResponseHead(head, "GET", response, why);
    // What follows the head, read as a chunked body in two pieces.
    std::string_view body = rest.substr(*len);
    http::ChunkedScanner scanner;
    std::size_t half = body.size() / 2;
    auto a = scanner.feed(body.substr(0, half));
    if (a && !scanner.done()) {
      auto b = scanner.feed(body.substr(half));
      if (b && *b > body.size() - half) __builtin_trap();
    } else if (a && *a > half) {
      __builtin_trap();
    }
    // Skipping chunk data unscanned, as the proxy does when it splices it,
    // ends (or refuses) the body exactly where feeding all of it does.
    http::ChunkedScanner fed, skipping;
    auto whole = fed.feed(body);
    std::size_t pos = 0;
    bool ok = true;
    while (pos < body.size() && !skipping.done()) {
      if (std::uint64_t d = skipping.dataRemaining(); d > 0) {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(d, body.size() - pos));
        skipping.skipData(n);
        pos += n;
        continue;
      }
      auto n = skipping.feed(body.substr(pos, 1));
      if (!n) {
        ok = false;
        break;
      }
      pos += *n;
    }
    if (whole.has_value() != ok || skipping.done() != fed.done()) __builtin_trap();
    if (whole && (fed.done() ? pos != *whole : pos != body.size())) __builtin_trap();
  }
  (void)normaliseHost(in.substr(0, 300));
  return 0;
}
