#include "proxy/admission.h"

namespace stockade::proxy {

Admission admit(const AdmissionCounts& counts, const ProxyLimits& limits) noexcept {
  Admission refusal = Admission::kServe;
  if (counts.sandboxConnections >= limits.maxConnectionsPerSandbox) {
    refusal = Admission::kRefuseConnectionLimit;
  } else if (counts.listenerPending >= limits.maxPendingPerListener) {
    refusal = Admission::kRefusePendingLimit;
  }
  if (refusal != Admission::kServe && counts.listenerRefusing >= limits.maxPendingPerListener) return Admission::kDrop;
  return refusal;
}

SandboxCounters::Slot& SandboxCounters::Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::exchange(o.owner_, nullptr);
    kind_ = o.kind_;
    sandbox_ = std::move(o.sandbox_);
  }
  return *this;
}

void SandboxCounters::Slot::reset() noexcept {
  if (auto* owner = std::exchange(owner_, nullptr)) owner->release(kind_, sandbox_);
}

SandboxCounters::Slot SandboxCounters::connection(const std::string& sandbox) {
  std::lock_guard lock(mu_);
  ++counts_[sandbox].connections;
  return Slot(this, Kind::kConnection, sandbox);
}

std::optional<SandboxCounters::Slot> SandboxCounters::tunnel(const std::string& sandbox, std::size_t limit) {
  std::lock_guard lock(mu_);
  Counts& c = counts_[sandbox];
  if (c.tunnels >= limit) {
    if (c.connections == 0 && c.tunnels == 0) counts_.erase(sandbox);
    return std::nullopt;
  }
  ++c.tunnels;
  return Slot(this, Kind::kTunnel, sandbox);
}

std::size_t SandboxCounters::count(Kind kind, const std::string& sandbox) const {
  std::lock_guard lock(mu_);
  auto it = counts_.find(sandbox);
  if (it == counts_.end()) return 0;
  return kind == Kind::kConnection ? it->second.connections : it->second.tunnels;
}

void SandboxCounters::release(Kind kind, const std::string& sandbox) noexcept {
  std::lock_guard lock(mu_);
  auto it = counts_.find(sandbox);
  if (it == counts_.end()) return;
  std::size_t& n = kind == Kind::kConnection ? it->second.connections : it->second.tunnels;
  if (n > 0) --n;
  if (it->second.connections == 0 && it->second.tunnels == 0) counts_.erase(it);
}

}  // namespace stockade::proxy
