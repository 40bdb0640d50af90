#include "stockade/error.h"

namespace stockade {

std::string_view errorCodeName(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidPolicy: return "E_SANDBOX_INVALID_POLICY";
    case ErrorCode::kPolicyConflict: return "E_SANDBOX_POLICY_CONFLICT";
    case ErrorCode::kNarrowingUnsupported: return "E_SANDBOX_NARROWING_UNSUPPORTED";
    case ErrorCode::kNetworkGrantUnsupported: return "E_SANDBOX_NETWORK_GRANT_UNSUPPORTED";
    case ErrorCode::kPolicyDrift: return "E_SANDBOX_POLICY_DRIFT";
    case ErrorCode::kNotInitialized: return "E_SANDBOX_NOT_INITIALIZED";
    case ErrorCode::kSpawnFailed: return "E_SANDBOX_SPAWN_FAILED";
  }
  return "E_SANDBOX_UNKNOWN";
}

}  // namespace stockade
