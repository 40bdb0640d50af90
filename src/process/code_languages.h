// The languages a code kernel runs (code_kernel.h), shared with the
// daemon's request decoding (src/daemon/requests.h), which names them when
// it refuses another.
#pragma once

#include <string_view>

namespace stockade::process {

inline constexpr std::string_view kCodeLanguages[] = {"python"};

}  // namespace stockade::process
