#include "policy/text.h"

#include <nlohmann/json.hpp>

namespace stockade::policy {

std::string quote(std::string_view s) {
  // Replace invalid UTF-8 rather than throw: messages quote untrusted bytes.
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool isEnvName(std::string_view name) noexcept {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace stockade::policy
