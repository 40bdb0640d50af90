#include "src/daemon/api_error.h"

#include <nlohmann/json.hpp>

#include "policy/text.h"

namespace stockade::daemon {

namespace {

struct CodeInfo {
  std::string_view name;
  int status;
};

constexpr CodeInfo info(ApiCode code) noexcept {
  switch (code) {
    case ApiCode::kInvalidArgument: return {"invalid_argument", 400};
    case ApiCode::kInvalidPath: return {"invalid_path", 400};
    case ApiCode::kInvalidPolicy: return {"E_SANDBOX_INVALID_POLICY", 400};
    case ApiCode::kUnauthorized: return {"unauthorized", 401};
    case ApiCode::kPermissionDenied: return {"permission_denied", 403};
    case ApiCode::kNotFound: return {"not_found", 404};
    case ApiCode::kMethodNotAllowed: return {"method_not_allowed", 405};
    case ApiCode::kTimeout: return {"timeout", 408};
    case ApiCode::kStaleEpoch: return {"stale_epoch", 409};
    case ApiCode::kConflict: return {"conflict", 409};
    case ApiCode::kUnsupported: return {"unsupported", 409};
    case ApiCode::kTooLarge: return {"too_large", 413};
    case ApiCode::kPolicyConflict: return {"E_SANDBOX_POLICY_CONFLICT", 422};
    case ApiCode::kNarrowingUnsupported: return {"E_SANDBOX_NARROWING_UNSUPPORTED", 422};
    case ApiCode::kNetworkGrantUnsupported: return {"E_SANDBOX_NETWORK_GRANT_UNSUPPORTED", 422};
    case ApiCode::kPolicyDrift: return {"E_SANDBOX_POLICY_DRIFT", 422};
    case ApiCode::kNotInitialized: return {"E_SANDBOX_NOT_INITIALIZED", 409};
    case ApiCode::kSpawnFailed: return {"E_SANDBOX_SPAWN_FAILED", 422};
    case ApiCode::kReleaseFailed: return {"release_failed", 500};
    case ApiCode::kInternal: return {"internal", 500};
    case ApiCode::kNotImplemented: return {"not_implemented", 501};
    case ApiCode::kUnavailable: return {"unavailable", 503};
    case ApiCode::kIsDirectory: return {"is_directory", 409};
    case ApiCode::kNotDirectory: return {"not_directory", 409};
    case ApiCode::kInvalidArchive: return {"invalid_archive", 400};
    case ApiCode::kNotQuiescent: return {"not_quiescent", 409};
    case ApiCode::kLimitExceeded: return {"SANDBOX_LIMIT_EXCEEDED", 413};
    case ApiCode::kSandboxConflict: return {"SANDBOX_CONFLICT", 409};
    case ApiCode::kDataCorrupted: return {"SANDBOX_DATA_CORRUPTED", 422};
    case ApiCode::kFailedOperation: return {"SANDBOX_FAILED_OPERATION", 500};
  }
  return {"internal", 500};
}

}  // namespace

std::string_view apiCodeName(ApiCode code) noexcept { return info(code).name; }
int apiCodeStatus(ApiCode code) noexcept { return info(code).status; }

ApiCode apiCodeFor(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidPolicy: return ApiCode::kInvalidPolicy;
    case ErrorCode::kPolicyConflict: return ApiCode::kPolicyConflict;
    case ErrorCode::kNarrowingUnsupported: return ApiCode::kNarrowingUnsupported;
    case ErrorCode::kNetworkGrantUnsupported: return ApiCode::kNetworkGrantUnsupported;
    case ErrorCode::kPolicyDrift: return ApiCode::kPolicyDrift;
    case ErrorCode::kNotInitialized: return ApiCode::kNotInitialized;
    case ErrorCode::kSpawnFailed: return ApiCode::kSpawnFailed;
  }
  return ApiCode::kInternal;
}

ApiCode apiCodeFor(WorkspaceErrorCode code) noexcept {
  using W = WorkspaceErrorCode;
  switch (code) {
    case W::kInvalidPath: return ApiCode::kInvalidPath;
    case W::kNotFound: return ApiCode::kNotFound;
    case W::kIsDirectory: return ApiCode::kIsDirectory;
    case W::kNotDirectory: return ApiCode::kNotDirectory;
    case W::kTooLarge: return ApiCode::kTooLarge;
    case W::kPermissionDenied: return ApiCode::kPermissionDenied;
    case W::kInvalidArchive: return ApiCode::kInvalidArchive;
    case W::kStaleEpoch: return ApiCode::kStaleEpoch;
    case W::kUnavailable: return ApiCode::kUnavailable;
    case W::kTimeout: return ApiCode::kTimeout;
    case W::kNotQuiescent: return ApiCode::kNotQuiescent;
    case W::kLimitExceeded: return ApiCode::kLimitExceeded;
    case W::kConflict: return ApiCode::kSandboxConflict;
    case W::kDataCorrupted: return ApiCode::kDataCorrupted;
    case W::kFailedOperation: return ApiCode::kFailedOperation;
  }
  return ApiCode::kInternal;
}

std::string ApiError::toJson() const {
  // Messages quote client bytes; replace invalid UTF-8 rather than throw.
  return nlohmann::json{{"code", apiCodeName(code)}, {"message", message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string quoteValue(std::string_view s) {
  constexpr std::size_t kMax = 128;
  if (s.size() <= kMax) return policy::quote(s);
  return policy::quote(s.substr(0, kMax)) + "...";
}

ApiError invalidArgument(std::string_view field, std::string_view message) {
  std::string text;
  if (!field.empty()) {
    text.append(field);
    text.append(": ");
  }
  text.append(message);
  return ApiError{ApiCode::kInvalidArgument, std::move(text)};
}

}  // namespace stockade::daemon
