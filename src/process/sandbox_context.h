// What the process service needs of the sandbox it serves: the seam between
// src/process and whoever owns sandboxes (today the process-global manager;
// the daemon holds many). A SandboxContext is one sandbox: its id, its live
// rules (through admit()), its default working directory, and its registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "platform/linux/spawn.h"
#include "proxy/proxy.h"
#include "src/process/launcher.h"
#include "src/process/log_ring.h"
#include "src/process/registry.h"
#include "stockade/policy.h"
#include "stockade/rules.h"

namespace stockade::process {

// The rules a child starting now gets, after the owner's drift check.
struct Admission {
  DerivedRules rules;
  std::string fingerprint;
  std::optional<platform::PreparedSandbox> spare;  // built under `rules` for Output::kPipe children
  proxy::RulesProvider network;                    // empty: no network
  std::function<void()> afterExit;                 // run once the child has ended (the next spare)
  // Held until the child is registered: the owner's narrowing and disposal
  // wait for it, so no child starts under rules older than the last narrow().
  std::shared_lock<std::shared_mutex> lease;
  // Names the child's proxy resolves to these addresses instead of asking DNS.
  std::map<std::string, std::string> resolve;
};

class SandboxContext {
 public:
  virtual ~SandboxContext() = default;

  struct AdmitRequest {
    std::string id;             // the child's, for audit events
    std::string correlationId;  // the caller's, for audit events
    const SandboxPolicy* perCall = nullptr;  // its filesystem part replaces the sandbox's for this child
    bool spare = false;         // a prepared spare may be used (Output::kCaller and kSupervisor children)
  };
  // Throws SandboxError (E_SANDBOX_NOT_INITIALIZED after dispose,
  // E_SANDBOX_POLICY_DRIFT, E_SANDBOX_POLICY_CONFLICT, ...) when no child
  // may start so.
  virtual Admission admit(const AdmitRequest& request) = 0;
  // False once the sandbox is disposed: calls answer stale_epoch.
  virtual bool live() const = 0;

  virtual const std::string& sandboxId() const = 0;
  // The host directory the sandbox shows at /workspace (a real path), or
  // empty: the sandbox has no workspace.
  virtual std::string workspace() const = 0;
  // Where a process starts when no cwd is given: /workspace when the sandbox
  // has a workspace; else the owner's default.
  virtual std::string defaultCwd() const = 0;
  virtual Launcher& launcher() = 0;
  virtual EventLoop& loop() = 0;
  virtual Registry& registry() = 0;
  virtual const std::shared_ptr<LogRing::Budget>& logBudget() const = 0;
  virtual std::size_t logBytesPerProcess() const = 0;
};

}  // namespace stockade::process
