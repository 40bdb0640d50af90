#include "src/daemon/routes.h"

#include <vector>

namespace stockade::daemon {

namespace {

using M = Method;
using A = Access;
using B = BodyKind;
using R = ReplyKind;

// The first route of the request's method whose pattern fits wins. Where a
// literal and a parameter share a depth (".../processes/run" beside
// ".../processes/{pid}"), they are served under different methods, so no
// path fits two routes of one method (tests/unit/daemon/routes_test.cc).
constexpr Route kRoutes[] = {
    {M::kGet, "/v1/health", RouteId::kHealth, A::kPublic, B::kNone, R::kJson,
     "daemon status and the kernel features it detected"},
    {M::kPost, "/v1/sandboxes", RouteId::kCreateSandbox, A::kToken, B::kJson, R::kJson,
     "create a sandbox under a policy that narrows the daemon's baseline"},
    {M::kGet, "/v1/sandboxes", RouteId::kListSandboxes, A::kToken, B::kNone, R::kJson,
     "list the sandboxes not yet released"},
    {M::kGet, "/v1/sandboxes/{id}", RouteId::kGetSandbox, A::kToken, B::kNone, R::kJson,
     "one sandbox: its epoch, state and live derived rules"},
    {M::kPost, "/v1/sandboxes/{id}/narrow", RouteId::kNarrowSandbox, A::kToken, B::kJson, R::kJson,
     "narrow this sandbox's live policy"},
    {M::kDelete, "/v1/sandboxes/{id}", RouteId::kDeleteSandbox, A::kToken, B::kNone, R::kJson,
     "close a sandbox: kill its processes, release it, make its epoch stale"},
    {M::kPost, "/v1/sandboxes/{id}/terminate", RouteId::kTerminate, A::kToken, B::kJson, R::kJson,
     "kill the process group started under a processKey and confirm it is gone"},
    {M::kPost, "/v1/sandboxes/{id}/processes", RouteId::kStartProcess, A::kToken, B::kJson, R::kJson,
     "start a detached process"},
    {M::kPost, "/v1/sandboxes/{id}/processes/run", RouteId::kRunProcess, A::kToken, B::kJson, R::kJson,
     "run a process, wait for it and return its output"},
    {M::kGet, "/v1/sandboxes/{id}/processes", RouteId::kListProcesses, A::kToken, B::kNone, R::kJson,
     "list the sandbox's processes"},
    {M::kGet, "/v1/sandboxes/{id}/processes/{pid}", RouteId::kGetProcess, A::kToken, B::kNone, R::kJson,
     "one process"},
    {M::kGet, "/v1/sandboxes/{id}/processes/{pid}/logs", RouteId::kProcessLogs, A::kToken, B::kNone, R::kJson,
     "a page of a process's output, from a cursor"},
    {M::kGet, "/v1/sandboxes/{id}/processes/{pid}/logs/stream", RouteId::kProcessLogStream, A::kToken, B::kNone,
     R::kStream, "a process's output as it comes (chunked NDJSON), from a cursor, until its end"},
    {M::kPost, "/v1/sandboxes/{id}/processes/{pid}/wait", RouteId::kWaitProcess, A::kToken, B::kJson, R::kJson,
     "wait for a process to end"},
    {M::kPost, "/v1/sandboxes/{id}/processes/{pid}/kill", RouteId::kKillProcess, A::kToken, B::kJson, R::kJson,
     "signal every process of the process's sandbox, escalating if anything is left"},
    {M::kPost, "/v1/sandboxes/{id}/processes/{pid}/stdin", RouteId::kProcessStdin, A::kToken, B::kJson, R::kJson,
     "write to a process's open stdin, or close it"},
    {M::kDelete, "/v1/sandboxes/{id}/processes/{pid}", RouteId::kDeleteProcess, A::kToken, B::kNone, R::kJson,
     "stop a process if it runs and forget it and its output"},
    {M::kPost, "/v1/sandboxes/{id}/sessions", RouteId::kCreateSession, A::kToken, B::kJson, R::kJson,
     "create a persistent shell"},
    {M::kGet, "/v1/sandboxes/{id}/sessions/{sid}", RouteId::kGetSession, A::kToken, B::kNone, R::kJson,
     "a session's shell process, with its current directory"},
    {M::kPost, "/v1/sandboxes/{id}/sessions/{sid}/run", RouteId::kSessionRun, A::kToken, B::kJson, R::kJson,
     "run a command in the session's shell and wait for it"},
    {M::kPost, "/v1/sandboxes/{id}/sessions/{sid}/start", RouteId::kSessionStart, A::kToken, B::kJson, R::kJson,
     "queue a command in the session's shell"},
    {M::kDelete, "/v1/sandboxes/{id}/sessions/{sid}", RouteId::kDeleteSession, A::kToken, B::kNone, R::kJson,
     "end a session's shell and forget its commands"},
    {M::kPost, "/v1/sandboxes/{id}/ptys", RouteId::kStartPty, A::kToken, B::kJson, R::kJson,
     "start a process on a pseudo-terminal"},
    {M::kGet, "/v1/sandboxes/{id}/ptys/{pid}/attach", RouteId::kAttachPty, A::kToken, B::kNone, R::kWebSocket,
     "attach to a PTY process: a WebSocket, binary frames both ways"},
    {M::kPost, "/v1/sandboxes/{id}/ptys/{pid}/resize", RouteId::kResizePty, A::kToken, B::kJson, R::kJson,
     "set a PTY process's window size"},
    {M::kPost, "/v1/sandboxes/{id}/code", RouteId::kRunCode, A::kToken, B::kJson, R::kJson,
     "run code in the sandbox's kernel, which keeps its state across calls (seed 002's runCode)"},
    {M::kPut, "/v1/sandboxes/{id}/files", RouteId::kUploadFile, A::kToken, B::kRaw, R::kJson,
     "create or replace a file of the workspace with the body's bytes (atomically)"},
    {M::kGet, "/v1/sandboxes/{id}/files", RouteId::kDownloadFile, A::kToken, B::kNone, R::kBytes,
     "a file of the workspace, as raw bytes"},
    {M::kDelete, "/v1/sandboxes/{id}/files", RouteId::kRemoveFile, A::kToken, B::kNone, R::kJson,
     "remove a file, a symlink or a directory tree of the workspace"},
    {M::kGet, "/v1/sandboxes/{id}/files/list", RouteId::kListFiles, A::kToken, B::kNone, R::kJson,
     "the names in a directory of the workspace"},
    {M::kGet, "/v1/sandboxes/{id}/files/exists", RouteId::kFileExists, A::kToken, B::kNone, R::kJson,
     "whether anything is at a path of the workspace"},
    {M::kPost, "/v1/sandboxes/{id}/files/mkdir", RouteId::kMakeDir, A::kToken, B::kJson, R::kJson,
     "create a directory of the workspace and its missing parents"},
    {M::kGet, "/v1/sandboxes/{id}/files/watch", RouteId::kWatchFiles, A::kToken, B::kNone, R::kStream,
     "changes beneath a directory of the workspace as they happen (chunked NDJSON)"},
    {M::kGet, "/v1/sandboxes/{id}/tree", RouteId::kExportTree, A::kToken, B::kNone, R::kBytes,
     "the workspace (or a directory of it) as a tar archive"},
    {M::kPut, "/v1/sandboxes/{id}/tree", RouteId::kImportTree, A::kToken, B::kRaw, R::kJson,
     "extract a tar archive into the workspace, strictly; a refused archive changes nothing"},
    {M::kPost, "/v1/sandboxes/{id}/persist", RouteId::kPersist, A::kToken, B::kJson, R::kJson,
     "save a project directory of the workspace as a checkpoint"},
    {M::kPost, "/v1/sandboxes/{id}/restore", RouteId::kRestore, A::kToken, B::kJson, R::kJson,
     "replace a project directory with its verified checkpoint"},
    {M::kPost, "/v1/sandboxes/{id}/snapshots", RouteId::kCreateSnapshot, A::kToken, B::kJson, R::kJson,
     "capture the workspace with the sandbox's processes frozen, under an operation key"},
    {M::kGet, "/v1/snapshots", RouteId::kLookupSnapshot, A::kToken, B::kNone, R::kJson,
     "the snapshot taken under an operation key"},
};

bool isIdChar(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':';
}

bool isId(std::string_view s) noexcept {
  if (s.empty() || s.size() > 128 || s == "." || s == "..") return false;
  for (char c : s)
    if (!isIdChar(c)) return false;
  return true;
}

// Splits "/a/b/c" into {"a","b","c"}; false when the path does not start
// with '/' or has an empty segment ("//", a trailing '/').
bool segments(std::string_view path, std::vector<std::string_view>& out) {
  if (path.empty() || path.front() != '/') return false;
  path.remove_prefix(1);
  while (true) {
    auto slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    if (seg.empty()) return false;
    out.push_back(seg);
    if (slash == std::string_view::npos) return true;
    path.remove_prefix(slash + 1);
  }
}

enum class Fit { kNo, kYes, kBadParam };

// Matches `path` segments against one pattern, filling params.
Fit fit(std::string_view pattern, const std::vector<std::string_view>& path, RouteMatch& match,
        std::string& badParam) {
  std::vector<std::string_view> pat;
  segments(pattern, pat);
  if (pat.size() != path.size()) return Fit::kNo;
  std::string firstBad;
  for (std::size_t i = 0; i < pat.size(); ++i) {
    if (pat[i].front() == '{') {
      std::string name(pat[i].substr(1, pat[i].size() - 2));
      if (!isId(path[i]) && firstBad.empty()) firstBad = name;
      match.params[name] = std::string(path[i]);
    } else if (pat[i] != path[i]) {
      return Fit::kNo;
    }
  }
  if (!firstBad.empty()) {
    badParam = firstBad;
    return Fit::kBadParam;
  }
  return Fit::kYes;
}

int hexValue(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes one query component; false on a bad escape, or a NUL
// unless `nulAllowed`.
bool decodeComponent(std::string_view in, std::string& out, bool nulAllowed) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = hexValue(in[i + 1]), lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0' && !nulAllowed) return false;
      out += decoded;
      i += 2;
    } else {
      out += c;
    }
  }
  return true;
}

}  // namespace

std::string_view methodName(Method m) noexcept {
  switch (m) {
    case Method::kGet: return "GET";
    case Method::kPost: return "POST";
    case Method::kPut: return "PUT";
    case Method::kDelete: return "DELETE";
  }
  return "?";
}

std::optional<Method> parseMethod(std::string_view text) noexcept {
  if (text == "GET") return Method::kGet;
  if (text == "POST") return Method::kPost;
  if (text == "PUT") return Method::kPut;
  if (text == "DELETE") return Method::kDelete;
  return std::nullopt;
}

std::span<const Route> routes() noexcept { return kRoutes; }

std::string_view RouteMatch::param(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string_view{} : std::string_view(it->second);
}

std::variant<RouteMatch, ApiError> matchRoute(RouteTable table, Method method, std::string_view path) {
  std::vector<std::string_view> segs;
  if (!segments(path, segs))
    return ApiError{ApiCode::kNotFound, "no route for " + quoteValue(path) + "; see docs/api.md"};
  bool otherMethod = false;
  for (const Route& r : table) {
    RouteMatch m;
    std::string bad;
    Fit f = fit(r.pattern, segs, m, bad);
    if (f == Fit::kNo) continue;
    if (r.method != method) {
      otherMethod = true;
      continue;
    }
    if (f == Fit::kBadParam)
      return invalidArgument("path parameter {" + bad + "}",
                             quoteValue(m.param(bad)) + " is not an id; ids are 1-128 bytes of [A-Za-z0-9_.:-]");
    m.route = &r;
    return m;
  }
  if (otherMethod)
    return ApiError{ApiCode::kMethodNotAllowed, std::string(methodName(method)) + " is not served on " + quoteValue(path) + "; allowed: " + allowedMethods(table, path)};
  return ApiError{ApiCode::kNotFound, "no route for " + quoteValue(path) + "; see docs/api.md"};
}

std::string allowedMethods(RouteTable table, std::string_view path) {
  std::vector<std::string_view> segs;
  std::string out;
  if (!segments(path, segs)) return out;
  for (const Route& r : table) {
    RouteMatch m;
    std::string bad;
    if (fit(r.pattern, segs, m, bad) == Fit::kNo) continue;
    std::string_view name = methodName(r.method);
    if (out.find(name) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

Target splitTarget(std::string_view target) noexcept {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

std::variant<Query, ApiError> parseQuery(std::string_view query) {
  Query out;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string key, value;
    if (!decodeComponent(pair.substr(0, eq), key, false))
      return invalidArgument("query", quoteValue(pair) + " has a bad %-escape or a NUL byte in its name");
    if (eq != std::string_view::npos && !decodeComponent(pair.substr(eq + 1), value, true))
      return invalidArgument("query." + key, "bad %-escape");
    if (out.count(key)) return invalidArgument("query." + key, "given more than once; give it once");
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

}  // namespace stockade::daemon
