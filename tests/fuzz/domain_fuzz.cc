// libFuzzer target: domain patterns and host/IP canonicalisation
// (policy/domain.h, DomainRule). The input is split at the first newline into
// two texts. Invariants, beyond "no crash":
//   - canonicalIp() is idempotent, and its output is never a host name;
//   - normaliseHostName() is idempotent;
//   - a parsed pattern's text() parses back to the same rule;
//   - a rule is within itself, and within() agrees with matches(): when rule
//     a lies within rule b, every destination a matches is matched by b;
//   - a parsed rule's host is canonical: an address in canonical text, or a
//     normalised name that does not look numeric.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fuzz_check.h"
#include "policy/domain.h"

namespace {

using stockade::DomainRule;
namespace policy = stockade::policy;

void checkHost(std::string_view text) {
  if (auto ip = policy::canonicalIp(text)) {
    FUZZ_CHECK(policy::canonicalIp(*ip) == *ip);
    FUZZ_CHECK(!policy::normaliseHostName(*ip) || policy::looksNumeric(*ip));
  }
  if (auto name = policy::normaliseHostName(text)) {
    FUZZ_CHECK(policy::normaliseHostName(*name) == *name);
  }
}

// Destinations a rule matches, to test within() against matches().
std::vector<std::pair<std::string, std::uint16_t>> samples(const DomainRule& r) {
  std::uint16_t port = r.port.value_or(443);
  std::vector<std::pair<std::string, std::uint16_t>> out;
  if (r.isWildcard()) {
    std::string suffix = r.host.substr(1);  // ".example.com"
    out.push_back({"a" + suffix, port});
    out.push_back({"x.y" + suffix, port});
  } else {
    out.push_back({r.host, port});
  }
  if (!r.port) out.push_back({out.front().first, 80});
  return out;
}

std::optional<DomainRule> parse(std::string_view text) {
  auto parsed = policy::parseDomainPattern(text);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    FUZZ_CHECK(!why->empty());
    return std::nullopt;
  }
  DomainRule r = std::get<DomainRule>(parsed);
  auto again = policy::parseDomainPattern(r.text());
  FUZZ_CHECK(std::holds_alternative<DomainRule>(again));
  FUZZ_CHECK(std::get<DomainRule>(again) == r);
  FUZZ_CHECK(r.within(r));
  if (auto ip = policy::canonicalIp(r.host)) {
    FUZZ_CHECK(*ip == r.host);
  } else {
    std::string_view name = r.host;
    if (r.isWildcard()) name.remove_prefix(2);
    FUZZ_CHECK(policy::normaliseHostName(name) == std::string(name));
    FUZZ_CHECK(!policy::looksNumeric(name));
  }
  for (const auto& [host, port] : samples(r)) FUZZ_CHECK(r.matches(host, port));
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t nl = in.find('\n');
  std::string_view first = in.substr(0, nl);
  std::string_view second = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  checkHost(first);
  checkHost(second);
  auto a = parse(first);
  auto b = parse(second);
  if (a && b) {
    if (a->within(*b)) {
      for (const auto& [host, port] : samples(*a)) FUZZ_CHECK(b->matches(host, port));
    }
    if (a->within(*b) && b->within(*a)) FUZZ_CHECK(*a == *b);
  }
  return 0;
}
