#pragma once
#include <string_view>

namespace stockade {
// The stockade release, "MAJOR.MINOR.PATCH".
std::string_view version() noexcept;
}  // namespace stockade
