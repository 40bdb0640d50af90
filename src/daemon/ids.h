// Ids the daemon hands out: a prefix and 128 random bits (getrandom(2)) in
// hex, unique across restarts and machines without coordination
// ("sb_6f1c...", 35 bytes).
#pragma once

#include <string>
#include <string_view>

namespace stockade::daemon {

// Throws std::runtime_error when the kernel's random source fails.
std::string newId(std::string_view prefix);

}  // namespace stockade::daemon
