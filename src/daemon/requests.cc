#include "src/daemon/requests.h"

#include <cctype>
#include <csignal>

#include "policy/text.h"
#include "src/daemon/base64.h"
#include "src/daemon/json_body.h"

namespace stockade::daemon {

using nlohmann::json;

namespace {

// Milliseconds: a deadline up to about 24 days (what a poll() timeout holds).
constexpr std::uint64_t kMaxMillis = 2'000'000'000;
constexpr std::size_t kMaxNameBytes = 256;
constexpr std::size_t kMaxKeyBytes = 512;

// An absent or empty body reads as {} when every field is optional.
enum class EmptyBody { kIsEmptyObject, kRefused };

// Parses the body as a JSON object and hands a FieldReader to `read`, which
// fills `out`; then checks for unknown fields.
template <class T, class Fn>
Decoded<T> decodeObject(std::string_view body, EmptyBody empty, Fn read) {
  json value = json::object();
  if (!body.empty()) {
    auto parsed = parseJsonBody(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    value = std::move(std::get<json>(parsed));
  } else if (empty == EmptyBody::kRefused) {
    return invalidArgument("body", "required: send a JSON object (Content-Type: application/json)");
  }
  FieldReader f(value, "");
  T out{};
  read(f, out);
  if (auto e = f.finish()) return *e;
  return out;
}

std::optional<SandboxPolicy> readPolicy(FieldReader& f, std::optional<ApiError>& policyError) {
  const json* p = f.raw("policy");
  if (!p) {
    f.fail("policy", "required: give the sandbox's policy as an object (see policy/default.json)");
    return std::nullopt;
  }
  if (!p->is_object()) {
    f.fail("policy", std::string("must be an object, not ") + jsonTypeName(*p));
    return std::nullopt;
  }
  auto parsed = SandboxPolicy::parse(p->dump(-1, ' ', false, json::error_handler_t::replace));
  if (auto* err = std::get_if<PolicyError>(&parsed)) {
    policyError = invalidPolicy(*err);
    return std::nullopt;
  }
  return std::get<SandboxPolicy>(std::move(parsed));
}

void readEnv(FieldReader& f, std::map<std::string, std::string>& env) {
  auto v = f.stringMap("env");
  if (!v) return;
  for (const auto& [name, value] : *v) {
    if (!isClientEnvName(name)) {
      f.fail("env", quoteValue(name) +
                        " is not a variable name a client may set; names match [A-Za-z_][A-Za-z0-9_]* and do not "
                        "start with \"_t\"");
      return;
    }
  }
  env = std::move(*v);
}

std::optional<std::string> readAbsolutePath(FieldReader& f, std::string_view key) {
  auto v = f.string(key);
  if (!v) return std::nullopt;
  if (v->empty() || v->front() != '/') {
    f.fail(key, quoteValue(*v) + " is not an absolute path; give one such as \"/workspace/src\"");
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> readShortString(FieldReader& f, std::string_view key, std::size_t max) {
  auto v = f.string(key);
  if (!v) return std::nullopt;
  if (v->empty() || v->size() > max) {
    f.fail(key, "must be 1 to " + std::to_string(max) + " bytes, not " + std::to_string(v->size()));
    return std::nullopt;
  }
  for (unsigned char c : *v) {
    if (c < 0x20 || c == 0x7f) {
      f.fail(key, quoteValue(*v) + " contains a control character");
      return std::nullopt;
    }
  }
  return v;
}

std::optional<std::string> readShell(FieldReader& f) {
  auto v = f.string("shell");
  if (!v) return std::nullopt;
  std::string_view base = *v;
  if (auto slash = base.rfind('/'); slash != std::string_view::npos) {
    if (v->front() != '/') {
      f.fail("shell", quoteValue(*v) + " is a relative path; give a name (bash, sh, dash, zsh, ksh) or an absolute path");
      return std::nullopt;
    }
    base = base.substr(slash + 1);
  }
  for (std::string_view ok : {"bash", "sh", "dash", "zsh", "ksh"})
    if (base == ok) return v;
  f.fail("shell", quoteValue(*v) + " is not a POSIX shell this daemon runs; give bash, sh, dash, zsh or ksh");
  return std::nullopt;
}

std::optional<Signal> readSignal(FieldReader& f, std::string_view key) {
  auto v = f.oneOf(key, {"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2"});
  if (!v) return std::nullopt;
  static constexpr Signal kAll[] = {Signal::kTerm, Signal::kKill, Signal::kInt, Signal::kHup,
                                    Signal::kQuit, Signal::kUsr1, Signal::kUsr2};
  for (Signal s : kAll)
    if (signalName(s) == *v) return s;
  return std::nullopt;
}

std::optional<StdinMode> readStdinMode(FieldReader& f) {
  auto v = f.oneOf("stdin", {"closed", "open"});
  if (!v) return std::nullopt;
  return *v == "open" ? StdinMode::kOpen : StdinMode::kClosed;
}

std::optional<KeepLogs> readKeepLogs(FieldReader& f) {
  auto v = f.oneOf("keepLogs", {"until_cleanup", "on_exit_ttl", "none"});
  if (!v) return std::nullopt;
  if (*v == "none") return KeepLogs::kNone;
  if (*v == "on_exit_ttl") return KeepLogs::kOnExitTtl;
  return KeepLogs::kUntilCleanup;
}

std::optional<std::uint64_t> readMillis(FieldReader& f, std::string_view key, std::uint64_t min) {
  return f.integer(key, min, kMaxMillis);
}

void readStart(FieldReader& f, StartProcessRequest& out) {
  bool hasCmd = f.has("cmd"), hasArgv = f.has("argv");
  if (hasCmd && hasArgv) f.fail("argv", "give cmd (a shell command line) or argv (a program and its arguments), not both");
  if (!hasCmd && !hasArgv) f.fail("cmd", "required: give cmd (a shell command line) or argv (a program and its arguments)");
  if (auto cmd = f.string("cmd")) {
    if (cmd->find_first_not_of(" \t\n") == std::string::npos) f.fail("cmd", "empty command; give a command line");
    out.cmd = std::move(cmd);
  }
  if (auto argv = f.stringArray("argv")) {
    if (argv->empty()) f.fail("argv", "empty command; give the program and its arguments");
    else if (argv->front().empty()) f.fail("argv[0]", "empty program name");
    out.argv = std::move(*argv);
  }
  out.name = readShortString(f, "name", kMaxNameBytes);
  out.cwd = readAbsolutePath(f, "cwd");
  readEnv(f, out.env);
  out.shell = readShell(f);
  if (auto m = readStdinMode(f)) out.stdinMode = *m;
  out.executionTimeoutMs = readMillis(f, "executionTimeout", 1);
  if (auto k = readKeepLogs(f)) out.keepLogs = *k;
  out.processKey = readShortString(f, "processKey", kMaxKeyBytes);
  if (out.shell && hasArgv) f.fail("shell", "applies to cmd only; argv runs without a shell");
}

// Decodes a body whose policy may be refused by the policy parser: that
// error (E_SANDBOX_INVALID_POLICY) wins over later field errors.
template <class T, class Fn>
Decoded<T> decodeWithPolicy(std::string_view body, Fn read) {
  std::optional<ApiError> policyError;
  auto out = decodeObject<T>(body, EmptyBody::kRefused, [&](FieldReader& f, T& v) { read(f, v, policyError); });
  // Set only once the body parsed as an object with a policy object in it.
  if (policyError) return *policyError;
  return out;
}

// A snapshot id as the daemon makes them: "snap_" and 32 hex digits.
std::optional<std::string> readSnapshotId(FieldReader& f, std::string_view key) {
  auto v = f.string(key);
  if (!v) return std::nullopt;
  bool ok = v->size() == 37 && v->starts_with("snap_");
  for (std::size_t i = 5; ok && i < v->size(); ++i) ok = std::isxdigit(static_cast<unsigned char>((*v)[i])) != 0;
  if (!ok) {
    f.fail(key, quoteValue(*v) + " is not a snapshot id; give the \"id\" a snapshot returned (\"snap_\" and 32 hex digits)");
    return std::nullopt;
  }
  return v;
}

// A sandbox path in a body: any string, a NUL byte included, judged by the
// workspace API (invalid_path), as a ?path= is.
std::string readSandboxPath(FieldReader& f, std::string_view key) {
  const json* v = f.raw(key);
  if (!v) {
    f.fail(key, "required: a path inside the sandbox, such as \"/workspace/app\"");
    return "";
  }
  if (!v->is_string()) {
    f.fail(key, std::string("must be a string, not ") + jsonTypeName(*v));
    return "";
  }
  return v->get<std::string>();
}

std::optional<std::uint64_t> readSeconds(FieldReader& f, std::string_view key) {
  constexpr std::uint64_t kMaxSeconds = 86'400;
  if (!f.has(key)) return std::nullopt;
  const json* v = f.raw(key);
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    f.fail(key, std::string("must be a whole number of seconds from 1 to 86400, not ") + jsonTypeName(*v));
    return std::nullopt;
  }
  if (v->is_number_integer() && v->get<std::int64_t>() < 1) {
    f.fail(key, "must be a whole number of seconds from 1 to 86400, not " + v->dump());
    return std::nullopt;
  }
  std::uint64_t n = v->get<std::uint64_t>();
  if (n < 1 || n > kMaxSeconds) {
    f.fail(key, "must be a whole number of seconds from 1 to 86400, not " + v->dump());
    return std::nullopt;
  }
  return n;
}

std::optional<ApiError> unknownQueryKey(const Query& q, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : q) {
    bool ok = false;
    for (auto n : known) ok = ok || n == k;
    if (!ok) {
      std::string list;
      for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
      return invalidArgument("query", quoteValue(k) + " is not a parameter of this route" +
                                          (list.empty() ? std::string("; it takes none") : "; known: " + list));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> queryChoice(const Query& q, std::string_view key, std::initializer_list<std::string_view> choices,
                                    std::optional<std::string>& out) {
  auto it = q.find(key);
  if (it == q.end()) return std::nullopt;
  for (auto c : choices) {
    if (c == it->second) {
      out = it->second;
      return std::nullopt;
    }
  }
  std::string list;
  for (auto c : choices) list += (list.empty() ? "\"" : ", \"") + std::string(c) + "\"";
  return invalidArgument("query." + std::string(key), quoteValue(it->second) + " is not one of " + list);
}

}  // namespace

std::string_view signalName(Signal s) noexcept {
  switch (s) {
    case Signal::kTerm: return "TERM";
    case Signal::kKill: return "KILL";
    case Signal::kInt: return "INT";
    case Signal::kHup: return "HUP";
    case Signal::kQuit: return "QUIT";
    case Signal::kUsr1: return "USR1";
    case Signal::kUsr2: return "USR2";
  }
  return "TERM";
}

int signalNumber(Signal s) noexcept {
  switch (s) {
    case Signal::kTerm: return SIGTERM;
    case Signal::kKill: return SIGKILL;
    case Signal::kInt: return SIGINT;
    case Signal::kHup: return SIGHUP;
    case Signal::kQuit: return SIGQUIT;
    case Signal::kUsr1: return SIGUSR1;
    case Signal::kUsr2: return SIGUSR2;
  }
  return SIGTERM;
}

std::string_view keepLogsName(KeepLogs k) noexcept {
  switch (k) {
    case KeepLogs::kUntilCleanup: return "until_cleanup";
    case KeepLogs::kOnExitTtl: return "on_exit_ttl";
    case KeepLogs::kNone: return "none";
  }
  return "until_cleanup";
}

ApiError invalidPolicy(const PolicyError& e) {
  return ApiError{ApiCode::kInvalidPolicy,
                  e.path.empty() ? "policy: " + e.message : "policy." + e.path + ": " + e.message};
}

bool isClientEnvName(std::string_view name) noexcept {
  return policy::isEnvName(name) && !name.starts_with("_t");
}

Decoded<CreateSandboxRequest> decodeCreateSandbox(std::string_view body) {
  return decodeWithPolicy<CreateSandboxRequest>(body, [](FieldReader& f, CreateSandboxRequest& out,
                                                         std::optional<ApiError>& policyError) {
    out.policy = readPolicy(f, policyError);
    if (auto w = f.string("workspace")) {
      if (w->empty() || w->front() != '/')
        f.fail("workspace", quoteValue(*w) + " is not an absolute path; give a host directory such as \"/srv/work/a\"");
      else
        out.workspace = std::move(w);
    }
    if (f.has("fromSnapshot")) out.fromSnapshot = readSnapshotId(f, "fromSnapshot");
  });
}

Decoded<NarrowRequest> decodeNarrow(std::string_view body) {
  return decodeWithPolicy<NarrowRequest>(
      body, [](FieldReader& f, NarrowRequest& out, std::optional<ApiError>& policyError) {
        out.policy = readPolicy(f, policyError);
      });
}

Decoded<StartProcessRequest> decodeStartProcess(std::string_view body) {
  return decodeObject<StartProcessRequest>(body, EmptyBody::kRefused, readStart);
}

Decoded<StartProcessRequest> decodeRunProcess(std::string_view body) {
  return decodeObject<StartProcessRequest>(body, EmptyBody::kRefused, [](FieldReader& f, StartProcessRequest& out) {
    readStart(f, out);
    out.timeoutMs = readMillis(f, "timeout", 0);
  });
}

Decoded<WaitRequest> decodeWait(std::string_view body) {
  return decodeObject<WaitRequest>(body, EmptyBody::kIsEmptyObject,
                                   [](FieldReader& f, WaitRequest& out) { out.timeoutMs = readMillis(f, "timeout", 0); });
}

Decoded<KillRequest> decodeKill(std::string_view body) {
  return decodeObject<KillRequest>(body, EmptyBody::kIsEmptyObject, [](FieldReader& f, KillRequest& out) {
    if (auto s = readSignal(f, "signal")) out.signal = *s;
    out.escalateAfterMs = readMillis(f, "escalateAfter", 1);
    if (auto s = readSignal(f, "escalateTo")) out.escalateTo = *s;
    if (f.has("escalateTo") && !f.has("escalateAfter"))
      f.fail("escalateTo", "needs escalateAfter (milliseconds to wait before sending it)");
  });
}

Decoded<StdinRequest> decodeStdin(std::string_view body) {
  return decodeObject<StdinRequest>(body, EmptyBody::kRefused, [](FieldReader& f, StdinRequest& out) {
    auto data = f.string("data");
    auto encoding = f.oneOf("encoding", {"text", "base64"});
    if (auto eof = f.boolean("eof")) out.eof = *eof;
    if (!f.has("data") && !out.eof) f.fail("data", "required (or send {\"eof\": true} to close stdin)");
    if (!data) return;
    if (encoding && *encoding == "base64") {
      auto bytes = base64Decode(*data);
      if (!bytes) {
        f.fail("data", "is not valid base64 (standard alphabet, padded)");
        return;
      }
      out.data = std::move(*bytes);
    } else {
      out.data = std::move(*data);
    }
  });
}

Decoded<TerminateRequest> decodeTerminate(std::string_view body) {
  return decodeObject<TerminateRequest>(body, EmptyBody::kRefused, [](FieldReader& f, TerminateRequest& out) {
    if (!f.has("processKey")) f.fail("processKey", "required: the processKey the process was started with");
    if (auto k = readShortString(f, "processKey", kMaxKeyBytes)) out.processKey = std::move(*k);
  });
}

Decoded<CreateSessionRequest> decodeCreateSession(std::string_view body) {
  return decodeObject<CreateSessionRequest>(body, EmptyBody::kIsEmptyObject,
                                            [](FieldReader& f, CreateSessionRequest& out) {
                                              out.cwd = readAbsolutePath(f, "cwd");
                                              readEnv(f, out.env);
                                              out.shell = readShell(f);
                                            });
}

namespace {

void readSessionCommand(FieldReader& f, SessionCommandRequest& out) {
  if (!f.has("command")) f.fail("command", "required: the command line to run in the session's shell");
  if (auto c = f.string("command")) {
    if (c->find_first_not_of(" \t\n") == std::string::npos) f.fail("command", "empty command; give a command line");
    out.command = std::move(*c);
  }
  out.executionTimeoutMs = readMillis(f, "executionTimeout", 1);
  out.name = readShortString(f, "name", kMaxNameBytes);
  if (auto m = readStdinMode(f)) out.stdinMode = *m;
  if (auto k = readKeepLogs(f)) out.keepLogs = *k;
}

std::optional<TerminalSize> readSize(FieldReader& f) {
  bool any = f.has("cols") || f.has("rows");
  if (any && !(f.has("cols") && f.has("rows"))) f.fail(f.has("cols") ? "rows" : "cols", "required with the other");
  auto cols = f.integer("cols", 1, 1000);
  auto rows = f.integer("rows", 1, 1000);
  if (!cols || !rows) return std::nullopt;
  return TerminalSize{static_cast<std::uint16_t>(*cols), static_cast<std::uint16_t>(*rows)};
}

}  // namespace

Decoded<SessionCommandRequest> decodeSessionRun(std::string_view body) {
  return decodeObject<SessionCommandRequest>(body, EmptyBody::kRefused,
                                             [](FieldReader& f, SessionCommandRequest& out) {
                                               readSessionCommand(f, out);
                                               out.timeoutMs = readMillis(f, "timeout", 0);
                                             });
}

Decoded<SessionCommandRequest> decodeSessionStart(std::string_view body) {
  return decodeObject<SessionCommandRequest>(body, EmptyBody::kRefused, readSessionCommand);
}

Decoded<StartPtyRequest> decodeStartPty(std::string_view body) {
  return decodeObject<StartPtyRequest>(body, EmptyBody::kIsEmptyObject, [](FieldReader& f, StartPtyRequest& out) {
    if (auto c = f.string("cmd")) {
      if (c->find_first_not_of(" \t\n") == std::string::npos) f.fail("cmd", "empty command; omit cmd for a shell");
      out.cmd = std::move(*c);
    }
    if (auto s = readSize(f)) out.size = *s;
    out.cwd = readAbsolutePath(f, "cwd");
    readEnv(f, out.env);
  });
}

Decoded<TerminalSize> decodeResize(std::string_view body) {
  return decodeObject<TerminalSize>(body, EmptyBody::kRefused, [](FieldReader& f, TerminalSize& out) {
    if (!f.has("cols") && !f.has("rows")) f.fail("cols", "required: give cols and rows");
    if (auto s = readSize(f)) out = *s;
  });
}

Decoded<RunCodeRequest> decodeRunCode(std::string_view body) {
  return decodeObject<RunCodeRequest>(body, EmptyBody::kRefused, [](FieldReader& f, RunCodeRequest& out) {
    if (!f.has("code")) f.fail("code", "required: the code to run");
    if (auto c = f.string("code")) {
      if (c->find_first_not_of(" \t\r\n") == std::string::npos)
        f.fail("code", "is empty; give the code to run");
      else if (c->size() > kMaxCodeBytes)
        f.fail("code", "is " + std::to_string(c->size()) + " bytes; at most " + std::to_string(kMaxCodeBytes) +
                           " are run at once (send the rest as a file and run that)");
      else if (c->find('\0') != std::string::npos)
        f.fail("code", "contains a NUL byte");
      out.code = std::move(*c);
    }
    if (auto l = f.string("language")) {
      bool supported = false;
      std::string list;
      for (std::string_view s : kCodeLanguages) {
        supported = supported || *l == s;
        list += (list.empty() ? "\"" : ", \"") + std::string(s) + "\"";
      }
      if (!supported)
        f.fail("language", quoteValue(*l) + " is not a language this daemon runs code in; supported: [" + list +
                               "] (omit it for python)");
      else
        out.language = std::move(*l);
    }
    if (f.has("timeout")) {
      const json* v = f.raw("timeout");
      constexpr double kMaxSeconds = 86'400;
      if (!v->is_number()) {
        f.fail("timeout", std::string("must be a number of seconds (0.001 to 86400), not ") + jsonTypeName(*v));
      } else {
        const double seconds = v->get<double>();
        if (!(seconds >= 0.001 && seconds <= kMaxSeconds))
          f.fail("timeout", v->dump() + " is out of range; give seconds from 0.001 to 86400, or omit it for no limit");
        else
          out.timeoutMs = static_cast<std::uint64_t>(seconds * 1000.0 + 0.5);
      }
    }
  });
}

Decoded<ListProcessesQuery> decodeListProcesses(const Query& q) {
  if (auto e = unknownQueryKey(q, {"state", "kind", "name"})) return *e;
  ListProcessesQuery out;
  std::optional<std::string> state;
  if (auto e = queryChoice(q, "state", {"running", "terminal", "all"}, state)) return *e;
  if (state) out.state = *state;
  if (auto e = queryChoice(q, "kind", {"exec", "pty", "code", "session"}, out.kind)) return *e;
  if (auto it = q.find("name"); it != q.end()) out.name = it->second;
  return out;
}

namespace {

Decoded<LogsQuery> decodeLogsQuery(const Query& q, bool paged) {
  if (auto e = paged ? unknownQueryKey(q, {"cursor", "limit", "encoding"}) : unknownQueryKey(q, {"cursor", "encoding"}))
    return *e;
  LogsQuery out;
  if (auto it = q.find("cursor"); it != q.end()) {
    if (it->second.empty() || it->second.size() > 128)
      return invalidArgument("query.cursor", "must be 1 to 128 bytes (a cursor the daemon returned)");
    out.cursor = it->second;
  }
  if (auto it = q.find("limit"); it != q.end()) {
    const std::string& s = it->second;
    std::uint64_t n = 0;
    bool ok = !s.empty() && s.size() <= 6;
    for (char c : s) ok = ok && c >= '0' && c <= '9';
    if (ok) for (char c : s) n = n * 10 + static_cast<std::uint64_t>(c - '0');
    if (!ok || n < 1 || n > 10000) return invalidArgument("query.limit", quoteValue(s) + " is not a whole number from 1 to 10000");
    out.limit = static_cast<std::uint32_t>(n);
  }
  std::optional<std::string> encoding;
  if (auto e = queryChoice(q, "encoding", {"text", "base64"}, encoding)) return *e;
  if (encoding && *encoding == "base64") out.encoding = LogEncoding::kBase64;
  return out;
}

}  // namespace

Decoded<LogsQuery> decodeLogs(const Query& q) { return decodeLogsQuery(q, true); }
Decoded<LogsQuery> decodeLogStream(const Query& q) { return decodeLogsQuery(q, false); }

Decoded<PathQuery> decodeFilePathQuery(const Query& q) {
  if (auto e = unknownQueryKey(q, {"path"})) return *e;
  auto it = q.find("path");
  if (it == q.end()) return invalidArgument("query.path", "required: the file's path in the sandbox, ?path=/workspace/a.txt");
  return PathQuery{it->second};
}

Decoded<PathQuery> decodeDirectoryQuery(const Query& q) {
  if (auto e = unknownQueryKey(q, {"path"})) return *e;
  auto it = q.find("path");
  return PathQuery{it == q.end() ? std::string("/workspace") : it->second};
}

Decoded<WatchQuery> decodeWatchQuery(const Query& q) {
  if (auto e = unknownQueryKey(q, {"path", "recursive"})) return *e;
  WatchQuery out;
  if (auto it = q.find("path"); it != q.end()) out.path = it->second;
  std::optional<std::string> recursive;
  if (auto e = queryChoice(q, "recursive", {"true", "false"}, recursive)) return *e;
  out.recursive = recursive && *recursive == "true";
  return out;
}

Decoded<MakeDirRequest> decodeMakeDir(std::string_view body) {
  return decodeObject<MakeDirRequest>(body, EmptyBody::kRefused,
                                      [](FieldReader& f, MakeDirRequest& out) { out.path = readSandboxPath(f, "path"); });
}

Decoded<PersistRequest> decodePersist(std::string_view body) {
  return decodeObject<PersistRequest>(body, EmptyBody::kRefused, [](FieldReader& f, PersistRequest& out) {
    out.path = readSandboxPath(f, "path");
    if (auto ex = f.stringArray("exclude")) {
      for (std::size_t i = 0; i < ex->size(); ++i) {
        const std::string& name = (*ex)[i];
        bool ok = !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
                  name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
        if (!ok) {
          f.fail("exclude[" + std::to_string(i) + "]",
                 quoteValue(name) + " is not a directory name; give plain names such as \"tmp\" (matched at any depth)");
          return;
        }
      }
      out.exclude = std::move(*ex);
    }
    out.timeoutSeconds = readSeconds(f, "timeout");
  });
}

Decoded<RestoreRequest> decodeRestore(std::string_view body) {
  return decodeObject<RestoreRequest>(body, EmptyBody::kRefused, [](FieldReader& f, RestoreRequest& out) {
    out.path = readSandboxPath(f, "path");
    out.timeoutSeconds = readSeconds(f, "timeout");
  });
}

Decoded<SnapshotRequestBody> decodeSnapshot(std::string_view body) {
  return decodeObject<SnapshotRequestBody>(body, EmptyBody::kRefused, [](FieldReader& f, SnapshotRequestBody& out) {
    if (!f.has("operationKey"))
      f.fail("operationKey", "required: a key of the caller's (1-256 bytes) that finds the snapshot again");
    if (auto k = readShortString(f, "operationKey", 256)) out.operationKey = std::move(*k);
    out.timeoutSeconds = readSeconds(f, "timeout");
  });
}

Decoded<SnapshotLookupQuery> decodeSnapshotLookup(const Query& q) {
  if (auto e = unknownQueryKey(q, {"operationKey"})) return *e;
  auto it = q.find("operationKey");
  if (it == q.end() || it->second.empty() || it->second.size() > 256)
    return invalidArgument("query.operationKey", "required: the operation key of the snapshot (1-256 bytes)");
  for (unsigned char c : it->second)
    if (c < 0x20 || c == 0x7f) return invalidArgument("query.operationKey", "contains a control character");
  return SnapshotLookupQuery{it->second};
}

std::optional<ApiError> requireEmptyQuery(const Query& q) { return unknownQueryKey(q, {}); }

std::optional<ApiError> requireEmptyBody(std::string_view body) {
  if (body.empty()) return std::nullopt;
  auto d = decodeObject<int>(body, EmptyBody::kIsEmptyObject, [](FieldReader&, int&) {});
  if (auto* e = std::get_if<ApiError>(&d)) return *e;
  return std::nullopt;
}

}  // namespace stockade::daemon
