// Standard base64 (RFC 4648, with padding), for stdin data and log frames.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stockade::daemon {

std::string base64Encode(std::string_view bytes);
// Strict: only the standard alphabet, padding only at the end and required,
// no whitespace. nullopt for anything else.
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace stockade::daemon
