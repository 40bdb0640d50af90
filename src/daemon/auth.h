// Who may talk to the daemon: the bearer token and the Origin check, as pure
// functions of the request's headers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/daemon/api_error.h"

namespace stockade::daemon {

// Compares in time that depends only on the lengths, never on where the
// first difference is.
bool constantTimeEqual(std::string_view a, std::string_view b) noexcept;

struct AuthPolicy {
  // The token every request but /v1/health must carry. nullopt: none is
  // configured (a unix socket without --token-file: the socket's mode and
  // the peer's uid are the only guard).
  std::optional<std::string> token;
  // Origins a request may carry (exact, e.g. "http://localhost:3000").
  // Browsers send Origin; a page must not reach a loopback API by DNS
  // rebinding, so any other Origin is refused.
  std::vector<std::string> allowedOrigins;
};

// nullopt when the request may proceed; otherwise the 401/403 to send.
// `authorization` and `origin` are the header values, nullopt when absent.
std::optional<ApiError> checkOrigin(const AuthPolicy& policy, std::optional<std::string_view> origin);
std::optional<ApiError> checkToken(const AuthPolicy& policy, std::optional<std::string_view> authorization);

// Reads a token file: its first line, trailing whitespace removed. The file
// must be a regular file not readable or writable by group or others, and
// the token 16 to 4096 printable ASCII bytes. The error names the file.
std::variant<std::string, std::string> readTokenFile(const std::string& path);

}  // namespace stockade::daemon
