#include "src/daemon/process_json.h"

#include "src/ledger/ledger.h"

namespace stockade::daemon {

using nlohmann::json;

std::string isoTime(std::chrono::system_clock::time_point t) { return ledger::utcTimestamp(t); }

json processJson(const ProcessDto& p) {
  std::string kind(processKindName(p.kind)), state(processStateName(p.state));
  json j{{"id", p.id},
         {"sandboxId", p.sandboxId},
         {"kind", kind},
         {"rawKind", kind},
         {"state", state},
         {"rawState", state},
         {"system", false},
         {"login", p.login},
         {"cwd", p.cwd},
         {"stdin", std::string(stdinModeName(p.stdin))},
         {"rawStdin", std::string(stdinModeName(p.stdin))},
         {"keepLogs", std::string(keepLogsName(p.keepLogs))},
         {"rawKeepLogs", std::string(keepLogsName(p.keepLogs))},
         {"createdAt", isoTime(p.createdAt)},
         {"truncatedHead", p.truncatedHead}};
  if (p.name) j["name"] = *p.name;
  if (p.pid) j["pid"] = *p.pid;
  if (p.sessionId) j["sessionId"] = *p.sessionId;
  if (p.argv) j["argv"] = *p.argv;
  if (p.shellCommand) j["shellCommand"] = *p.shellCommand;
  if (p.shell) j["shell"] = *p.shell;
  if (p.resolvedShell) j["resolvedShell"] = *p.resolvedShell;
  if (p.executionTimeout) j["executionTimeout"] = p.executionTimeout->count();
  if (p.terminal) j["terminal"] = {{"cols", p.terminal->cols}, {"rows", p.terminal->rows}};
  if (p.processKey) j["processKey"] = *p.processKey;
  if (p.exitCode) j["exitCode"] = *p.exitCode;
  if (p.signal) j["signal"] = *p.signal;
  if (p.reason) {
    j["reason"] = std::string(processReasonName(*p.reason));
    j["rawReason"] = p.reasonDetail ? *p.reasonDetail : std::string(processReasonName(*p.reason));
  }
  if (p.startedAt) j["startedAt"] = isoTime(*p.startedAt);
  if (p.exitedAt) j["exitedAt"] = isoTime(*p.exitedAt);
  if (p.firstAvailableCursor) j["firstAvailableCursor"] = *p.firstAvailableCursor;
  if (p.lastCursor) j["lastCursor"] = *p.lastCursor;
  const auto& m = p.metrics;
  json metrics{{"cpuTimeUs", m.cpuTime.count()},
               {"peakMemoryBytes", m.peakMemoryBytes},
               {"stdoutBytes", m.stdoutBytes},
               {"stderrBytes", m.stderrBytes},
               {"droppedLogBytes", m.droppedLogBytes},
               {"denials", m.denials}};
  if (m.killedByLimit) metrics["killedByLimit"] = *m.killedByLimit;
  if (m.limitReached) metrics["limitReached"] = *m.limitReached;
  j["metrics"] = std::move(metrics);
  return j;
}

json waitResultJson(const WaitResult& r) {
  json j{{"reason", std::string(processReasonName(reasonOf(r)))}};
  if (auto* e = std::get_if<Exited>(&r)) j["exitCode"] = e->exitCode;
  if (auto* s = std::get_if<Signaled>(&r)) j["signal"] = s->signal;
  if (auto* l = std::get_if<Lost>(&r)) j["rawReason"] = l->detail;
  if (auto* f = std::get_if<Failed>(&r)) {
    if (f->exitCode) j["exitCode"] = *f->exitCode;
    j["rawReason"] = f->detail;
  }
  return j;
}

json logFrameJson(const LogFrame& f) {
  return {{"cursor", f.cursor},
          {"channel", std::string(logChannelName(f.channel))},
          {"data", f.data},
          {"encoding", std::string(logEncodingName(f.encoding))},
          {"timestamp", std::chrono::duration_cast<std::chrono::milliseconds>(f.timestamp.time_since_epoch()).count()}};
}

std::string streamEventLine(const StreamLogEvent& e) {
  json j;
  if (auto* l = std::get_if<LogEvent>(&e.event)) {
    j = {{"type", "log"}, {"frame", logFrameJson(l->frame)}};
  } else if (auto* s = std::get_if<StateEvent>(&e.event)) {
    j = {{"type", "state"}, {"result", waitResultJson(s->result)}};
  } else if (auto* w = std::get_if<WarningEvent>(&e.event)) {
    j = {{"type", "warning"}, {"message", w->message}};
    if (w->firstAvailableCursor) j["firstAvailableCursor"] = *w->firstAvailableCursor;
  } else {
    j = {{"type", "eof"}};
  }
  if (e.cursor) j["cursor"] = *e.cursor;
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

json runResultJson(const RunResult& r) {
  json j = waitResultJson(r.result);
  j["processId"] = r.processId;
  j["output"] = r.output;
  j["stdout"] = r.stdout;
  j["stderr"] = r.stderr;
  json logs = json::array();
  for (const auto& f : r.logs) logs.push_back(logFrameJson(f));
  j["logs"] = std::move(logs);
  return j;
}

ApiError apiErrorFor(const ProcessError& e) {
  switch (e.code) {
    case ProcessErrorCode::kNotFound: return {ApiCode::kNotFound, e.message};
    case ProcessErrorCode::kTimeout: return {ApiCode::kTimeout, e.message};
    case ProcessErrorCode::kStaleEpoch: return {ApiCode::kStaleEpoch, e.message};
    case ProcessErrorCode::kUnavailable: return {ApiCode::kUnavailable, e.message};
    case ProcessErrorCode::kUnsupported: return {ApiCode::kUnsupported, e.message};
    case ProcessErrorCode::kInvalidPath: return {ApiCode::kInvalidPath, e.message};
  }
  return {ApiCode::kInternal, e.message};
}

namespace {

// Jupyter's MIME types under the names seed 002's Result gives them.
constexpr std::pair<const char*, const char*> kResultFormats[] = {
    {"text/plain", "text"},       {"text/html", "html"},          {"text/markdown", "markdown"},
    {"image/svg+xml", "svg"},     {"image/png", "png"},           {"image/jpeg", "jpeg"},
    {"application/pdf", "pdf"},   {"text/latex", "latex"},        {"application/json", "json"},
    {"application/javascript", "javascript"},
};

}  // namespace

json executionJson(const process::Execution& e) {
  json results = json::array();
  for (const auto& r : e.results) {
    json out = json::object();
    json extra = json::object();
    json formats = json::array();
    for (const auto& [mime, value] : r.data.items()) {
      const char* name = nullptr;
      for (const auto& [m, n] : kResultFormats)
        if (mime == m) name = n;
      if (name) {
        out[name] = value;
        formats.push_back(name);
      } else {
        extra[mime] = value;
      }
    }
    if (!extra.empty()) out["extra"] = std::move(extra);
    out["formats"] = std::move(formats);
    out["isMainResult"] = r.isMainResult;
    results.push_back(std::move(out));
  }
  json error = nullptr;
  if (e.error) error = json{{"name", e.error->name}, {"value", e.error->value}, {"traceback", e.error->traceback}};
  json kernel{{"processId", e.kernelId}, {"new", e.newKernel}};
  if (e.stateLost) kernel["stateLost"] = *e.stateLost;
  json out{{"results", std::move(results)},
           {"logs", {{"stdout", e.stdout}, {"stderr", e.stderr}}},
           {"error", std::move(error)},
           {"kernel", std::move(kernel)}};
  out["executionCount"] = e.executionCount ? json(*e.executionCount) : json(nullptr);
  if (e.logsTruncated) out["logsTruncated"] = true;
  if (e.resultsTruncated) out["resultsTruncated"] = true;
  return out;
}

}  // namespace stockade::daemon
