#include "src/daemon/api.h"

#include <functional>
#include <nlohmann/json.hpp>

#include "src/daemon/requests.h"
#include "stockade/version.h"

namespace stockade::daemon {

using nlohmann::json;

Api::Api(ApiContext context)
    : context_(std::move(context)),
      processes_(*context_.sandboxes, *context_.ledger),
      workspaces_(*context_.sandboxes, *context_.checkpoints, *context_.snapshots) {}

namespace {

json sandboxJson(const SandboxView& v) {
  const auto& r = v.record;
  json j{{"id", r.id},
         {"epoch", r.epoch},
         {"state", ledger::sandboxStateName(r.state)},
         {"createdAt", r.createdAt},
         {"workspace", r.workspace},
         {"fingerprint", r.fingerprint}};
  j["effectivePolicy"] = v.rules ? json::parse(v.rules->toJson()) : json(nullptr);
  if (!v.problem.empty()) j["problem"] = v.problem;
  if (r.state == ledger::SandboxState::kReleaseFailed) j["releaseError"] = r.releaseError;
  return j;
}

template <class T>
Reply replyOr(const std::variant<T, ApiError>& v, const std::function<Reply(const T&)>& ok) {
  if (auto* e = std::get_if<ApiError>(&v)) return Response::error(*e);
  return ok(std::get<T>(v));
}

}  // namespace

Reply Api::handle(Request& request) {
  switch (request.match.route->id) {
    case RouteId::kHealth: return health(request);
    case RouteId::kCreateSandbox: return createSandbox(request);
    case RouteId::kListSandboxes: return listSandboxes(request);
    case RouteId::kGetSandbox: return getSandbox(request);
    case RouteId::kNarrowSandbox: return narrowSandbox(request);
    case RouteId::kDeleteSandbox: return deleteSandbox(request);
    case RouteId::kTerminate: return processes_.terminate(request);
    case RouteId::kStartProcess: return processes_.start(request);
    case RouteId::kRunProcess: return processes_.run(request);
    case RouteId::kListProcesses: return processes_.list(request);
    case RouteId::kGetProcess: return processes_.get(request);
    case RouteId::kProcessLogs: return processes_.logs(request);
    case RouteId::kProcessLogStream: return processes_.stream(request);
    case RouteId::kWaitProcess: return processes_.wait(request);
    case RouteId::kKillProcess: return processes_.kill(request);
    case RouteId::kProcessStdin: return processes_.stdinWrite(request);
    case RouteId::kDeleteProcess: return processes_.remove(request);
    case RouteId::kCreateSession: return processes_.createSession(request);
    case RouteId::kGetSession: return processes_.getSession(request);
    case RouteId::kSessionRun: return processes_.sessionRun(request);
    case RouteId::kSessionStart: return processes_.sessionStart(request);
    case RouteId::kDeleteSession: return processes_.deleteSession(request);
    case RouteId::kStartPty: return processes_.startPty(request);
    case RouteId::kAttachPty: return processes_.attachPty(request);
    case RouteId::kResizePty: return processes_.resizePty(request);
    case RouteId::kUploadFile: return workspaces_.upload(request);
    case RouteId::kDownloadFile: return workspaces_.download(request);
    case RouteId::kRemoveFile: return workspaces_.remove(request);
    case RouteId::kListFiles: return workspaces_.list(request);
    case RouteId::kFileExists: return workspaces_.exists(request);
    case RouteId::kMakeDir: return workspaces_.makeDir(request);
    case RouteId::kWatchFiles: return workspaces_.watch(request);
    case RouteId::kExportTree: return workspaces_.exportTree(request);
    case RouteId::kImportTree: return workspaces_.importTree(request);
    case RouteId::kPersist: return workspaces_.persist(request);
    case RouteId::kRestore: return workspaces_.restore(request);
    case RouteId::kCreateSnapshot: return workspaces_.snapshot(request);
    case RouteId::kLookupSnapshot: return workspaces_.lookupSnapshot(request);
    case RouteId::kRunCode: return processes_.runCode(request);
  }
  return Response::error({ApiCode::kNotImplemented, "route " + std::string(request.match.route->pattern) +
                                                        " is not implemented by this daemon"});
}

Reply Api::health(const Request& request) {
  if (auto e = requireEmptyQuery(request.query)) return Response::error(*e);
  const auto& f = context_.features;
  std::string seccomp = !f.seccompFilter ? "none" : f.seccompUserNotif ? "filter+user_notif" : "filter";
  return Response::json(json{{"status", "ok"},
                             {"version", std::string(stockade::version())},
                             {"landlockAbi", f.landlockAbi},
                             {"seccomp", seccomp},
                             {"userns", f.userNamespaces}}
                            .dump());
}

}  // namespace stockade::daemon

namespace stockade::daemon {

Reply Api::createSandbox(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto decoded = decodeCreateSandbox(r.body);
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  const auto& request = std::get<CreateSandboxRequest>(decoded);
  return replyOr<SandboxView>(request.fromSnapshot ? workspaces_.createFromSnapshot(request)
                                                   : context_.sandboxes->create(request),
                              [](const SandboxView& v) {
                                json j = sandboxJson(v);
                                return Response::json(json{{"id", j["id"]},
                                                           {"epoch", j["epoch"]},
                                                           {"state", j["state"]},
                                                           {"createdAt", j["createdAt"]},
                                                           {"workspace", j["workspace"]},
                                                           {"fingerprint", j["fingerprint"]},
                                                           {"effectivePolicy", j["effectivePolicy"]}}
                                                          .dump());
                              });
}

Reply Api::listSandboxes(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  json items = json::array();
  for (const auto& s : context_.sandboxes->list())
    items.push_back({{"id", s.id},
                     {"state", ledger::sandboxStateName(s.state)},
                     {"createdAt", s.createdAt},
                     {"workspace", s.workspace}});
  return Response::json(json{{"items", std::move(items)}}.dump());
}

Reply Api::getSandbox(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  return replyOr<SandboxView>(context_.sandboxes->get(r.match.param("id")),
                              [](const SandboxView& v) { return Response::json(sandboxJson(v).dump()); });
}

Reply Api::narrowSandbox(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  auto decoded = decodeNarrow(r.body);
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  return replyOr<SandboxView>(
      context_.sandboxes->narrow(r.match.param("id"), *std::get<NarrowRequest>(decoded).policy),
      [](const SandboxView& v) {
        json j = sandboxJson(v);
        return Response::json(json{{"effectivePolicy", j["effectivePolicy"]}, {"fingerprint", j["fingerprint"]}}.dump());
      });
}

Reply Api::deleteSandbox(const Request& r) {
  if (auto e = requireEmptyQuery(r.query)) return Response::error(*e);
  if (auto e = context_.sandboxes->close(r.match.param("id"))) return Response::error(*e);
  return Response::noContent();
}

}  // namespace stockade::daemon
