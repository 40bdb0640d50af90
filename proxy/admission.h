// Admission of client connections and upstream connections against the
// proxy's limits (ProxyLimits): per sandbox, the connections open at once and
// the upstream connections (tunnels) open at once; per listener, the
// connections still waiting for their first request head. The decision is a
// pure function of the counts; the counters hand out owned slots.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "proxy/proxy.h"

namespace stockade::proxy {

// What the listener does with a connection it just accepted.
enum class Admission {
  kServe,                 // a normal session
  kRefuseConnectionLimit, // answered "503 connection-limit" / SOCKS5 general failure
  kRefusePendingLimit,    // answered "503 pending-limit" / SOCKS5 general failure
  kDrop,                  // closed at once: too many refusals are being answered already
};

struct AdmissionCounts {
  std::size_t sandboxConnections = 0;  // open client connections of the listener's sandbox
  std::size_t listenerPending = 0;     // the listener's connections still before their first request
  std::size_t listenerRefusing = 0;    // the listener's refusals being answered
};

// The sandbox's connection limit first (it protects the host's descriptors),
// then the listener's pending limit (it keeps idle or slow connections from
// starving the sandbox's own requests). Refusals being answered are bounded
// by maxPendingPerListener too; past that a connection is dropped unanswered.
Admission admit(const AdmissionCounts& counts, const ProxyLimits& limits) noexcept;

// Per-sandbox counts of client connections and of upstream connections,
// shared by every listener of the proxy. Thread-safe: the io thread takes and
// releases slots, any thread may read the counts.
class SandboxCounters {
 public:
  enum class Kind { kConnection, kTunnel };

  // Releases its count when destroyed. Move-only; must not outlive the
  // counters that issued it.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), kind_(o.kind_), sandbox_(std::move(o.sandbox_)) {}
    Slot& operator=(Slot&& o) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { reset(); }
    void reset() noexcept;
    explicit operator bool() const noexcept { return owner_ != nullptr; }

   private:
    friend class SandboxCounters;
    Slot(SandboxCounters* owner, Kind kind, std::string sandbox)
        : owner_(owner), kind_(kind), sandbox_(std::move(sandbox)) {}
    SandboxCounters* owner_ = nullptr;
    Kind kind_ = Kind::kConnection;
    std::string sandbox_;
  };

  // A connection slot, counted unconditionally (admit() decided already).
  Slot connection(const std::string& sandbox);
  // A tunnel slot, or none when the sandbox already has `limit` open.
  std::optional<Slot> tunnel(const std::string& sandbox, std::size_t limit);

  std::size_t count(Kind kind, const std::string& sandbox) const;

 private:
  void release(Kind kind, const std::string& sandbox) noexcept;
  struct Counts {
    std::size_t connections = 0;
    std::size_t tunnels = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Counts> counts_;
};

}  // namespace stockade::proxy
