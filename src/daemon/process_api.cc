#include "src/daemon/process_api.h"

#include <csignal>
#include <nlohmann/json.hpp>

#include "platform/linux/process_identity.h"
#include "src/daemon/base64.h"
#include "src/daemon/ids.h"
#include "src/daemon/live_sandbox.h"
#include "src/daemon/process_json.h"
#include "src/daemon/pumps.h"
#include "src/daemon/requests.h"
#include "src/process/registry.h"

namespace stockade::daemon {

using nlohmann::json;

namespace {

Response jsonReply(const json& j, int status = 200) {
  return Response::json(j.dump(-1, ' ', false, json::error_handler_t::replace), status);
}

// What every process route starts with: its decoded request and its live
// sandbox, or the reply that refuses it.
template <class T>
struct Prepared {
  T q;
  Sandboxes::LiveHandle h;
};
template <class T>
using PreparedOr = std::variant<Prepared<T>, Response>;

// `queryUsed`: the decoder read the query; otherwise the route takes none.
template <class T>
PreparedOr<T> prepare(Sandboxes& sandboxes, const Request& r, Decoded<T> decoded, bool queryUsed = false) {
  if (!queryUsed) {
    if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  }
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  auto live = sandboxes.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  return Prepared<T>{std::get<T>(std::move(decoded)), std::get<Sandboxes::LiveHandle>(std::move(live))};
}

// A route with neither body nor query.
struct NoRequest {};
PreparedOr<NoRequest> prepare(Sandboxes& sandboxes, const Request& r) {
  return prepare(sandboxes, r, Decoded<NoRequest>(NoRequest{}));
}

// A process-service result as a value, or its error as a reply.
template <class T>
std::variant<T, Response> unwrap(ProcessResult<T> result) {
  if (auto* e = std::get_if<ProcessError>(&result)) return Response::error(apiErrorFor(*e));
  return std::get<T>(std::move(result));
}
template <class T>
std::variant<T, Response> unwrap(std::variant<ProcessResult<T>, ApiError> guarded) {
  if (auto* e = std::get_if<ApiError>(&guarded)) return Response::error(*e);
  return unwrap(std::get<ProcessResult<T>>(std::move(guarded)));
}
Reply statusReply(const ProcessStatus& status) {
  if (status) return Response::error(apiErrorFor(*status));
  return Response::noContent();
}

#define STOCKADE_OR_REPLY(var, expr)            \
  auto var##Or = (expr);                        \
  if (auto* reply = std::get_if<Response>(&var##Or)) return *reply; \
  auto& var = std::get<0>(var##Or)

// The library's refusals of a start: caller bugs (std::invalid_argument) are
// 400; SandboxError keeps its seed code.
template <class Fn>
auto guarded(Fn fn) -> std::variant<decltype(fn()), ApiError> {
  try {
    return fn();
  } catch (const SandboxError& e) {
    return ApiError{apiCodeFor(e.code()), e.what()};
  } catch (const std::invalid_argument& e) {
    return invalidArgument("", e.what());
  }
}

ProcessStartOptions startOptions(const StartProcessRequest& q, const std::string& processKey) {
  ProcessStartOptions o;
  o.name = q.name;
  o.cwd = q.cwd;
  o.env = q.env;
  o.shell = q.shell;
  o.stdin = q.stdinMode == daemon::StdinMode::kOpen ? stockade::StdinMode::kOpen : stockade::StdinMode::kClosed;
  if (q.executionTimeoutMs) o.executionTimeout = std::chrono::milliseconds(*q.executionTimeoutMs);
  o.keepLogs = q.keepLogs == daemon::KeepLogs::kNone        ? stockade::KeepLogs::kNone
               : q.keepLogs == daemon::KeepLogs::kOnExitTtl ? stockade::KeepLogs::kOnExitTtl
                                                            : stockade::KeepLogs::kUntilCleanup;
  o.processKey = processKey;
  return o;
}

ProcessCommand commandOf(const StartProcessRequest& q) {
  return q.cmd ? ProcessCommand::shell(*q.cmd) : ProcessCommand::exec(q.argv);
}

std::optional<ApiError> processLimit(const Sandboxes::LiveHandle& h, std::size_t max) {
  std::size_t running = 0;
  for (const auto& rec : h.sandbox->registry().all())
    if (!rec->terminal()) ++running;
  if (running < max) return std::nullopt;
  return ApiError{ApiCode::kUnavailable, "sandbox " + h.id + " runs " + std::to_string(max) +
                                             " processes (stockaded --max-processes); wait for one to end"};
}

// The ledger's end of a process the service reports terminal.
void recordEnd(ledger::Ledger& ledger, const std::string& key, const ProcessDto& dto) {
  if (dto.state != ProcessState::kTerminal || !dto.reason) return;
  ledger::ProcessState state = ledger::ProcessState::kExited;
  if (*dto.reason == ProcessReason::kFailed) state = ledger::ProcessState::kFailed;
  if (*dto.reason == ProcessReason::kLost) state = ledger::ProcessState::kKilled;
  std::optional<int> signal;
  if (dto.signal) {
    int n = 0;
    for (ProcessSignal s : {ProcessSignal::kTerm, ProcessSignal::kKill, ProcessSignal::kInt, ProcessSignal::kHup,
                            ProcessSignal::kQuit, ProcessSignal::kUsr1, ProcessSignal::kUsr2})
      if (*dto.signal == "SIG" + std::string(processSignalName(s))) n = process::signalNumber(s);
    signal = n ? std::optional<int>(n) : std::nullopt;
  }
  ledger.markEnded(key, state, dto.exitCode, signal, dto.reasonDetail.value_or(""));
}

}  // namespace

// A start: the ledger row first (before dispatch), then the spawn, then the
// identity of what was spawned. Returns the handle and the key.
struct Started {
  ProcessHandle handle;
  ProcessDto dto;
};

namespace {

std::variant<Started, ApiError> startRecorded(ledger::Ledger& ledger, const Sandboxes::LiveHandle& h,
                                              std::optional<std::string> key,
                                              const std::function<ProcessResult<ProcessHandle>(const std::string&)>& fn) {
  std::string processKey = key ? *key : newId("pk_");
  if (!ledger.beginStart(processKey, h.id, ""))
    return ApiError{ApiCode::kConflict, "processKey " + quoteValue(processKey) +
                                            " was used before; a key names one process group"};
  auto started = guarded([&] { return fn(processKey); });
  auto fail = [&](const ApiError& e) {
    ledger.markEnded(processKey, ledger::ProcessState::kFailed, std::nullopt, std::nullopt, e.message);
    return e;
  };
  if (auto* e = std::get_if<ApiError>(&started)) return fail(*e);
  auto& result = std::get<ProcessResult<ProcessHandle>>(started);
  if (auto* e = std::get_if<ProcessError>(&result)) return fail(apiErrorFor(*e));
  ProcessHandle handle = std::get<ProcessHandle>(std::move(result));
  // The pid is of the sandbox's init; while the record says it runs, it is
  // not yet reaped... unless it ended this instant: then its end is recorded.
  std::optional<platform::ProcessIdentity> identity;
  auto dto = handle.get();
  if (auto* d = std::get_if<ProcessDto>(&dto); d && d->pid) identity = platform::identifyProcess(*d->pid);
  dto = handle.get();
  auto* d = std::get_if<ProcessDto>(&dto);
  if (!d) return fail(apiErrorFor(std::get<ProcessError>(dto)));
  if (identity && d->state != ProcessState::kTerminal) {
    ledger.markStarted(processKey, handle.id(), *identity, "");
  } else {
    ledger.markStarted(processKey, handle.id(), platform::ProcessIdentity{0, 0, ""}, "");
    recordEnd(ledger, processKey, *d);
  }
  return Started{std::move(handle), std::move(*d)};
}

std::optional<std::chrono::milliseconds> millis(const std::optional<std::uint64_t>& v) {
  if (!v || *v == 0) return std::nullopt;  // 0: unbounded (seed 003)
  return std::chrono::milliseconds(*v);
}

// How long a wait blocks its worker thread before it moves to a thread of
// its own: most commands end sooner, and then no thread is made for them.
constexpr std::chrono::milliseconds kInlineWait{20};

// Waits for a record: briefly on the worker, then on a thread of the
// reply's own; a client that leaves stops that wait at once.
Reply deferredWait(std::shared_ptr<process::Record> record, std::optional<std::chrono::milliseconds> timeout,
                   std::function<Response(const WaitResult&)> done, std::string what) {
  auto brief = timeout ? std::min(*timeout, kInlineWait) : kInlineWait;
  if (auto result = record->wait(brief)) return done(*result);
  if (timeout && *timeout <= kInlineWait)
    return Response::error({ApiCode::kTimeout, what + " still runs after " + std::to_string(timeout->count()) +
                                                   " ms; it goes on (wait, stream or kill it by its id)"});
  std::optional<std::chrono::milliseconds> left;
  if (timeout) left = *timeout - brief;
  return Deferred{std::make_shared<ThreadedReply>([record, timeout, left, done, what](std::stop_token stop) -> Response {
    auto result = record->wait(left, stop);
    if (!result)
      return Response::error({ApiCode::kTimeout, what + " still runs after " +
                                                     std::to_string(timeout ? timeout->count() : 0) +
                                                     " ms; it goes on (wait, stream or kill it by its id)"});
    return done(*result);
  })};
}

}  // namespace

// A start of `command` recorded in the ledger, then its Process.
Reply ProcessApi::startCommand(const Request& r, Decoded<StartProcessRequest> decoded, bool wait) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, std::move(decoded)));
  if (auto e = processLimit(p.h, sandboxes_.maxProcesses())) return Response::error(*e);
  auto started = startRecorded(ledger_, p.h, p.q.processKey, [&](const std::string& key) {
    return p.h.core->start(commandOf(p.q), startOptions(p.q, key));
  });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  const Started& s = std::get<Started>(started);
  if (!wait) return jsonReply(processJson(s.dto));
  STOCKADE_OR_REPLY(record, unwrap(p.h.core->find(s.handle.id())));
  std::string key = *s.dto.processKey;
  ledger::Ledger* ledger = &ledger_;
  return deferredWait(record, millis(p.q.timeoutMs),
                      [record, key, ledger](const WaitResult& result) {
                        recordEnd(*ledger, key, record->snapshot());
                        return jsonReply(runResultJson(process::ServiceCore::collect(*record, result)));
                      },
                      "process " + s.handle.id());
}

Reply ProcessApi::start(const Request& r) { return startCommand(r, decodeStartProcess(r.body), false); }

Reply ProcessApi::run(const Request& r) { return startCommand(r, decodeRunProcess(r.body), true); }

Reply ProcessApi::list(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeListProcesses(r.query), true));
  ProcessListOptions o;
  o.state = p.q.state == "running"    ? ProcessListOptions::States::kRunning
            : p.q.state == "terminal" ? ProcessListOptions::States::kTerminal
                                      : ProcessListOptions::States::kAll;
  if (p.q.kind) {
    for (ProcessKind k : {ProcessKind::kExec, ProcessKind::kPty, ProcessKind::kCode, ProcessKind::kSession})
      if (processKindName(k) == *p.q.kind) o.kind = k;
  }
  o.name = p.q.name;
  STOCKADE_OR_REPLY(items, unwrap(p.h.core->list(o)));
  json out = json::array();
  for (const auto& d : items) out.push_back(processJson(d));
  return jsonReply(json{{"items", std::move(out)}});
}

Reply ProcessApi::get(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r));
  STOCKADE_OR_REPLY(dto, unwrap(p.h.core->get(std::string(r.match.param("pid")))));
  return jsonReply(processJson(dto));
}

namespace {

LogsOptions logsOptions(const LogsQuery& q) {
  LogsOptions o;
  o.cursor = q.cursor;
  o.limit = q.limit;
  o.encoding = q.encoding == daemon::LogEncoding::kBase64 ? stockade::LogEncoding::kBase64 : stockade::LogEncoding::kText;
  return o;
}

}  // namespace

Reply ProcessApi::logs(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeLogs(r.query), true));
  const LogsOptions o = logsOptions(p.q);
  STOCKADE_OR_REPLY(page, unwrap(guarded([&] { return p.h.core->logs(std::string(r.match.param("pid")), o); })));
  json items = json::array();
  for (const auto& f : page.items) items.push_back(logFrameJson(f));
  json out{{"items", std::move(items)}, {"hasMore", page.hasMore}, {"truncatedHead", page.truncatedHead}};
  if (page.nextCursor) out["nextCursor"] = *page.nextCursor;
  if (page.firstAvailableCursor) out["firstAvailableCursor"] = *page.firstAvailableCursor;
  return jsonReply(out);
}

namespace {

// The NDJSON of a log stream, pumped from the service's LogStream on the
// stream's own thread; ends after eof (or with an error event).
ThreadedChunks::Produce logPump(std::shared_ptr<process::ServiceCore> core, std::string pid, LogsOptions o,
                                bool framesOnly) {
  return [core, pid, o, framesOnly](std::stop_token stop, const ThreadedChunks::Emit& emit) {
    auto opened = core->streamLogs(pid, o, stop);
    if (auto* e = std::get_if<ProcessError>(&opened)) {
      ApiError a = apiErrorFor(*e);
      if (!framesOnly) emit(json{{"type", "error"}, {"error", {{"code", apiCodeName(a.code)}, {"message", a.message}}}}.dump() + "\n");
      return;
    }
    LogStream& stream = std::get<LogStream>(opened);
    while (auto event = stream.next()) {
      if (framesOnly) {
        auto* l = std::get_if<LogEvent>(&event->event);
        if (!l) continue;
        std::string bytes = l->frame.data;
        if (l->frame.encoding == stockade::LogEncoding::kBase64) bytes = base64Decode(bytes).value_or("");
        if (!emit(std::move(bytes))) return;
        continue;
      }
      if (!emit(streamEventLine(*event))) return;
    }
  };
}

}  // namespace

Reply ProcessApi::stream(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeLogStream(r.query), true));
  std::string pid(r.match.param("pid"));
  LogsOptions o = logsOptions(p.q);
  o.limit = 1;
  // Refused before the stream starts: an unknown process or cursor is an
  // error reply, not a stream.
  STOCKADE_OR_REPLY(probe, unwrap(guarded([&] { return p.h.core->logs(pid, o); })));
  (void)probe;
  return StreamReply{std::make_shared<ThreadedChunks>(logPump(p.h.core, pid, logsOptions(p.q), false))};
}

Reply ProcessApi::wait(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeWait(r.body)));
  std::string pid(r.match.param("pid"));
  STOCKADE_OR_REPLY(record, unwrap(p.h.core->find(pid)));
  return deferredWait(record, millis(p.q.timeoutMs),
                      [](const WaitResult& result) { return jsonReply(waitResultJson(result)); }, "process " + pid);
}

namespace {

ProcessSignal toSignal(daemon::Signal s) {
  switch (s) {
    case daemon::Signal::kTerm: return ProcessSignal::kTerm;
    case daemon::Signal::kKill: return ProcessSignal::kKill;
    case daemon::Signal::kInt: return ProcessSignal::kInt;
    case daemon::Signal::kHup: return ProcessSignal::kHup;
    case daemon::Signal::kQuit: return ProcessSignal::kQuit;
    case daemon::Signal::kUsr1: return ProcessSignal::kUsr1;
    case daemon::Signal::kUsr2: return ProcessSignal::kUsr2;
  }
  return ProcessSignal::kTerm;
}

}  // namespace

// A stop (signal, delete) of a process: written to the ledger under its key
// before it is dispatched, and marked done or failed after.
ProcessStatus ProcessApi::recordedStop(const ProcessDto& dto, std::string_view op, std::string_view detail,
                                       const std::function<ProcessStatus()>& stop) {
  std::int64_t effect = dto.processKey ? ledger_.beginEffect(*dto.processKey, op, detail) : 0;
  ProcessStatus status = stop();
  if (effect) ledger_.endEffect(effect, !status, status ? status->message : "");
  return status;
}

Reply ProcessApi::kill(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeKill(r.body)));
  std::string pid(r.match.param("pid"));
  STOCKADE_OR_REPLY(dto, unwrap(p.h.core->get(pid)));
  KillOptions o;
  o.signal = toSignal(p.q.signal);
  o.escalateTo = toSignal(p.q.escalateTo);
  if (p.q.escalateAfterMs) o.escalateAfter = std::chrono::milliseconds(*p.q.escalateAfterMs);
  return statusReply(recordedStop(dto, "signal", signalName(p.q.signal), [&] { return p.h.core->kill(pid, o); }));
}

Reply ProcessApi::stdinWrite(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeStdin(r.body)));
  return statusReply(p.h.core->stdin(std::string(r.match.param("pid")), p.q.data, p.q.eof));
}

Reply ProcessApi::remove(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r));
  std::string pid(r.match.param("pid"));
  STOCKADE_OR_REPLY(dto, unwrap(p.h.core->get(pid)));
  auto status = recordedStop(dto, "delete", "", [&] { return p.h.core->remove(pid); });
  if (!status && dto.processKey && dto.state != ProcessState::kTerminal)
    ledger_.markEnded(*dto.processKey, ledger::ProcessState::kKilled, std::nullopt, SIGTERM, "deleted");
  return statusReply(status);
}

Reply ProcessApi::terminate(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto decoded = decodeTerminate(r.body);
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  auto answer = sandboxes_.terminate(r.match.param("id"), std::get<TerminateRequest>(decoded).processKey);
  if (auto* e = std::get_if<ApiError>(&answer)) return Response::error(*e);
  return jsonReply(json{{"result", ledger::terminateAnswerName(std::get<ledger::TerminateAnswer>(answer))}});
}

Reply ProcessApi::createSession(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeCreateSession(r.body)));
  if (auto e = processLimit(p.h, sandboxes_.maxProcesses())) return Response::error(*e);
  CreateSessionOptions o;
  o.cwd = p.q.cwd;
  o.env = p.q.env;
  o.shell = p.q.shell;
  // The shell's sandbox is recorded like any process: before, then its identity.
  std::string key = newId("pk_");
  if (!ledger_.beginStart(key, p.h.id, "")) return Response::error({ApiCode::kInternal, "processKey collision"});
  auto created = unwrap(guarded([&] { return p.h.core->createSession(o); }));
  if (auto* reply = std::get_if<Response>(&created)) {
    ledger_.markEnded(key, ledger::ProcessState::kFailed, std::nullopt, std::nullopt, reply->body);
    return *reply;
  }
  const Session& session = std::get<Session>(created);
  auto dto = session.get();
  if (auto* d = std::get_if<ProcessDto>(&dto); d && d->pid) {
    if (auto identity = platform::identifyProcess(*d->pid)) ledger_.markStarted(key, session.id(), *identity, "");
  }
  return jsonReply(json{{"id", session.id()}, {"processKey", key}});
}

Reply ProcessApi::getSession(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r));
  STOCKADE_OR_REPLY(dto, unwrap(p.h.core->sessionGet(std::string(r.match.param("sid")))));
  return jsonReply(processJson(dto));
}

namespace {

SessionRunOptions sessionOptions(const SessionCommandRequest& q) {
  SessionRunOptions o;
  o.stdin = q.stdinMode == daemon::StdinMode::kOpen ? stockade::StdinMode::kOpen : stockade::StdinMode::kClosed;
  if (q.executionTimeoutMs) o.executionTimeout = std::chrono::milliseconds(*q.executionTimeoutMs);
  o.name = q.name;
  o.keepLogs = q.keepLogs == daemon::KeepLogs::kNone        ? stockade::KeepLogs::kNone
               : q.keepLogs == daemon::KeepLogs::kOnExitTtl ? stockade::KeepLogs::kOnExitTtl
                                                            : stockade::KeepLogs::kUntilCleanup;
  return o;
}

}  // namespace

Reply ProcessApi::sessionCommand(const Request& r, Decoded<SessionCommandRequest> decoded, bool wait) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, std::move(decoded)));
  STOCKADE_OR_REPLY(handle, unwrap(guarded([&] {
    return p.h.core->sessionStart(std::string(r.match.param("sid")), p.q.command, sessionOptions(p.q));
  })));
  if (!wait) {
    STOCKADE_OR_REPLY(dto, unwrap(handle.get()));
    return jsonReply(processJson(dto));
  }
  STOCKADE_OR_REPLY(record, unwrap(p.h.core->find(handle.id())));
  return deferredWait(record, millis(p.q.timeoutMs),
                      [record](const WaitResult& w) {
                        return jsonReply(runResultJson(process::ServiceCore::collect(*record, w)));
                      },
                      "session command " + handle.id());
}

Reply ProcessApi::sessionRun(const Request& r) { return sessionCommand(r, decodeSessionRun(r.body), true); }

Reply ProcessApi::sessionStart(const Request& r) { return sessionCommand(r, decodeSessionStart(r.body), false); }

Reply ProcessApi::deleteSession(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r));
  return statusReply(p.h.core->sessionRemove(std::string(r.match.param("sid"))));
}

Reply ProcessApi::startPty(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeStartPty(r.body)));
  if (auto e = processLimit(p.h, sandboxes_.maxProcesses())) return Response::error(*e);
  auto started = startRecorded(ledger_, p.h, std::nullopt, [&](const std::string& key) {
    ProcessStartOptions o;
    o.cwd = p.q.cwd;
    o.env = p.q.env;
    o.processKey = key;
    // No command: an interactive shell.
    return p.h.core->start(ProcessCommand::shell(p.q.cmd.value_or("exec \"${SHELL:-sh}\" -i")), o, ProcessKind::kPty,
                           stockade::TerminalSize{p.q.size.cols, p.q.size.rows});
  });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  return jsonReply(processJson(std::get<Started>(started).dto));
}

Reply ProcessApi::attachPty(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeLogStream(r.query), true));
  std::string pid(r.match.param("pid"));
  STOCKADE_OR_REPLY(dto, unwrap(p.h.core->get(pid)));
  if (dto.kind != ProcessKind::kPty)
    return Response::error({ApiCode::kUnsupported, "process " + pid + " is not a PTY; stream its logs instead"});
  LogsOptions o;
  o.cursor = p.q.cursor;
  o.encoding = stockade::LogEncoding::kBase64;  // terminal bytes, whatever they are
  auto core = p.h.core;
  return Upgrade{std::make_shared<ThreadedDuplex>(
      [core, pid](std::string_view bytes) { (void)core->stdin(pid, bytes, false); }, logPump(core, pid, o, true))};
}

Reply ProcessApi::resizePty(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeResize(r.body)));
  return statusReply(p.h.core->resize(std::string(r.match.param("pid")), stockade::TerminalSize{p.q.cols, p.q.rows}));
}

// The sandbox's kernel runs the code on a thread of the reply's own (a
// call waits for the one before it in the same sandbox); a client that
// leaves interrupts its cell.
Reply ProcessApi::runCode(const Request& r) {
  STOCKADE_OR_REPLY(p, prepare(sandboxes_, r, decodeRunCode(r.body)));
  process::CodeRequest q{p.q.code, p.q.language, millis(p.q.timeoutMs)};
  return Deferred{std::make_shared<ThreadedReply>([kernel = p.h.code, q = std::move(q)](std::stop_token stop) -> Response {
    auto ran = unwrap(guarded([&] { return kernel->run(q, stop); }));
    if (auto* reply = std::get_if<Response>(&ran)) return *reply;
    return jsonReply(executionJson(std::get<process::Execution>(ran)));
  })};
}

#undef STOCKADE_OR_REPLY

}  // namespace stockade::daemon
