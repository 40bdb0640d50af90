// SandboxManager and SandboxHandle: admission, narrowing, epochs, dispose.
// run() lives in src/run.cc.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "platform/linux/cgroup.h"
#include "src/audit/event.h"
#include "src/manager/manager_state.h"
#include "src/process/service.h"

namespace stockade {

using detail::ManagerState;

std::string Epoch::text() const { return "g" + std::to_string(generation_) + ".e" + std::to_string(serial_); }

namespace detail {

DerivedRules deriveOrThrow(const SandboxPolicy& policy, const DeriveContext& ctx, ErrorCode code,
                           std::string_view what) {
  auto derived = derive(policy, ctx);
  if (auto* err = std::get_if<PolicyError>(&derived))
    throw SandboxError(code, std::string(what) + ": " + err->text());
  return std::get<DerivedRules>(std::move(derived));
}

void refuseFromAuditSink(std::string_view what) {
  if (audit::Log::insideSink())
    throw std::logic_error(std::string(what) +
                           " called from an audit sink; sinks run on threads the manager waits for, so they must "
                           "only record events (hand work to another thread)");
}

void ManagerState::writeAudit(const std::string& event, nlohmann::json fields) noexcept try {
  if (!fields.is_object()) fields = nlohmann::json::object();
  if (!fields.contains("sandboxId")) {
    std::lock_guard lock(mu);
    fields["sandboxId"] = sandboxId;
  }
  runtime.audit.write(event, std::move(fields));
} catch (...) {
  // Building the event failed (allocation): nothing more can be said safely.
}

// Shrinks the live policy; the caller holds `mu` and has checked narrowing.
void applyNarrowing(ManagerState& s, const SandboxPolicy& policy, DerivedRules rules) {
  policy::DriftBaseline next(std::move(rules), s.baseline ? &*s.baseline : nullptr);
  s.livePolicy = policy;
  s.liveNetwork.store(std::make_shared<const DerivedRules::Network>(next.rules().network()));
  s.baseline.emplace(std::move(next));
  dropSpare(s);  // built under the wider rules
}

// An axis the kernel layer cannot narrow here. The caller holds `mu`.
void checkNarrowable(const DerivedRules& live, const DerivedRules& candidate) {
  // The whole-sandbox limits need a cgroup controller each (platform/linux/cgroup.h).
  struct Limit {
    const char* field;
    std::uint64_t Limits::*value;
    platform::CgroupController controller;
    const char* what;
  };
  static constexpr Limit kLimits[] = {
      {"limits.pids", &Limits::pids, platform::CgroupController::kPids, "a process-count limit"},
      {"limits.memoryBytes", &Limits::memoryBytes, platform::CgroupController::kMemory, "a whole-sandbox memory limit"},
      {"limits.cpuSeconds", &Limits::cpuSeconds, platform::CgroupController::kCpu, "a whole-sandbox CPU-time limit"},
  };
  for (const auto& l : kLimits) {
    const std::uint64_t wanted = candidate.limits().*l.value;
    if (wanted == 0 || wanted == live.limits().*l.value) continue;
    auto controller = platform::findCgroupController(l.controller);
    if (auto* why = std::get_if<std::string>(&controller))
      throw SandboxError(ErrorCode::kNarrowingUnsupported,
                         std::string(l.field) + ": this host cannot enforce " + l.what + " (" + *why + "); leave " +
                             l.field + " as it is, or run where a " +
                             platform::cgroupControllerName(l.controller) + " cgroup is usable");
  }
}

// Kills every in-flight child and waits until each has settled. Returns with
// the sandbox uninitialised. Safe to call when nothing is live.
void disposeAll(const std::shared_ptr<ManagerState>& s, std::optional<std::uint64_t> generation) {
  refuseFromAuditSink("dispose()");
  // Exclusive: waits for spawns in flight to register, and keeps
  // createSandbox() and a second dispose() out until this one is complete.
  std::unique_lock gate(s->gate);
  std::shared_ptr<ManagedSandbox> sandbox;
  {
    std::lock_guard lock(s->mu);
    if (generation && *generation != s->generation) return;  // a later sandbox is not the caller's
    if (!s->initialized && !s->sandbox) return;               // already down
    s->initialized = false;  // new work is refused from here on
    s->livePolicy.reset();
    s->baseline.reset();
    s->liveNetwork.store(nullptr);  // running children's proxies deny everything from now on
    dropSpare(*s);
    sandbox = std::move(s->sandbox);
  }
  if (!sandbox) return;
  auto records = sandbox->registry().close();
  for (auto& record : records) {
    record->markLost("the sandbox was disposed while it ran");
    if (auto supervised = record->supervised()) supervised->kill(SIGKILL);
  }
  for (auto& record : records) (void)record->wait(std::nullopt);
  // The spare's end, and that of a build in flight, are queued on the spawner
  // thread: wait for them, so no sandbox of this session outlives dispose().
  s->runtime.spawner.call([] {});
  s->runtime.egress.reset();  // joins the proxy's io thread, outside the locks
  s->writeAudit("dispose", {{"sandboxId", sandbox->sandboxId()}});
  s->runtime.audit.closeSandbox(sandbox->sandboxId());
}

}  // namespace detail

using detail::deriveOrThrow;

SandboxManager::SandboxManager() : state_(std::make_shared<ManagerState>()) {}
SandboxManager::~SandboxManager() = default;

SandboxManager& SandboxManager::instance() {
  // Never destroyed: children and the supervisor's threads may outlive static destruction.
  static SandboxManager* manager = new SandboxManager();
  return *manager;
}

bool SandboxManager::initialized() const {
  std::lock_guard lock(state_->mu);
  return state_->initialized;
}

void SandboxManager::setAuditSink(std::function<void(const std::string&)> sink) {
  state_->runtime.audit.setSink(std::move(sink));
}

void SandboxManager::setAuditLimits(std::size_t maxEventsPerSandbox) {
  state_->runtime.audit.setLimits({.maxEventsPerSandbox = maxEventsPerSandbox});
}

void SandboxManager::setProcessLogLimits(std::size_t bytesPerProcess, std::size_t bytesTotal) {
  if (bytesPerProcess == 0 || bytesTotal < bytesPerProcess)
    throw std::invalid_argument("setProcessLogLimits(): bytesPerProcess must be positive and at most bytesTotal");
  std::lock_guard lock(state_->mu);
  state_->logBytesPerProcess = bytesPerProcess;
  state_->logBytesTotal = bytesTotal;
}

SandboxHandle SandboxManager::createSandbox(const SandboxPolicy& policy, const SandboxOptions& options) {
  detail::refuseFromAuditSink("createSandbox()");
  std::string workspace;
  if (options.workspace) {
    std::error_code ec;
    const auto real = std::filesystem::canonical(*options.workspace, ec);
    if (ec || !std::filesystem::is_directory(real, ec))
      throw std::invalid_argument("createSandbox(): workspace \"" + *options.workspace +
                                  "\" is not an existing directory; create it, or leave workspace unset");
    workspace = real.string();
  }
  auto& s = *state_;
  std::unique_lock gate(s.gate);
  std::unique_lock lock(s.mu);
  if (!s.initialized) {
    DeriveContext ctx = currentContext();
    if (!workspace.empty()) ctx.cwd = workspace;  // what relative policy paths mean
    ctx.cwdName = workspace.empty() ? "the host application's working directory, or createSandbox()'s workspace"
                                    : "createSandbox()'s workspace";
    DerivedRules rules = deriveOrThrow(policy, ctx, ErrorCode::kInvalidPolicy, "createSandbox()");
    s.initialized = true;
    ++s.generation;
    s.sandboxId = process::newId("sbx");
    s.context = std::move(ctx);
    s.workspace = workspace;
    s.sandbox = std::make_shared<detail::ManagedSandbox>(
        state_, s.runtime, s.generation, s.sandboxId, workspace,
        workspace.empty() ? s.context.cwd.value_or("/") : std::string(platform::WorkspaceMount::kMountPoint));
    s.baseline.reset();
    std::string fingerprint = rules.fingerprint();
    detail::applyNarrowing(s, policy, std::move(rules));
    Epoch epoch(s.generation, ++s.nextSerial);
    lock.unlock();
    nlohmann::json admit = {{"fingerprint", fingerprint}, {"epoch", epoch.text()}};
    if (!policy.notes().empty()) admit["notes"] = audit::policyNotes(policy);  // sandbox-runtime keys, never silently
    s.writeAudit("admit", std::move(admit));
    return SandboxHandle(state_, epoch, /*adopted=*/false);
  }
  if (options.workspace && workspace != s.workspace)
    throw SandboxError(ErrorCode::kPolicyConflict,
                       "createSandbox(): workspace \"" + workspace + "\" is not the live sandbox's (" +
                           (s.workspace.empty() ? std::string("none") : "\"" + s.workspace + "\"") +
                           "); the workspace is fixed by the first createSandbox(): leave it unset, or use a separate "
                           "process");
  DerivedRules candidate = deriveOrThrow(policy, s.context, ErrorCode::kInvalidPolicy, "createSandbox()");
  const DerivedRules& live = s.baseline->rules();
  if (auto w = narrowing(live, candidate))
    throw SandboxError(ErrorCode::kPolicyConflict,
                       "createSandbox(): policy " + candidate.fingerprint() + " is not a narrowing of the live policy " +
                           live.fingerprint() + ": " + w->message +
                           "; one policy per process is the safe deployment, use a separate process for this one");
  detail::checkNarrowable(live, candidate);
  std::string fingerprint = candidate.fingerprint();
  detail::applyNarrowing(s, policy, std::move(candidate));
  Epoch epoch(s.generation, ++s.nextSerial);
  lock.unlock();
  s.writeAudit("narrow", {{"fingerprint", fingerprint}, {"via", "createSandbox"}, {"epoch", epoch.text()}});
  return SandboxHandle(state_, epoch, /*adopted=*/false);
}

SandboxHandle SandboxManager::adopt() {
  std::lock_guard lock(state_->mu);
  if (!state_->initialized)
    throw SandboxError(ErrorCode::kNotInitialized,
                       "adopt(): no sandbox has been created in this process; call createSandbox() first");
  return SandboxHandle(state_, Epoch(state_->generation, ++state_->nextSerial), /*adopted=*/true);
}

void SandboxManager::resetForTesting() { detail::disposeAll(state_, std::nullopt); }

bool SandboxHandle::isEpochLive(const Epoch& epoch) const noexcept {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return state_->initialized && epoch.generation_ == state_->generation && epoch.serial_ != 0;
}

void SandboxHandle::requireLive(std::string_view what) const {
  // Caller holds state_->mu.
  if (!state_->initialized || epoch_.generation_ != state_->generation)
    throw SandboxError(ErrorCode::kNotInitialized,
                       std::string(what) + ": the sandbox was disposed (epoch " + epoch_.text() +
                           " is no longer live); create a new one");
}

DerivedRules SandboxHandle::effectivePolicy() const {
  std::unique_lock lock(state_->mu);
  requireLive("effectivePolicy()");
  if (!adopted_) return state_->baseline->rules();
  // Adopted: re-derive from the live manager every time.
  SandboxPolicy live = *state_->livePolicy;
  DeriveContext ctx = state_->context;
  lock.unlock();
  return deriveOrThrow(live, ctx, ErrorCode::kPolicyDrift, "effectivePolicy()");
}

void SandboxHandle::narrow(const SandboxPolicy& policy) {
  detail::refuseFromAuditSink("narrow()");
  auto& s = *state_;
  std::unique_lock gate(s.gate);
  std::unique_lock lock(s.mu);
  requireLive("narrow()");
  DerivedRules candidate = deriveOrThrow(policy, s.context, ErrorCode::kInvalidPolicy, "narrow()");
  if (auto w = narrowing(s.baseline->rules(), candidate))
    throw SandboxError(ErrorCode::kPolicyConflict, "narrow(): " + w->message + " (axis " + w->axis + ")");
  detail::checkNarrowable(s.baseline->rules(), candidate);
  std::string fingerprint = candidate.fingerprint();
  detail::applyNarrowing(s, policy, std::move(candidate));
  lock.unlock();
  s.writeAudit("narrow", {{"fingerprint", fingerprint}, {"via", "narrow"}, {"epoch", epoch_.text()}});
}

ProcessService SandboxHandle::processes() const {
  std::shared_ptr<process::SandboxContext> sandbox;
  {
    std::lock_guard lock(state_->mu);
    if (state_->initialized && epoch_.generation_ == state_->generation) sandbox = state_->sandbox;
  }
  // A disposed sandbox's service answers stale_epoch to every call.
  return ProcessService(process::makeServiceCore(std::move(sandbox)));
}

bool SandboxHandle::dispose() {
  if (adopted_) {
    state_->writeAudit("dispose_ignored",
                       {{"epoch", epoch_.text()},
                        {"reason", "dispose() on an adopted handle is a no-op: the sandbox belongs to its creator"}});
    return false;
  }
  // Returns once everything is down, also when another dispose() started it.
  detail::disposeAll(state_, epoch_.generation_);
  return true;
}

}  // namespace stockade
