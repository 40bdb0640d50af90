#include "src/daemon/live_sandbox.h"

#include <csignal>

#include "src/process/launcher.h"
#include "src/process/registry.h"
#include "src/process/supervisor.h"
#include "stockade/error.h"

namespace stockade::daemon {

std::shared_ptr<LiveSandbox> LiveSandbox::make(process::Runtime& runtime, std::string id, std::string workspace,
                                               SandboxPolicy policy, DeriveContext context, DerivedRules rules,
                                               ProcessOptions options) {
  return std::shared_ptr<LiveSandbox>(new LiveSandbox(runtime, std::move(id), std::move(workspace), std::move(policy),
                                                      std::move(context), std::move(rules), std::move(options)));
}

LiveSandbox::LiveSandbox(process::Runtime& runtime, std::string id, std::string workspace, SandboxPolicy policy,
                         DeriveContext context, DerivedRules rules, ProcessOptions options)
    : runtime_(runtime),
      id_(std::move(id)),
      workspace_(std::move(workspace)),
      options_(std::move(options)),
      budget_(std::make_shared<process::LogRing::Budget>(options_.logBytesPerSandbox)),
      policy_(std::move(policy)),
      context_(std::move(context)),
      baseline_(std::move(rules)) {
  network_->rules = std::make_shared<const DerivedRules::Network>(baseline_.rules().network());
}

LiveSandbox::~LiveSandbox() { dispose(); }

bool LiveSandbox::live() const {
  std::lock_guard lock(mu_);
  return live_;
}

process::Admission LiveSandbox::admit(const AdmitRequest& request) {
  std::shared_lock lease(gate_);
  std::unique_lock lock(mu_);
  if (!live_) throw SandboxError(ErrorCode::kNotInitialized, "sandbox " + id_ + " was closed");
  if (request.perCall)
    throw SandboxError(ErrorCode::kPolicyConflict, "sandbox " + id_ + " takes no per-call policy; narrow it instead");
  const SandboxPolicy policy = policy_;
  const policy::DriftBaseline baseline = baseline_;
  const DeriveContext ctx = context_;
  const std::uint64_t generation = generation_;
  lock.unlock();

  // Drift: re-derived from the live filesystem, compared with what was admitted.
  auto rederived = derive(policy, ctx);
  if (auto* e = std::get_if<PolicyError>(&rederived)) {
    runtime_.audit.write("drift", {{"sandboxId", id_}, {"processId", request.id}, {"message", e->text()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "sandbox " + id_ + "'s policy no longer derives: " + e->text());
  }
  DerivedRules rules = std::get<DerivedRules>(std::move(rederived));
  if (auto w = baseline.check(rules)) {
    runtime_.audit.write("drift", {{"sandboxId", id_},
                                   {"processId", request.id},
                                   {"axis", w->axis},
                                   {"entry", w->entry},
                                   {"message", w->message},
                                   {"admitted", baseline.rules().fingerprint()},
                                   {"now", rules.fingerprint()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "refused, sandbox " + id_ + "'s rules widened since admission: " +
                                                    w->message);
  }
  std::string fingerprint = rules.fingerprint();
  const bool network = !rules.network().allowedDomains.empty();
  proxy::RulesProvider networkRules;
  if (network) {
    networkRules = [holder = network_]() -> std::shared_ptr<const DerivedRules::Network> {
      std::lock_guard l(holder->mu);
      return holder->rules;
    };
  }
  std::optional<platform::PreparedSandbox> spare;
  std::function<void()> afterExit;
  if (options_.spares) {
    if (request.spare) spare = takeSpare(fingerprint);
    std::weak_ptr<LiveSandbox> weak = weak_from_this();
    afterExit = [weak, generation, rules, fingerprint, network] {
      auto self = weak.lock();
      if (!self) return;
      {
        std::lock_guard l(self->mu_);
        if (self->generation_ != generation) return;  // narrowed since: the next child builds afresh
      }
      self->scheduleSpare(rules, fingerprint, network);
    };
  }
  process::Admission admission{std::move(rules), std::move(fingerprint), std::move(spare), std::move(networkRules),
                               std::move(afterExit), std::move(lease)};
  if (network) admission.resolve = options_.resolve;
  return admission;
}

std::optional<platform::PreparedSandbox> LiveSandbox::takeSpare(const std::string& fingerprint) {
  std::optional<platform::PreparedSandbox> taken;
  {
    std::unique_lock lock(mu_);
    // A build in progress ends sooner than a fresh spawn would.
    spareSettled_.wait(lock, [&] { return !spare_ || spare_->sandbox; });
    if (!spare_) return std::nullopt;
    taken = std::move(spare_->sandbox);
    bool matches = spare_->generation == generation_ && spare_->fingerprint == fingerprint;
    spare_.reset();
    if (!matches) {
      lock.unlock();
      taken.reset();
      return std::nullopt;
    }
  }
  if (!taken->matchesHost()) taken.reset();
  return taken;
}

void LiveSandbox::scheduleSpare(const DerivedRules& rules, const std::string& fingerprint, bool network) {
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    if (spare_ || !live_) return;
    generation = generation_;
    spare_ = Spare{generation, fingerprint, std::nullopt};
  }
  std::weak_ptr<LiveSandbox> weak = weak_from_this();
  runtime_.spawner.post([weak, generation, rules, fingerprint, network] {
    auto self = weak.lock();
    if (!self) return;
    std::variant<platform::PreparedSandbox, platform::SpawnError> built = platform::SpawnError{};
    try {
      built = platform::prepare(process::Launcher::sandboxRequest(rules, process::Output::kSupervisor,
                                                                  platform::OnMissingLayer::kRefuse, network, {},
                                                                  self->workspace_));
    } catch (...) {
      // Handled as a failed build: the slot is released below.
    }
    std::optional<platform::PreparedSandbox> unused;  // killed and reaped on this thread
    {
      std::lock_guard lock(self->mu_);
      bool ours = self->spare_ && !self->spare_->sandbox && self->spare_->generation == generation && self->live_;
      auto* sandbox = std::get_if<platform::PreparedSandbox>(&built);
      if (ours && sandbox) {
        self->spare_->sandbox.emplace(std::move(*sandbox));
      } else {
        if (ours) self->spare_.reset();
        if (sandbox) unused.emplace(std::move(*sandbox));
      }
    }
    self->spareSettled_.notify_all();
  });
}

void LiveSandbox::dropSpareLocked() {
  if (!spare_) return;
  if (spare_->sandbox) {
    auto old = std::make_shared<platform::PreparedSandbox>(std::move(*spare_->sandbox));
    runtime_.spawner.post([old]() mutable { old.reset(); });
  }
  spare_.reset();
  spareSettled_.notify_all();
}

DerivedRules LiveSandbox::rules() const {
  std::lock_guard lock(mu_);
  return baseline_.rules();
}

std::vector<int> LiveSandbox::processRoots() {
  std::vector<int> pids;
  for (const auto& record : registry_.all()) {
    if (record->terminal()) continue;
    if (auto supervised = record->supervised()) pids.push_back(supervised->pid());
  }
  return pids;
}

void LiveSandbox::narrow(SandboxPolicy policy, DerivedRules rules) {
  std::unique_lock gate(gate_);
  std::lock_guard lock(mu_);
  if (!live_) return;
  policy_ = std::move(policy);
  baseline_ = policy::DriftBaseline(std::move(rules), &baseline_);
  ++generation_;
  dropSpareLocked();
  std::lock_guard n(network_->mu);
  network_->rules = std::make_shared<const DerivedRules::Network>(baseline_.rules().network());
}

void LiveSandbox::dispose() {
  {
    std::unique_lock gate(gate_);
    std::lock_guard lock(mu_);
    if (!live_) return;
    live_ = false;
    dropSpareLocked();
    std::lock_guard n(network_->mu);
    network_->rules = nullptr;  // running children's proxies deny everything from now on
  }
  auto records = registry_.close();
  for (auto& record : records) {
    record->markLost("sandbox " + id_ + " was closed while it ran");
    if (auto supervised = record->supervised()) supervised->kill(SIGKILL);
  }
  for (auto& record : records) (void)record->wait(std::nullopt);
  runtime_.spawner.call([] {});  // the spare's end is queued there
  runtime_.audit.write("dispose", {{"sandboxId", id_}});
  runtime_.audit.closeSandbox(id_);
}

}  // namespace stockade::daemon
