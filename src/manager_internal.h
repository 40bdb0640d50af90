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
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "platform/linux/spawn.h"
#include "policy/drift.h"
#include "proxy/proxy.h"
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
};

struct ManagerState {
  mutable std::mutex mu;
  std::condition_variable settled;  // notified when a run leaves `runs`

  bool initialized = false;
  std::uint64_t generation = 0;
  std::uint64_t nextSerial = 0;
  std::string sandboxId;
  DeriveContext context;
  std::optional<SandboxPolicy> livePolicy;
  std::optional<policy::DriftBaseline> baseline;             // the live rules + identities of denied objects
  std::shared_ptr<const DerivedRules::Network> liveNetwork;  // what the proxy reads per request
  std::map<std::string, std::shared_ptr<RunShared>> runs;
  std::unique_ptr<proxy::Proxy> proxy;  // created with the first child that has network

  Spawner spawner;  // spawns from one long-lived thread: PDEATHSIG is tied to the spawning thread

  std::mutex auditMu;
  std::function<void(const std::string&)> audit;

  // Never call with `mu` held by a sink that may call back into the manager.
  // `fields` is a JSON object merged into the event.
  void writeAudit(const std::string& event, nlohmann::json fields = nlohmann::json::object());
  void logError(const std::string& message);
};

std::string randomId(std::string_view prefix);
DerivedRules deriveOrThrow(const SandboxPolicy& policy, const DeriveContext& ctx, ErrorCode code, std::string_view what);
void applyNarrowing(ManagerState& s, const SandboxPolicy& policy, DerivedRules rules);
void checkNarrowable(const DerivedRules& live, const DerivedRules& candidate);
void disposeAll(const std::shared_ptr<ManagerState>& s);

}  // namespace stockade::detail
