#include "src/process/egress.h"

#include "src/audit/proxy_event.h"

namespace stockade::process {

Egress::~Egress() { reset(); }

std::vector<proxy::ListenerHandle> Egress::attach(std::vector<platform::UniqueFd> listeners,
                                                  proxy::ListenerContext context) {
  std::shared_ptr<proxy::Proxy> egress;
  {
    std::lock_guard lock(mu_);
    if (!proxy_) {
      proxy_ = std::make_shared<proxy::Proxy>();
      proxy_->setAuditSink([&audit = audit_](const proxy::ProxyEvent& e) { audit::writeProxyEvent(audit, e); });
    }
    egress = proxy_;
  }
  std::vector<proxy::ListenerHandle> handles;
  for (auto& fd : listeners) handles.push_back(egress->addListener(std::move(fd), context));
  return handles;
}

void Egress::reset() {
  std::shared_ptr<proxy::Proxy> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(proxy_);
  }
  old.reset();  // joins the io thread, outside the lock, unless a listener still holds it
}

}  // namespace stockade::process
