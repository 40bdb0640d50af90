#include "stockade/version.h"

namespace stockade {
std::string_view version() noexcept { return "0.1.0"; }
}  // namespace stockade
