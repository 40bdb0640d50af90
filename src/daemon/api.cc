#include "src/daemon/api.h"

#include <nlohmann/json.hpp>

#include "src/daemon/requests.h"
#include "stockade/version.h"

namespace stockade::daemon {

using nlohmann::json;

Api::Api(ApiContext context) : context_(std::move(context)) {}

Reply Api::handle(Request& request) {
  switch (request.match.route->id) {
    case RouteId::kHealth: return health(request);
    default: break;
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
