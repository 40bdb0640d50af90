// Reading workspace results in tests: the code of a result ("ok" on
// success), its message, and a sink that keeps what it is given.
#pragma once

#include <string>
#include <type_traits>

#include "stockade/workspace.h"

namespace stockade::testing {

// The code of an error result, or "ok".
template <typename R>
std::string codeOf(const R& r) {
  if constexpr (std::is_same_v<R, WorkspaceStatus>) {
    return r ? std::string(r->codeName()) : "ok";
  } else {
    auto* e = std::get_if<WorkspaceError>(&r);
    return e ? std::string(e->codeName()) : "ok";
  }
}
template <typename R>
std::string messageOf(const R& r) {
  if constexpr (std::is_same_v<R, WorkspaceStatus>) {
    return r ? r->message : "";
  } else {
    auto* e = std::get_if<WorkspaceError>(&r);
    return e ? e->message : "";
  }
}

// A ByteSink into memory.
class StringSink final : public ByteSink {
 public:
  WorkspaceStatus write(std::string_view bytes) override {
    out.append(bytes);
    return std::nullopt;
  }
  std::string out;
};

}  // namespace stockade::testing
