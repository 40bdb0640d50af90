// The proxy every sandboxed child of this process reaches the network
// through: created with the first child that has network, its decisions
// audited (repeats counted, audit/log.h). Owns its lock; never held across a
// call into the proxy.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "proxy/proxy.h"
#include "src/audit/log.h"

namespace stockade::process {

class Egress {
 public:
  explicit Egress(audit::Log& audit) : audit_(audit) {}
  ~Egress();

  // Serves the child's listening sockets (platform::Child::proxyListeners).
  // Waits for the proxy's io thread: never call it from that thread.
  std::vector<proxy::ListenerHandle> attach(std::vector<platform::UniqueFd> listeners, proxy::ListenerContext context);
  // Drops the proxy (dispose()); a child still attached keeps it alive until
  // its listeners are released.
  void reset();

 private:
  audit::Log& audit_;
  std::mutex mu_;
  std::shared_ptr<proxy::Proxy> proxy_;
};

}  // namespace stockade::process
