// The daemon's routes as a table, apart from the server: matching a method
// and a path to a route and its parameters is a pure function. The table is
// the source of truth for what the daemon serves (docs/openapi.json is
// checked against it by a test).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "src/daemon/api_error.h"

namespace stockade::daemon {

enum class Method { kGet, kPost, kPut, kDelete };
std::string_view methodName(Method m) noexcept;  // "GET", ...
// nullopt for any other method (HEAD, PATCH, OPTIONS, ...).
std::optional<Method> parseMethod(std::string_view text) noexcept;

enum class RouteId {
  kHealth,
  kCreateSandbox,
  kListSandboxes,
  kGetSandbox,
  kNarrowSandbox,
  kDeleteSandbox,
  kStartProcess,
  kRunProcess,
  kListProcesses,
  kGetProcess,
  kProcessLogs,
  kProcessLogStream,
  kWaitProcess,
  kKillProcess,
  kProcessStdin,
  kDeleteProcess,
  kTerminate,
  kCreateSession,
  kGetSession,
  kSessionRun,
  kSessionStart,
  kDeleteSession,
  kStartPty,
  kAttachPty,
  kResizePty,
  kRunCode,
  kUploadFile,
  kDownloadFile,
  kRemoveFile,
  kListFiles,
  kFileExists,
  kMakeDir,
  kWatchFiles,
  kExportTree,
  kImportTree,
  kPersist,
  kRestore,
  kCreateSnapshot,
  kLookupSnapshot,
};

// Who may call a route.
enum class Access {
  kPublic,  // no token (only /v1/health)
  kToken,   // Authorization: Bearer <token>
};

// How the server reads a request's body before handing it over.
enum class BodyKind {
  kNone,  // any body is refused (400)
  kJson,  // buffered whole, up to the JSON body limit, then decoded (requests.h)
  kRaw,   // streamed to the route as it arrives (Request::rawBody: file uploads,
          // tar trees), up to ServerLimits::maxRawBodyBytes, in bounded memory
};

// How a route replies.
enum class ReplyKind {
  kJson,       // one JSON body (or 204)
  kStream,     // chunked application/x-ndjson
  kBytes,      // raw bytes as they are read (a file, a tar archive), in bounded memory
  kWebSocket,  // upgrade to a WebSocket, binary frames both ways
};

struct Route {
  Method method;
  std::string_view pattern;  // "/v1/sandboxes/{id}/processes/{pid}": {name} matches one segment
  RouteId id;
  Access access;
  BodyKind body;
  ReplyKind reply;
  std::string_view summary;  // one line for docs and `--help`
};

// Every route the daemon serves.
std::span<const Route> routes() noexcept;
using RouteTable = std::span<const Route>;

struct RouteMatch {
  const Route* route = nullptr;
  std::map<std::string, std::string, std::less<>> params;  // {id} -> "sb_..."
  std::string_view param(std::string_view name) const;  // "" when absent
};

// Matches the path (no query string) against the table. Errors: 404
// not_found when no pattern matches, 405 method_not_allowed when a pattern
// matches under another method, 400 invalid_argument when a parameter is
// not an id ([A-Za-z0-9_.:-], 1-128 bytes, not "." or "..").
std::variant<RouteMatch, ApiError> matchRoute(RouteTable table, Method method, std::string_view path);

// The methods a path is served under, "GET, POST" (for a 405's Allow header).
std::string allowedMethods(RouteTable table, std::string_view path);

// Splits a request target "/path?query" into its parts.
struct Target {
  std::string_view path;
  std::string_view query;  // without '?'
};
Target splitTarget(std::string_view target) noexcept;

using Query = std::map<std::string, std::string, std::less<>>;

// Parses "a=1&b=x%20y": percent-decoding, '+' as a space. A repeated key,
// a bad escape or a NUL byte in a key is an error naming the key. A NUL byte
// in a value is kept: its decoder judges it (requests.h; a sandbox path
// holding one is invalid_path).
std::variant<Query, ApiError> parseQuery(std::string_view query);

}  // namespace stockade::daemon
