// Text helpers for error messages.
#pragma once

#include <string>
#include <string_view>

namespace stockade::policy {

// `s` as a JSON string literal, so a message shows control and odd bytes
// unambiguously: quote("a\"b") == "\"a\\\"b\"".
std::string quote(std::string_view s);

// True for a shell variable name: [A-Za-z_][A-Za-z0-9_]*.
bool isEnvName(std::string_view name) noexcept;

}  // namespace stockade::policy
