// Internal state shared by SandboxManager, SandboxHandle and Run.
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "platform/linux/spawn.h"
#include "policy/drift.h"
#include "proxy/proxy.h"
#include "src/audit/log.h"
#include "src/spawner.h"
#include "stockade/manager.h"

namespace stockade::detail {

// One in-flight child, shared by its waiter thread and dispose().
struct RunShared {
  std::string runId;
  std::string correlationId;
  platform::Child child;  // pidfd of the sandbox's init: killing it kills every process inside
  std::promise<Completion> promise;
  std::vector<proxy::ListenerHandle> listeners;
  std::unique_ptr<std::stop_callback<std::function<void()>>> onStop;
  long denials = 0;  // seccomp denials answered; touched by the waiter thread only
  std::string sandboxId;
  std::function<void()> afterExit;  // run by the waiter once the child is gone, before `completed` settles
};

struct ManagerState {
  // Lock order: gate, then mu. Never call into the proxy (it waits for its io
  // thread) or a user's audit sink with `mu` held.
  //
  // `gate` is held shared by run() from its snapshot of the live rules until
  // the child is registered, and exclusively by createSandbox(), narrow() and
  // dispose(): a child is never spawned under rules older than the last
  // narrow() that returned, and dispose() sees (and kills) every child that
  // started before it.
  std::shared_mutex gate;
  mutable std::mutex mu;
  std::condition_variable settled;  // notified when a run leaves `runs`

  bool initialized = false;
  std::uint64_t generation = 0;
  std::uint64_t nextSerial = 0;
  std::string sandboxId;
  DeriveContext context;
  std::optional<SandboxPolicy> livePolicy;
  std::optional<policy::DriftBaseline> baseline;             // the live rules + identities of denied objects
  // What the proxy reads per request, on its io thread. Behind a lock of its
  // own, never held across a call, rather than under `mu`: the proxy must
  // never wait for the manager's lock, because run() and dispose() wait for
  // the proxy's io thread.
  class LiveNetwork {
   public:
    std::shared_ptr<const DerivedRules::Network> load() const {
      std::lock_guard lock(mu_);
      return rules_;
    }
    void store(std::shared_ptr<const DerivedRules::Network> rules) {
      std::lock_guard lock(mu_);
      rules_ = std::move(rules);
    }

   private:
    mutable std::mutex mu_;
    std::shared_ptr<const DerivedRules::Network> rules_;
  } liveNetwork;
  std::map<std::string, std::shared_ptr<RunShared>> runs;
  std::shared_ptr<proxy::Proxy> proxy;  // created with the first child that has network

  Spawner spawner;  // spawns from one long-lived thread: PDEATHSIG is tied to the spawning thread

  // The spare: one sandbox built ahead, on the spawner thread, under the
  // rules the last run() derived, so the next run() only has to send its
  // program (spare.cc). Guarded by `mu`.
  struct Spare {
    std::uint64_t generation = 0;
    std::string fingerprint;                           // of the rules it is built under
    std::optional<platform::PreparedSandbox> sandbox;  // empty while being built
  };
  std::optional<Spare> spare;
  std::condition_variable spareSettled;  // a build finished (or was given up)

  audit::Log audit;

  // `fields` is a JSON object merged into the event, which names this
  // sandbox unless it names one itself. Never throws. Call without `mu` held.
  void writeAudit(const std::string& event, nlohmann::json fields = nlohmann::json::object()) noexcept;
  void logError(const std::string& message);
};

std::string randomId(std::string_view prefix);
DerivedRules deriveOrThrow(const SandboxPolicy& policy, const DeriveContext& ctx, ErrorCode code, std::string_view what);
void applyNarrowing(ManagerState& s, const SandboxPolicy& policy, DerivedRules rules);
void checkNarrowable(const DerivedRules& live, const DerivedRules& candidate);
// Disposes the sandbox of `generation` (any, when nullopt): kills every
// in-flight child and waits until each has settled.
void disposeAll(const std::shared_ptr<ManagerState>& s, std::optional<std::uint64_t> generation);
// The spare (spare.cc). takeSpare() waits for a build in progress and returns
// the sandbox only when it was built for `generation` under rules with this
// fingerprint and the host objects its mounts hold are still the ones at
// those paths. Call without `mu` held.
std::optional<platform::PreparedSandbox> takeSpare(ManagerState& s, std::uint64_t generation,
                                                   const std::string& fingerprint);
// Queues the build of a spare under `rules` (whose fingerprint is given)
// unless one exists. Without `mu`.
void scheduleSpare(const std::shared_ptr<ManagerState>& s, std::uint64_t generation, const DerivedRules& rules,
                   const std::string& fingerprint, std::optional<std::uint16_t> proxyPort);
// Gives up the spare (narrow(), dispose()): a sandbox built under wider rules
// is killed on the spawner thread. The caller holds `mu`.
void dropSpare(ManagerState& s);
// Throws std::logic_error when called from inside an audit sink: the sink runs
// on threads that run() and dispose() wait for.
void refuseFromAuditSink(std::string_view what);

}  // namespace stockade::detail
