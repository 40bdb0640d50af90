// libFuzzer target: bytes -> the proxy's SOCKS5 greeting and request parsing,
// fed the way a connection delivers them (greeting first, then the request).
// Nothing here may crash, hang, leak or throw on any input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/decision.h"
#include "proxy/socks5.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  using namespace stockade::proxy;
  socks5::Greeting greeting;
  std::string error;
  auto st = socks5::parseGreeting(in, greeting, error);
  if (st != socks5::Status::kOk) return 0;
  if (greeting.length > in.size()) __builtin_trap();
  std::string_view rest = in.substr(greeting.length);
  // Every prefix of the request either needs more, or gives the same answer.
  for (std::size_t n = 0; n <= rest.size(); ++n) {
    socks5::Request request;
    socks5::Reply reply = socks5::Reply::kSucceeded;
    auto rs = socks5::parseRequest(rest.substr(0, n), request, reply, error);
    if (rs == socks5::Status::kNeedMore) continue;
    if (rs == socks5::Status::kOk) {
      if (request.length != n) __builtin_trap();  // complete exactly at its own length
      stockade::DerivedRules::Network rules;
      rules.allowedDomains.push_back(stockade::DomainRule{"example.com", std::nullopt});
      (void)decide(rules, request.host, request.port);
    } else if (reply == socks5::Reply::kSucceeded || error.empty()) {
      __builtin_trap();
    }
    break;
  }
  return 0;
}
