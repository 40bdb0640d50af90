#include "src/audit/proxy_event.h"

namespace stockade::audit {

nlohmann::json proxyEventJson(const proxy::ProxyEvent& e) {
  return {{"sandboxId", e.sandboxId},
          {"runId", e.runId},
          {"protocol", proxy::protocolName(e.protocol)},
          {"host", e.host},
          {"port", e.port},
          {"address", e.address},
          {"verdict", proxy::eventVerdictName(e.verdict)},
          {"rule", e.rule},
          {"status", e.status},
          {"bytesUp", e.bytesUp},
          {"bytesDown", e.bytesDown},
          {"durationUs", e.duration.count()}};
}

void writeProxyEvent(Log& log, const proxy::ProxyEvent& e) noexcept try {
  log.decision("proxy", proxyEventJson(e), {"protocol", "host", "port", "address", "verdict", "rule", "status"},
               {"bytesUp", "bytesDown", "durationUs"});
} catch (...) {
}

}  // namespace stockade::audit
