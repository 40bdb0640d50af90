// Text helpers for error messages.
#pragma once

#include <string>
#include <string_view>

namespace stockade::policy {

// `s` as a JSON string literal, so a message shows control and odd bytes
// unambiguously: quote("a\"b") == "\"a\\\"b\"".
std::string quote(std::string_view s);

}  // namespace stockade::policy
