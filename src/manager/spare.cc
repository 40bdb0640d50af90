// The spare: a sandbox built ahead of the run() that will use it.
//
// Building a sandbox (namespaces, mounts, Landlock, seccomp) is most of a
// spawn's cost; the program itself only needs exec. When a child of run()
// under the session's rules has ended, the spawner thread builds the next
// sandbox under the same rules (not while the child runs: on few cores the
// build slowed the child), and the next run() or process start() sends it its program. A spare is used once,
// and only when it was built under rules with the fingerprint the drift check
// has just derived, in the same generation, and every path its mounts bind or
// cover still names the object that was bound or covered. Anything else
// (narrow(), per-call policies, a changed workspace) takes a fresh spawn.
#include "src/manager/manager_state.h"

namespace stockade::detail {

std::optional<platform::PreparedSandbox> takeSpare(ManagerState& s, std::uint64_t generation,
                                                   const std::string& fingerprint) {
  std::optional<platform::PreparedSandbox> taken;
  {
    std::unique_lock lock(s.mu);
    // A build in progress ends sooner than a fresh spawn, which would queue behind it.
    s.spareSettled.wait(lock, [&] { return !s.spare || s.spare->sandbox; });
    if (!s.spare) return std::nullopt;
    taken = std::move(s.spare->sandbox);
    bool matches = s.spare->generation == generation && s.spare->fingerprint == fingerprint;
    s.spare.reset();
    if (!matches) {
      lock.unlock();
      taken.reset();  // kills and reaps it, outside the lock
      return std::nullopt;
    }
  }
  if (!taken->matchesHost()) taken.reset();
  return taken;
}

void scheduleSpare(const std::shared_ptr<ManagerState>& state, std::uint64_t generation, const DerivedRules& rules,
                   const std::string& fingerprint, bool network) {
  ManagerState& s = *state;
  std::string workspace;
  {
    std::lock_guard lock(s.mu);
    if (s.spare || !s.initialized || s.generation != generation) return;
    s.spare = ManagerState::Spare{generation, fingerprint, std::nullopt};
    workspace = s.workspace;
  }
  std::weak_ptr<ManagerState> weak = state;
  s.runtime.spawner.post([weak, generation, rules, fingerprint, network, workspace] {
    auto st = weak.lock();
    if (!st) return;
    std::variant<platform::PreparedSandbox, platform::SpawnError> built = platform::SpawnError{};
    try {
      // The request of a library child (Output::kCaller and kSupervisor both have pipes).
      built = platform::prepare(process::Launcher::sandboxRequest(rules, process::Output::kSupervisor,
                                                                  platform::OnMissingLayer::kRefuse, network, {},
                                                                  workspace));
    } catch (...) {
      // (allocation failure) Handled as a failed build below: the slot is
      // released, so no run() waits for this spare forever.
    }
    std::optional<platform::PreparedSandbox> unused;  // killed and reaped at the end of the job, on this thread
    {
      std::lock_guard lock(st->mu);
      // The slot is still ours unless dispose() or narrow() gave it up meanwhile.
      bool ours = st->spare && !st->spare->sandbox && st->spare->generation == generation &&
                  st->spare->fingerprint == fingerprint && st->initialized && st->generation == generation;
      auto* sandbox = std::get_if<platform::PreparedSandbox>(&built);
      if (ours && sandbox) {
        st->spare->sandbox.emplace(std::move(*sandbox));
      } else {
        if (ours) st->spare.reset();  // the build failed: the next run() spawns afresh and reports why
        if (sandbox) unused.emplace(std::move(*sandbox));
      }
    }
    st->spareSettled.notify_all();
  });
}

void dropSpare(ManagerState& s) {
  if (!s.spare) return;
  if (s.spare->sandbox) {
    auto old = std::make_shared<platform::PreparedSandbox>(std::move(*s.spare->sandbox));
    s.runtime.spawner.post([old]() mutable { old.reset(); });
  }
  s.spare.reset();  // a build in progress finds its slot gone and discards its sandbox
  s.spareSettled.notify_all();
}

}  // namespace stockade::detail
