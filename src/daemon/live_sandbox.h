// One sandbox of the daemon as the process service sees it (the seam
// src/process/sandbox_context.h): its own live rules, drift-checked before
// every child, its registry of processes, its log budget and a spare built
// ahead under its rules; narrowed and disposed on its own, never touching
// another sandbox. Every sandbox of the daemon shares one process::Runtime
// (one supervisor loop, one launcher, one proxy, one audit log).
//
// Its process service is process::makeServiceCore(sandbox): the core holds
// the sandbox, never the other way round.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "policy/drift.h"
#include "src/process/runtime.h"
#include "src/process/sandbox_context.h"
#include "src/process/service.h"
#include "stockade/process.h"

namespace stockade::daemon {

// What every child of a sandbox gets.
struct ProcessOptions {
  std::size_t logBytesPerProcess = 1u << 20;  // output kept per process
  std::size_t logBytesPerSandbox = 64u << 20; // output kept for all processes of one sandbox
  bool spares = true;                         // build the next child's sandbox ahead
  // Names its proxy resolves to a fixed address instead of asking DNS
  // (stockaded --resolve; checked with process::resolveProblem()).
  std::map<std::string, std::string> resolve;
};

class LiveSandbox : public process::SandboxContext, public std::enable_shared_from_this<LiveSandbox> {
 public:
  // `rules` were derived from `policy` against `context` (cwd: the workspace).
  static std::shared_ptr<LiveSandbox> make(process::Runtime& runtime, std::string id, std::string workspace,
                                           SandboxPolicy policy, DeriveContext context, DerivedRules rules,
                                           ProcessOptions options);
  ~LiveSandbox() override;

  process::Admission admit(const AdmitRequest& request) override;
  bool live() const override;
  const std::string& sandboxId() const override { return id_; }
  std::string workspace() const override { return workspace_; }
  std::string defaultCwd() const override { return "/workspace"; }
  process::Launcher& launcher() override { return runtime_.launcher; }
  process::EventLoop& loop() override { return runtime_.supervisor.loop(); }
  process::Registry& registry() override { return registry_; }
  const std::shared_ptr<process::LogRing::Budget>& logBudget() const override { return budget_; }
  std::size_t logBytesPerProcess() const override { return options_.logBytesPerProcess; }

  // The rules its children get now (as admitted, or as last narrowed): what
  // the workspace API asks of every file operation.
  DerivedRules rules() const;
  // The host pids of its running children's sandbox inits (what a snapshot freezes).
  std::vector<int> processRoots();
  // While held, no child is admitted (an admission waits), and every child
  // admitted before is registered: a snapshot's freeze sees them all and no
  // new one appears beside them. narrow() and dispose() wait for it too.
  std::unique_lock<std::shared_mutex> holdAdmissions() { return std::unique_lock(gate_); }

  // Replaces the live rules (the caller checked they narrow them): waits for
  // children being admitted, so none starts under the older rules after it.
  void narrow(SandboxPolicy policy, DerivedRules rules);
  // Refuses new children, kills every running one and waits for each to
  // end (their records say lost), drops the spare. Idempotent.
  void dispose();

 private:
  LiveSandbox(process::Runtime& runtime, std::string id, std::string workspace, SandboxPolicy policy,
              DeriveContext context, DerivedRules rules, ProcessOptions options);
  std::optional<platform::PreparedSandbox> takeSpare(const std::string& fingerprint);
  void scheduleSpare(const DerivedRules& rules, const std::string& fingerprint, bool network);
  void dropSpareLocked();

  process::Runtime& runtime_;
  const std::string id_;
  const std::string workspace_;
  const ProcessOptions options_;
  process::Registry registry_;
  std::shared_ptr<process::LogRing::Budget> budget_;

  // Held shared by an admission until its child is registered, exclusively
  // by narrow() and dispose(). Lock order: gate_, then mu_.
  std::shared_mutex gate_;
  mutable std::mutex mu_;
  bool live_ = true;
  SandboxPolicy policy_;
  DeriveContext context_;
  policy::DriftBaseline baseline_;
  std::uint64_t generation_ = 0;  // of the rules: a narrow makes older spares useless
  // What this sandbox's children's proxy listeners read per request, on the
  // proxy's io thread: a lock of its own, never held across a call.
  struct LiveNetwork {
    std::mutex mu;
    std::shared_ptr<const DerivedRules::Network> rules;  // null after dispose: everything denied
  };
  std::shared_ptr<LiveNetwork> network_ = std::make_shared<LiveNetwork>();
  struct Spare {
    std::uint64_t generation = 0;
    std::string fingerprint;
    std::optional<platform::PreparedSandbox> sandbox;  // empty while being built
  };
  std::optional<Spare> spare_;
  std::condition_variable spareSettled_;
};

}  // namespace stockade::daemon
