// A proxy decision as an audit event (event.h), shared by the library and the CLI.
#pragma once

#include <nlohmann/json.hpp>

#include "proxy/proxy.h"
#include "src/audit/log.h"

namespace stockade::audit {

nlohmann::json proxyEventJson(const proxy::ProxyEvent& e);

// Writes `e` as a "proxy" decision: repeats of the same verdict for the same
// destination and process are counted, not written one by one (log.h).
void writeProxyEvent(Log& log, const proxy::ProxyEvent& e) noexcept;

}  // namespace stockade::audit
