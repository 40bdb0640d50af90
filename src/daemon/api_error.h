// The daemon's error vocabulary: every error reply is {"code", "message"}
// with one of these codes (the seeds' strings, exactly, where the seeds have
// one) and the HTTP status that goes with it (shared/API.md).
#pragma once

#include <string>
#include <string_view>

#include "stockade/error.h"
#include "stockade/workspace.h"

namespace stockade::daemon {

enum class ApiCode {
  kInvalidArgument,        // "invalid_argument" 400: a malformed body, field, query or path parameter
  kInvalidPath,            // "invalid_path" 400: a path outside what the sandbox may name
  kInvalidPolicy,          // "E_SANDBOX_INVALID_POLICY" 400: a policy that does not parse
  kUnauthorized,           // "unauthorized" 401: missing or wrong bearer token
  kPermissionDenied,       // "permission_denied" 403: a request with a refused Origin, a foreign peer
  kNotFound,               // "not_found" 404
  kMethodNotAllowed,       // "method_not_allowed" 405
  kTimeout,                // "timeout" 408: a wait's budget passed; the process keeps running
  kStaleEpoch,             // "stale_epoch" 409: the sandbox was closed
  kConflict,               // "conflict" 409: e.g. a processKey already in use
  kUnsupported,            // "unsupported" 409: not for this process (stdin of one started without it, ...)
  kTooLarge,               // "too_large" 413: a body or header over its limit
  kPolicyConflict,         // "E_SANDBOX_POLICY_CONFLICT" 422: a policy wider than the baseline
  kNarrowingUnsupported,   // "E_SANDBOX_NARROWING_UNSUPPORTED" 422
  kNetworkGrantUnsupported,// "E_SANDBOX_NETWORK_GRANT_UNSUPPORTED" 422
  kPolicyDrift,            // "E_SANDBOX_POLICY_DRIFT" 422: live rules widened since admission
  kNotInitialized,         // "E_SANDBOX_NOT_INITIALIZED" 409: the sandbox is not usable
  kSpawnFailed,            // "E_SANDBOX_SPAWN_FAILED" 422: the child could not start (the message names the step)
  kReleaseFailed,          // "release_failed" 500: a close that did not release; retried by gc
  kInternal,               // "internal" 500: a bug or a host failure; the message says which call
  kNotImplemented,         // "not_implemented" 501
  kUnavailable,            // "unavailable" 503: a limit reached, or shutting down; retry later
  // The workspace's (seeds 000 and 002):
  kIsDirectory,            // "is_directory" 409: a directory where a file is wanted
  kNotDirectory,           // "not_directory" 409: a non-directory where a directory is wanted
  kInvalidArchive,         // "invalid_archive" 400: a tar archive refused, naming the entry
  kNotQuiescent,           // "not_quiescent" 409: the sandbox's processes could not be frozen
  kLimitExceeded,          // "SANDBOX_LIMIT_EXCEEDED" 413: a persist's archive over its limit
  kSandboxConflict,        // "SANDBOX_CONFLICT" 409: a persist or restore already running
  kDataCorrupted,          // "SANDBOX_DATA_CORRUPTED" 422: a stored archive that does not match its checksum
  kFailedOperation,        // "SANDBOX_FAILED_OPERATION" 500: a persist or restore that failed (I/O, its timeout)
};

// Every ApiCode, in declaration order; tests walk it.
inline constexpr ApiCode kAllApiCodes[] = {
    ApiCode::kInvalidArgument,      ApiCode::kInvalidPath,     ApiCode::kInvalidPolicy,
    ApiCode::kUnauthorized,         ApiCode::kPermissionDenied, ApiCode::kNotFound,
    ApiCode::kMethodNotAllowed,     ApiCode::kTimeout,         ApiCode::kStaleEpoch,
    ApiCode::kConflict,             ApiCode::kUnsupported,
    ApiCode::kTooLarge,             ApiCode::kPolicyConflict,  ApiCode::kNarrowingUnsupported,
    ApiCode::kNetworkGrantUnsupported, ApiCode::kPolicyDrift,  ApiCode::kNotInitialized,
    ApiCode::kSpawnFailed,          ApiCode::kReleaseFailed,   ApiCode::kInternal,
    ApiCode::kNotImplemented,       ApiCode::kUnavailable,     ApiCode::kIsDirectory,
    ApiCode::kNotDirectory,         ApiCode::kInvalidArchive,  ApiCode::kNotQuiescent,
    ApiCode::kLimitExceeded,        ApiCode::kSandboxConflict, ApiCode::kDataCorrupted,
    ApiCode::kFailedOperation,
};

std::string_view apiCodeName(ApiCode code) noexcept;  // "invalid_argument", "E_SANDBOX_POLICY_CONFLICT", ...
int apiCodeStatus(ApiCode code) noexcept;            // 400, 422, ...

// The library's SandboxError codes, as the daemon reports them.
ApiCode apiCodeFor(ErrorCode code) noexcept;
// The workspace's codes, as the daemon reports them (the same seed names).
ApiCode apiCodeFor(WorkspaceErrorCode code) noexcept;

struct ApiError {
  ApiCode code = ApiCode::kInternal;
  std::string message;

  int status() const noexcept { return apiCodeStatus(code); }
  // {"code":"...","message":"..."}
  std::string toJson() const;
};

// `s` as a JSON string literal for a message, cut after 128 bytes ("...").
std::string quoteValue(std::string_view s);

// The usual shapes of a 400: `field: message`.
ApiError invalidArgument(std::string_view field, std::string_view message);

}  // namespace stockade::daemon
