// Public error vocabulary of stockade. The code names are the seeds' strings,
// exactly (shared/seeds/001_*): host applications match on them.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace stockade {

enum class ErrorCode {
  kInvalidPolicy,              // E_SANDBOX_INVALID_POLICY
  kPolicyConflict,             // E_SANDBOX_POLICY_CONFLICT
  kNarrowingUnsupported,       // E_SANDBOX_NARROWING_UNSUPPORTED
  kNetworkGrantUnsupported,    // E_SANDBOX_NETWORK_GRANT_UNSUPPORTED
  kPolicyDrift,                // E_SANDBOX_POLICY_DRIFT
  kNotInitialized,             // E_SANDBOX_NOT_INITIALIZED
  kSpawnFailed,                // E_SANDBOX_SPAWN_FAILED
};

// Every ErrorCode, in declaration order; tests walk it.
inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::kInvalidPolicy,        ErrorCode::kPolicyConflict,
    ErrorCode::kNarrowingUnsupported, ErrorCode::kNetworkGrantUnsupported,
    ErrorCode::kPolicyDrift,          ErrorCode::kNotInitialized,
    ErrorCode::kSpawnFailed,
};

// The public string for `code`, e.g. "E_SANDBOX_POLICY_CONFLICT".
std::string_view errorCodeName(ErrorCode code) noexcept;

// Thrown by the public API for refusals a host application is expected to
// handle. Caller bugs throw std::invalid_argument instead.
class SandboxError : public std::runtime_error {
 public:
  SandboxError(ErrorCode code, const std::string& message)
      : std::runtime_error(std::string(errorCodeName(code)) + ": " + message),
        code_(code) {}
  ErrorCode code() const noexcept { return code_; }
  std::string_view codeName() const noexcept { return errorCodeName(code_); }

 private:
  ErrorCode code_;
};

}  // namespace stockade
