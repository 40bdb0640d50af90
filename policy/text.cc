#include "policy/text.h"

#include <nlohmann/json.hpp>

namespace stockade::policy {

std::string quote(std::string_view s) {
  // Replace invalid UTF-8 rather than throw: messages quote untrusted bytes.
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace stockade::policy
