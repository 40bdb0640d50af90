#include "stockade/version.h"

namespace stockade {
// STOCKADE_VERSION is the CMake project's VERSION (src/CMakeLists.txt).
std::string_view version() noexcept { return STOCKADE_VERSION; }
}  // namespace stockade
