#include "src/proxy_audit.h"

namespace stockade {

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

}  // namespace stockade
