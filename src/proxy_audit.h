// A proxy decision as an audit record (JSON object), shared by the manager's
// audit stream and `stockade run --audit`.
#pragma once

#include <nlohmann/json.hpp>

#include "proxy/proxy.h"

namespace stockade {

nlohmann::json proxyEventJson(const proxy::ProxyEvent& e);

}  // namespace stockade
