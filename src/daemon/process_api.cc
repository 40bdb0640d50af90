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

template <class T>
const T* decodedOr(const Decoded<T>& d, Reply& error) {
  if (auto* e = std::get_if<ApiError>(&d)) {
    error = Response::error(*e);
    return nullptr;
  }
  return &std::get<T>(d);
}

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

Reply ProcessApi::start(const Request& r) {
  Reply error;
  auto decoded = decodeStartProcess(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  if (auto e = processLimit(h, sandboxes_.maxProcesses())) return Response::error(*e);
  auto started = startRecorded(ledger_, h, q->processKey, [&](const std::string& key) {
    return h.core->start(commandOf(*q), startOptions(*q, key));
  });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  return jsonReply(processJson(std::get<Started>(started).dto));
}

Reply ProcessApi::run(const Request& r) {
  Reply error;
  auto decoded = decodeRunProcess(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  if (auto e = processLimit(h, sandboxes_.maxProcesses())) return Response::error(*e);
  auto started = startRecorded(ledger_, h, q->processKey, [&](const std::string& key) {
    return h.core->start(commandOf(*q), startOptions(*q, key));
  });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  const Started& s = std::get<Started>(started);
  auto found = h.core->find(s.handle.id());
  if (auto* e = std::get_if<ProcessError>(&found)) return Response::error(apiErrorFor(*e));
  auto record = std::get<std::shared_ptr<process::Record>>(found);
  std::string key = *s.dto.processKey;
  ledger::Ledger* ledger = &ledger_;
  return deferredWait(record, millis(q->timeoutMs),
                      [record, key, ledger](const WaitResult& result) {
                        recordEnd(*ledger, key, record->snapshot());
                        return jsonReply(runResultJson(process::ServiceCore::collect(*record, result)));
                      },
                      "process " + s.handle.id());
}

Reply ProcessApi::list(const Request& r) {
  Reply error;
  auto decoded = decodeListProcesses(r.query);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  ProcessListOptions o;
  o.state = q->state == "running"    ? ProcessListOptions::States::kRunning
            : q->state == "terminal" ? ProcessListOptions::States::kTerminal
                                     : ProcessListOptions::States::kAll;
  if (q->kind) {
    for (ProcessKind k : {ProcessKind::kExec, ProcessKind::kPty, ProcessKind::kCode, ProcessKind::kSession})
      if (processKindName(k) == *q->kind) o.kind = k;
  }
  o.name = q->name;
  auto items = std::get<Sandboxes::LiveHandle>(live).core->list(o);
  if (auto* e = std::get_if<ProcessError>(&items)) return Response::error(apiErrorFor(*e));
  json out = json::array();
  for (const auto& p : std::get<std::vector<ProcessDto>>(items)) out.push_back(processJson(p));
  return jsonReply(json{{"items", std::move(out)}});
}

Reply ProcessApi::get(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto dto = std::get<Sandboxes::LiveHandle>(live).core->get(std::string(r.match.param("pid")));
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  return jsonReply(processJson(std::get<ProcessDto>(dto)));
}

Reply ProcessApi::logs(const Request& r) {
  Reply error;
  auto decoded = decodeLogs(r.query);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  LogsOptions o;
  o.cursor = q->cursor;
  o.limit = q->limit;
  o.encoding = q->encoding == daemon::LogEncoding::kBase64 ? stockade::LogEncoding::kBase64 : stockade::LogEncoding::kText;
  auto page = guarded([&] { return std::get<Sandboxes::LiveHandle>(live).core->logs(std::string(r.match.param("pid")), o); });
  if (auto* e = std::get_if<ApiError>(&page)) return Response::error(*e);
  auto& result = std::get<ProcessResult<LogsPage>>(page);
  if (auto* e = std::get_if<ProcessError>(&result)) return Response::error(apiErrorFor(*e));
  const LogsPage& p = std::get<LogsPage>(result);
  json items = json::array();
  for (const auto& f : p.items) items.push_back(logFrameJson(f));
  json out{{"items", std::move(items)}, {"hasMore", p.hasMore}, {"truncatedHead", p.truncatedHead}};
  if (p.nextCursor) out["nextCursor"] = *p.nextCursor;
  if (p.firstAvailableCursor) out["firstAvailableCursor"] = *p.firstAvailableCursor;
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
  Reply error;
  auto decoded = decodeLogStream(r.query);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  std::string pid(r.match.param("pid"));
  // Refused before the stream starts: an unknown process is a 404, not a stream.
  auto exists = guarded([&] { return h.core->logs(pid, LogsOptions{q->cursor, 1, stockade::LogEncoding::kText}); });
  if (auto* e = std::get_if<ApiError>(&exists)) return Response::error(*e);
  if (auto* e = std::get_if<ProcessError>(&std::get<ProcessResult<LogsPage>>(exists)))
    return Response::error(apiErrorFor(*e));
  LogsOptions o;
  o.cursor = q->cursor;
  o.encoding = q->encoding == daemon::LogEncoding::kBase64 ? stockade::LogEncoding::kBase64 : stockade::LogEncoding::kText;
  return StreamReply{std::make_shared<ThreadedChunks>(logPump(h.core, pid, o, false))};
}

Reply ProcessApi::wait(const Request& r) {
  Reply error;
  auto decoded = decodeWait(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  std::string pid(r.match.param("pid"));
  auto found = std::get<Sandboxes::LiveHandle>(live).core->find(pid);
  if (auto* e = std::get_if<ProcessError>(&found)) return Response::error(apiErrorFor(*e));
  return deferredWait(std::get<std::shared_ptr<process::Record>>(found), millis(q->timeoutMs),
                      [](const WaitResult& result) { return jsonReply(waitResultJson(result)); }, "process " + pid);
}

Reply ProcessApi::kill(const Request& r) {
  Reply error;
  auto decoded = decodeKill(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  std::string pid(r.match.param("pid"));
  auto dto = h.core->get(pid);
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  KillOptions o;
  auto toSignal = [](daemon::Signal s) {
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
  };
  o.signal = toSignal(q->signal);
  o.escalateTo = toSignal(q->escalateTo);
  if (q->escalateAfterMs) o.escalateAfter = std::chrono::milliseconds(*q->escalateAfterMs);
  // The stop is written before it is dispatched, under the process's key.
  const auto& d = std::get<ProcessDto>(dto);
  std::int64_t effect = d.processKey ? ledger_.beginEffect(*d.processKey, "signal", signalName(q->signal)) : 0;
  auto status = h.core->kill(pid, o);
  if (effect) ledger_.endEffect(effect, !status, status ? status->message : "");
  if (status) return Response::error(apiErrorFor(*status));
  return Response::noContent();
}

Reply ProcessApi::stdinWrite(const Request& r) {
  Reply error;
  auto decoded = decodeStdin(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto status = std::get<Sandboxes::LiveHandle>(live).core->stdin(std::string(r.match.param("pid")), q->data, q->eof);
  if (status) return Response::error(apiErrorFor(*status));
  return Response::noContent();
}

Reply ProcessApi::remove(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  std::string pid(r.match.param("pid"));
  auto dto = h.core->get(pid);
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  const auto& d = std::get<ProcessDto>(dto);
  std::int64_t effect = d.processKey ? ledger_.beginEffect(*d.processKey, "delete", "") : 0;
  auto status = h.core->remove(pid);
  if (effect) ledger_.endEffect(effect, !status, status ? status->message : "");
  if (status) return Response::error(apiErrorFor(*status));
  if (d.processKey && d.state != ProcessState::kTerminal)
    ledger_.markEnded(*d.processKey, ledger::ProcessState::kKilled, std::nullopt, SIGTERM, "deleted");
  return Response::noContent();
}

Reply ProcessApi::terminate(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeTerminate(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto answer = sandboxes_.terminate(r.match.param("id"), q->processKey);
  if (auto* e = std::get_if<ApiError>(&answer)) return Response::error(*e);
  return jsonReply(json{{"result", ledger::terminateAnswerName(std::get<ledger::TerminateAnswer>(answer))}});
}

Reply ProcessApi::createSession(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeCreateSession(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  if (auto e = processLimit(h, sandboxes_.maxProcesses())) return Response::error(*e);
  CreateSessionOptions o;
  o.cwd = q->cwd;
  o.env = q->env;
  o.shell = q->shell;
  std::string key = newId("pk_");
  if (!ledger_.beginStart(key, h.id, "")) return Response::error({ApiCode::kInternal, "processKey collision"});
  auto created = guarded([&] { return h.core->createSession(o); });
  auto fail = [&](const ApiError& e) {
    ledger_.markEnded(key, ledger::ProcessState::kFailed, std::nullopt, std::nullopt, e.message);
    return Response::error(e);
  };
  if (auto* e = std::get_if<ApiError>(&created)) return fail(*e);
  auto& result = std::get<ProcessResult<Session>>(created);
  if (auto* e = std::get_if<ProcessError>(&result)) return fail(apiErrorFor(*e));
  const Session& session = std::get<Session>(result);
  auto dto = session.get();
  if (auto* d = std::get_if<ProcessDto>(&dto); d && d->pid) {
    if (auto identity = platform::identifyProcess(*d->pid)) ledger_.markStarted(key, session.id(), *identity, "");
  }
  return jsonReply(json{{"id", session.id()}, {"processKey", key}});
}

Reply ProcessApi::getSession(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto dto = std::get<Sandboxes::LiveHandle>(live).core->sessionGet(std::string(r.match.param("sid")));
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  return jsonReply(processJson(std::get<ProcessDto>(dto)));
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

Reply ProcessApi::sessionRun(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeSessionRun(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  auto started = guarded([&] { return h.core->sessionStart(std::string(r.match.param("sid")), q->command, sessionOptions(*q)); });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  auto& result = std::get<ProcessResult<ProcessHandle>>(started);
  if (auto* e = std::get_if<ProcessError>(&result)) return Response::error(apiErrorFor(*e));
  const ProcessHandle& handle = std::get<ProcessHandle>(result);
  auto found = h.core->find(handle.id());
  if (auto* e = std::get_if<ProcessError>(&found)) return Response::error(apiErrorFor(*e));
  auto record = std::get<std::shared_ptr<process::Record>>(found);
  return deferredWait(record, millis(q->timeoutMs),
                      [record](const WaitResult& w) {
                        return jsonReply(runResultJson(process::ServiceCore::collect(*record, w)));
                      },
                      "session command " + handle.id());
}

Reply ProcessApi::sessionStart(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeSessionStart(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  auto started = guarded([&] { return h.core->sessionStart(std::string(r.match.param("sid")), q->command, sessionOptions(*q)); });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  auto& result = std::get<ProcessResult<ProcessHandle>>(started);
  if (auto* e = std::get_if<ProcessError>(&result)) return Response::error(apiErrorFor(*e));
  auto dto = std::get<ProcessHandle>(result).get();
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  return jsonReply(processJson(std::get<ProcessDto>(dto)));
}

Reply ProcessApi::deleteSession(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto status = std::get<Sandboxes::LiveHandle>(live).core->sessionRemove(std::string(r.match.param("sid")));
  if (status) return Response::error(apiErrorFor(*status));
  return Response::noContent();
}

Reply ProcessApi::startPty(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeStartPty(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  if (auto e = processLimit(h, sandboxes_.maxProcesses())) return Response::error(*e);
  auto started = startRecorded(ledger_, h, std::nullopt, [&](const std::string& key) {
    ProcessStartOptions o;
    o.cwd = q->cwd;
    o.env = q->env;
    o.processKey = key;
    // No command: an interactive shell.
    return h.core->start(ProcessCommand::shell(q->cmd.value_or("exec \"${SHELL:-sh}\" -i")), o, ProcessKind::kPty,
                         stockade::TerminalSize{q->size.cols, q->size.rows});
  });
  if (auto* e = std::get_if<ApiError>(&started)) return Response::error(*e);
  return jsonReply(processJson(std::get<Started>(started).dto));
}

Reply ProcessApi::attachPty(const Request& r) {
  Reply error;
  auto decoded = decodeLogStream(r.query);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto& h = std::get<Sandboxes::LiveHandle>(live);
  std::string pid(r.match.param("pid"));
  auto dto = h.core->get(pid);
  if (auto* e = std::get_if<ProcessError>(&dto)) return Response::error(apiErrorFor(*e));
  if (std::get<ProcessDto>(dto).kind != ProcessKind::kPty)
    return Response::error({ApiCode::kUnsupported, "process " + pid + " is not a PTY; stream its logs instead"});
  auto core = h.core;
  LogsOptions o;
  o.cursor = q->cursor;
  o.encoding = stockade::LogEncoding::kBase64;  // terminal bytes, whatever they are
  return Upgrade{std::make_shared<ThreadedDuplex>(
      [core, pid](std::string_view bytes) { (void)core->stdin(pid, bytes, false); },
      logPump(core, pid, o, true))};
}

Reply ProcessApi::resizePty(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  Reply error;
  auto decoded = decodeResize(r.body);
  auto* q = decodedOr(decoded, error);
  if (!q) return error;
  auto live = sandboxes_.live(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&live)) return Response::error(*e);
  auto status = std::get<Sandboxes::LiveHandle>(live).core->resize(std::string(r.match.param("pid")),
                                                                   stockade::TerminalSize{q->cols, q->rows});
  if (status) return Response::error(apiErrorFor(*status));
  return Response::noContent();
}

}  // namespace stockade::daemon
