// Internal state of SandboxManager and SandboxHandle: what the manager itself
// owns -- admission, the live rules, epochs, the spare -- and the sandbox of
// the current generation. Processes, audit and the proxy own their state and
// locks (src/process, src/audit).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "platform/linux/spawn.h"
#include "policy/drift.h"
#include "src/process/runtime.h"
#include "src/process/sandbox_context.h"
#include "stockade/manager.h"

namespace stockade::detail {

struct ManagerState;

// The sandbox of one generation, as the process layer sees it.
class ManagedSandbox : public process::SandboxContext {
 public:
  ManagedSandbox(std::weak_ptr<ManagerState> state, process::Runtime& runtime, std::uint64_t generation,
                 std::string sandboxId, std::string workspace, std::string defaultCwd);

  process::Admission admit(const AdmitRequest& request) override;
  bool live() const override;
  const std::string& sandboxId() const override { return sandboxId_; }
  std::string workspace() const override { return workspace_; }
  std::string defaultCwd() const override { return defaultCwd_; }
  process::Launcher& launcher() override { return runtime_.launcher; }
  process::EventLoop& loop() override { return runtime_.supervisor.loop(); }
  process::Registry& registry() override { return registry_; }
  const std::shared_ptr<process::LogRing::Budget>& logBudget() const override { return budget_; }
  std::size_t logBytesPerProcess() const override { return logBytesPerProcess_; }

  std::uint64_t generation() const noexcept { return generation_; }
  process::Runtime& runtime() noexcept { return runtime_; }

 private:
  std::weak_ptr<ManagerState> state_;
  process::Runtime& runtime_;
  const std::uint64_t generation_;
  const std::string sandboxId_;
  const std::string workspace_;  // real host path; empty: none
  const std::string defaultCwd_;
  process::Registry registry_;
  std::shared_ptr<process::LogRing::Budget> budget_;
  std::size_t logBytesPerProcess_;
};

struct ManagerState {
  // Lock order: gate, then mu. Never call into the proxy, the supervisor or
  // a user's audit sink with `mu` held.
  //
  // `gate` is held shared by a child's admission from its snapshot of the
  // live rules until the child is registered, and exclusively by
  // createSandbox(), narrow() and dispose(): a child is never spawned under
  // rules older than the last narrow() that returned, and dispose() sees (and
  // kills) every child that started before it.
  std::shared_mutex gate;
  mutable std::mutex mu;

  bool initialized = false;
  std::uint64_t generation = 0;
  std::uint64_t nextSerial = 0;
  std::string sandboxId;
  std::string workspace;  // of the live generation (a real path); empty: none
  DeriveContext context;
  std::optional<SandboxPolicy> livePolicy;
  std::optional<policy::DriftBaseline> baseline;  // the live rules + identities of denied objects
  // What the proxy reads per request, on its io thread. Behind a lock of its
  // own, never held across a call, rather than under `mu`: the proxy must
  // never wait for the manager's lock, because dispose() waits for the proxy's io thread.
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
  std::shared_ptr<ManagedSandbox> sandbox;  // of the current generation; null when none is live

  // The spare: one sandbox built ahead, on the spawner thread, under the
  // rules the last child derived, so the next one only has to send its
  // program (spare.cc). Guarded by `mu`.
  struct Spare {
    std::uint64_t generation = 0;
    std::string fingerprint;                           // of the rules it is built under
    std::optional<platform::PreparedSandbox> sandbox;  // empty while being built
  };
  std::optional<Spare> spare;
  std::condition_variable spareSettled;  // a build finished (or was given up)

  // Log retention of process-service children (SandboxManager::setProcessLogLimits).
  std::size_t logBytesPerProcess = 1 << 20;
  std::size_t logBytesTotal = 256u << 20;

  // Last: torn down first (kills what is left, joins its threads).
  process::Runtime runtime;

  // `fields` is a JSON object merged into the event, which names this
  // sandbox unless it names one itself. Never throws. Call without `mu` held.
  void writeAudit(const std::string& event, nlohmann::json fields = nlohmann::json::object()) noexcept;
};

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
                   const std::string& fingerprint, bool network);
// Gives up the spare (narrow(), dispose()): a sandbox built under wider rules
// is killed on the spawner thread. The caller holds `mu`.
void dropSpare(ManagerState& s);
// Throws std::logic_error when called from inside an audit sink: the sink runs
// on threads that run() and dispose() wait for.
void refuseFromAuditSink(std::string_view what);

}  // namespace stockade::detail
