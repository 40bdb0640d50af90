#include "src/audit/event.h"

#include <ctime>

namespace stockade::audit {

std::string timestamp(Clock::time_point when) {
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  long fraction = static_cast<long>(millis % 1000);
  if (fraction < 0) {  // before 1970: floor, not truncation
    fraction += 1000;
    --seconds;
  }
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[40];
  std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03ldZ", fraction);
  return text;
}

std::string line(std::string_view event, nlohmann::json fields, Clock::time_point when) {
  nlohmann::json j = fields.is_object() ? std::move(fields) : nlohmann::json::object();
  j["time"] = timestamp(when);
  j["event"] = std::string(event);
  // ensure_ascii: every control character and every code point >= 0x7f is
  // written as \uXXXX (DEL, C1 controls, U+2028 line separators included).
  return j.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
}

std::string printable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() + 2);
  out += '"';
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += '"';
  return out;
}

nlohmann::json policyNotes(const SandboxPolicy& policy) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : policy.notes())
    out.push_back({{"kind", n.kind == PolicyNote::Kind::kNotApplicable ? "not-applicable" : "stronger"},
                   {"path", n.path},
                   {"why", n.why}});
  return out;
}

}  // namespace stockade::audit
