// SandboxHandle::run(): drift check, per-call policy, spawn, proxy wiring, and
// the waiter that settles `completed`.
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <thread>

#include "platform/linux/process.h"
#include "policy/domain.h"
#include "src/child_env.h"
#include "src/limits_audit.h"
#include "src/manager_internal.h"
#include "src/proxy_audit.h"

extern char** environ;

namespace stockade {

using detail::ManagerState;
using detail::RunShared;

struct Run::State {
  platform::UniqueFd out, err, in;
  std::string runId;
};

Run::Run(std::unique_ptr<State> state) : state_(std::move(state)) {}
Run::Run(Run&&) noexcept = default;
Run& Run::operator=(Run&&) noexcept = default;
Run::~Run() = default;

int Run::stdoutFd() const noexcept { return state_ ? state_->out.get() : -1; }
int Run::stderrFd() const noexcept { return state_ ? state_->err.get() : -1; }
int Run::stdinFd() const noexcept { return state_ ? state_->in.get() : -1; }
void Run::closeStdin() noexcept {
  if (state_) state_->in.reset();
}
const std::string& Run::runId() const noexcept {
  static const std::string kNone;
  return state_ ? state_->runId : kNone;
}

RunOutput Run::collect() {
  RunOutput result;
  closeStdin();
  pollfd fds[2] = {{stdoutFd(), POLLIN, 0}, {stderrFd(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open = (fds[0].fd >= 0) + (fds[1].fd >= 0);
  char buf[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll(stdout, stderr) failed: ") + ::strerror(errno));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  result.completion = completed.get();
  return result;
}

namespace {

// Denial events written per run; the exit event counts them all.
constexpr long kMaxDenialEvents = 100;

void validate(const RunOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("run(): argv is empty; pass at least the program");
  if (o.argv[0].empty()) throw std::invalid_argument("run(): argv[0] is empty; name the program");
  if (o.correlationId.empty()) throw std::invalid_argument("run(): correlationId is empty");
  if (o.cwd.empty() || o.cwd.front() != '/')
    throw std::invalid_argument("run(): cwd \"" + o.cwd + "\" is not an absolute path");
  for (const auto& [name, value] : o.env) {
    if (auto problem = overlayNameProblem(name); !problem.empty()) throw std::invalid_argument("run(): env " + problem);
    if (value.find('\0') != std::string::npos) throw std::invalid_argument("run(): env \"" + name + "\" contains NUL");
  }
  for (const auto& a : o.argv)
    if (a.find('\0') != std::string::npos) throw std::invalid_argument("run(): an argv entry contains NUL");
  for (const auto& [name, address] : o.resolve) {
    if (!policy::normaliseHostName(name) || policy::canonicalIp(name))
      throw std::invalid_argument("run(): resolve \"" + name + "\" is not a host name");
    if (!policy::canonicalIp(address))
      throw std::invalid_argument("run(): resolve \"" + name + "\" -> \"" + address + "\" is not an IP address");
  }
}

Completion completionOf(const platform::ExitStatus& st) {
  Completion c;
  c.exitCode = st.shellCode();
  c.failed = c.exitCode != 0;
  if (st.kind == platform::ExitStatus::Kind::kSignaled) {
    const char* abbrev = ::sigabbrev_np(st.value);
    c.signalCode = abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(st.value);
  }
  if (st.limit) c.limit = st.limit;
  return c;
}

// Waits for the child on a thread of its own, settles `completed`, then
// releases the run's proxy listeners and leaves the registry.
void startWaiter(std::shared_ptr<ManagerState> s, std::shared_ptr<RunShared> run) {
  std::thread([s = std::move(s), run = std::move(run)] {
    auto status = platform::waitExit(run->child);  // kills the sandbox if it goes over a limit
    Completion c;
    nlohmann::json usage = nlohmann::json::object();
    if (auto* st = std::get_if<platform::ExitStatus>(&status)) {
      c = completionOf(*st);
      addExitUsage(usage, *st);
    } else {
      // Never leave the sandbox running once nobody answers its listener.
      platform::signalChild(run->child.pidfd, SIGKILL);
      (void)platform::waitExit(run->child.pidfd);
      c = {125, true, std::nullopt};
      s->logError("run " + run->runId + ": " + std::get<std::string>(status));
    }
    if (run->afterExit) run->afterExit();
    run->onStop.reset();  // waits for a stop callback that is running right now
    run->listeners.clear();  // closes its listeners and tunnels (waits for the proxy's io thread)
    nlohmann::json exit = {{"runId", run->runId},
                           {"correlationId", run->correlationId},
                           {"exitCode", c.exitCode},
                           {"signal", c.signalCode.value_or("")},
                           {"denials", run->denials}};
    exit.update(usage);
    s->writeAudit("exit", std::move(exit));
    run->promise.set_value(c);
    {
      std::lock_guard lock(s->mu);
      s->runs.erase(run->runId);
    }
    s->settled.notify_all();
  }).detach();
}

}  // namespace

Run SandboxHandle::run(RunOptions o) {
  validate(o);
  detail::refuseFromAuditSink("run()");
  auto& s = *state_;

  // Shared until the child is registered: narrow() and dispose() wait for it.
  std::shared_lock gate(s.gate);
  std::unique_lock lock(s.mu);
  requireLive("run()");
  const SandboxPolicy livePolicy = *s.livePolicy;
  const policy::DriftBaseline baseline = *s.baseline;
  const DeriveContext ctx = s.context;
  const std::string sandboxId = s.sandboxId;
  const std::uint64_t generation = s.generation;
  lock.unlock();

  // Drift: re-derive from the live sources and compare with what was admitted.
  auto rederived = derive(livePolicy, ctx);
  if (auto* err = std::get_if<PolicyError>(&rederived)) {
    s.writeAudit("drift", {{"correlationId", o.correlationId}, {"message", err->text()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "run(): the live policy no longer derives: " + err->text());
  }
  DerivedRules rules = std::get<DerivedRules>(std::move(rederived));
  if (auto w = baseline.check(rules)) {
    s.writeAudit("drift", {{"correlationId", o.correlationId}, {"axis", w->axis}, {"entry", w->entry},
                           {"message", w->message}, {"admitted", baseline.rules().fingerprint()},
                           {"now", rules.fingerprint()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "run(): refused, the rules widened since admission: " + w->message);
  }

  // Per-call policy: filesystem replaces the session's; network equal or strictly narrower.
  std::shared_ptr<const DerivedRules::Network> ownNetwork;
  if (o.policy) {
    DerivedRules call = detail::deriveOrThrow(*o.policy, ctx, ErrorCode::kInvalidPolicy, "run(): per-call policy");
    if (auto w = narrowing(rules, call, RuleAxis::kNetwork))
      throw SandboxError(ErrorCode::kNetworkGrantUnsupported,
                         "run(): the per-call network section grants what the session's does not: " + w->message +
                             "; repeat the session's network section or narrow it");
    if (narrowing(call, rules, RuleAxis::kNetwork))  // strictly narrower: honoured for this child alone
      ownNetwork = std::make_shared<const DerivedRules::Network>(call.network());
    if (auto w = narrowing(rules, call, RuleAxis::kRead | RuleAxis::kWrite | RuleAxis::kEnv | RuleAxis::kLimits))
      throw SandboxError(ErrorCode::kPolicyConflict, "run(): per-call policy " + call.fingerprint() +
                                                         " widens the session's " + rules.fingerprint() + ": " +
                                                         w->message);
    detail::checkNarrowable(rules, call);
    rules = std::move(call);
  }

  const bool network = !rules.network().allowedDomains.empty();
  std::optional<std::uint16_t> proxyPort;
  if (network) proxyPort = kSandboxProxyPort;
  const std::string fingerprint = rules.fingerprint();
  platform::ProgramRequest program{o.argv, o.cwd, childEnvironment(rules, environ, o.env, proxyPort)};
  // Under the session's rules, the spare built after the last run() has
  // everything but the program; the next one is built when this child has
  // ended, so that building it does not compete with the program for the CPUs.
  std::optional<platform::PreparedSandbox> spare;
  if (!o.policy) spare = detail::takeSpare(s, generation, fingerprint);
  auto spawned = spare ? platform::launch(std::move(*spare), program) : s.spawner.call([&] {
    return platform::spawn(platform::SandboxRequest{.rules = rules,
                                                    .proxyPort = proxyPort,
                                                    .newSession = true,
                                                    .stdio = platform::Stdio::kPipe,
                                                    .onMissingLayer = platform::OnMissingLayer::kRefuse},
                           program);
  });
  if (auto* err = std::get_if<platform::SpawnError>(&spawned)) {
    s.writeAudit("spawn-failed", {{"correlationId", o.correlationId}, {"message", err->message()}});
    throw SandboxError(ErrorCode::kSpawnFailed, "run(): " + err->message());
  }
  auto shared = std::make_shared<RunShared>();
  shared->child = std::get<platform::Child>(std::move(spawned));
  shared->correlationId = o.correlationId;
  if (!o.policy) {
    std::weak_ptr<ManagerState> weak = state_;
    shared->afterExit = [weak, generation, rules, fingerprint, proxyPort] {
      if (auto st = weak.lock()) detail::scheduleSpare(st, generation, rules, fingerprint, proxyPort);
    };
  }

  // From here until the waiter owns the child, any failure kills and reaps
  // it: a child is never left running without someone to settle `completed`.
  bool registered = false;
  try {
    shared->runId = detail::randomId("run");
    auto state = std::make_unique<Run::State>();
    state->out = std::move(shared->child.stdoutPipe);
    state->err = std::move(shared->child.stderrPipe);
    state->in = std::move(shared->child.stdinPipe);
    state->runId = shared->runId;
    Run result(std::move(state));
    result.completed = shared->promise.get_future().share();

    if (network) {
      std::shared_ptr<proxy::Proxy> egress;
      lock.lock();
      if (!s.proxy) {
        s.proxy = std::make_shared<proxy::Proxy>();
        std::weak_ptr<ManagerState> weakState = state_;
        s.proxy->setAuditSink([weakState](const proxy::ProxyEvent& e) {
          if (auto st = weakState.lock()) st->writeAudit("proxy", proxyEventJson(e));
        });
      }
      egress = s.proxy;
      lock.unlock();
      // Every request reads the session's live rules; a child with its own
      // (per-call) rules gets what both allow, so later narrowing reaches it too.
      std::weak_ptr<ManagerState> weak = state_;
      proxy::RulesProvider provider = [weak, ownNetwork]() -> std::shared_ptr<const DerivedRules::Network> {
        auto st = weak.lock();
        auto live = st ? st->liveNetwork.load() : nullptr;  // null after dispose: everything denied
        if (!live || !ownNetwork) return live;
        return std::make_shared<const DerivedRules::Network>(intersectNetworks(*live, *ownNetwork));
      };
      // addListener() waits for the proxy's io thread, so `mu` is not held.
      for (auto& fd : shared->child.proxyListeners)
        shared->listeners.push_back(
            egress->addListener(std::move(fd), proxy::ListenerContext{sandboxId, shared->runId, provider, o.resolve}));
    }
    // Calls the seccomp table denies are answered EPERM by the waiter and
    // audited: the first kMaxDenialEvents each, and their count at exit.
    {
      RunShared* raw = shared.get();  // the waiter, which alone calls this, owns `shared`
      std::weak_ptr<ManagerState> weak = state_;
      shared->child.onDenial = [raw, weak](const platform::SeccompDenial& d) {
        auto st = weak.lock();
        if (!st || ++raw->denials > kMaxDenialEvents) return;
        st->writeAudit("denial", {{"runId", raw->runId},
                                  {"correlationId", raw->correlationId},
                                  {"layer", "seccomp"},
                                  {"pid", d.pid},
                                  {"syscall", d.syscall},
                                  {"args", d.args},
                                  {"error", strerrorname_np(d.error)}});
      };
    }
    if (o.stop.stop_possible()) {
      RunShared* raw = shared.get();  // the callback is destroyed (by the waiter) before `shared`
      shared->onStop = std::make_unique<std::stop_callback<std::function<void()>>>(
          o.stop, std::function<void()>([raw] { platform::signalChild(raw->child.pidfd, SIGKILL); }));
    }

    lock.lock();
    if (!s.initialized) {  // cannot happen while `gate` is held; kept as the invariant's check
      lock.unlock();
      throw SandboxError(ErrorCode::kNotInitialized, "run(): the sandbox was disposed while the child was starting");
    }
    s.runs.emplace(shared->runId, shared);
    registered = true;
    lock.unlock();
    startWaiter(state_, shared);  // from here the waiter settles `completed` and leaves `runs`
    registered = false;
    nlohmann::json event = {{"runId", shared->runId}, {"correlationId", o.correlationId},
                            {"fingerprint", fingerprint}, {"pid", shared->child.pid}};
    const nlohmann::json limits = limitEnforcementJson(shared->child.enforcement);
    for (const auto& [limit, enforced] : limits.items())
      if (!enforced.is_null()) event[limit] = enforced;
    s.writeAudit("spawn", std::move(event));
    return result;
  } catch (...) {
    if (lock.owns_lock()) lock.unlock();
    shared->onStop.reset();
    shared->listeners.clear();
    platform::signalChild(shared->child.pidfd, SIGKILL);
    (void)platform::waitExit(shared->child);
    if (registered) {
      lock.lock();
      s.runs.erase(shared->runId);
      lock.unlock();
      s.settled.notify_all();
    }
    throw;
  }
}

}  // namespace stockade
