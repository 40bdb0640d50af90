// SandboxHandle::run() and a child's admission (ManagedSandbox::admit()): the
// drift check, the per-call policy and the spare; the launcher (src/process)
// spawns, wires the proxy and audits, and the supervisor settles `completed`.
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <mutex>

#include "platform/linux/process.h"
#include "src/child_env.h"
#include "src/manager/manager_state.h"
#include "src/process/foreground.h"
#include "src/process/service.h"

extern char** environ;

namespace stockade {

using detail::ManagerState;

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

void validate(const RunOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("run(): argv is empty; pass at least the program");
  if (o.argv[0].empty()) throw std::invalid_argument("run(): argv[0] is empty; name the program");
  if (o.correlationId.empty()) throw std::invalid_argument("run(): correlationId is empty");
  if (o.cwd.empty() || o.cwd.front() != '/')
    throw std::invalid_argument("run(): cwd \"" + o.cwd + "\" is not an absolute path");
  for (const auto& [name, value] : o.env) {
    if (auto problem = overlayNameProblem(name, ProxyVariables::kNotSet); !problem.empty())
      throw std::invalid_argument("run(): env " + problem);
    if (value.find('\0') != std::string::npos) throw std::invalid_argument("run(): env \"" + name + "\" contains NUL");
  }
  for (const auto& a : o.argv)
    if (a.find('\0') != std::string::npos) throw std::invalid_argument("run(): an argv entry contains NUL");
  for (const auto& [name, address] : o.resolve)
    if (auto problem = process::resolveProblem(name, address)) throw std::invalid_argument("run(): resolve " + *problem);
}

Completion completionOf(const process::Ending& e) {
  Completion c;
  if (e.cause == process::Ending::Cause::kFailed) return {125, true, std::nullopt};  // nobody could answer its listener
  c.exitCode = e.status.shellCode();
  c.failed = c.exitCode != 0;
  if (e.status.kind == platform::ExitStatus::Kind::kSignaled) c.signalCode = process::signalName(e.status.value);
  if (e.status.limit) c.limit = e.status.limit;
  return c;
}

// The stop token's callback, alive until the child has ended.
struct StopHook {
  std::mutex mu;
  bool ended = false;
  std::optional<std::stop_callback<std::function<void()>>> callback;
};

}  // namespace

namespace detail {

ManagedSandbox::ManagedSandbox(std::weak_ptr<ManagerState> state, process::Runtime& runtime, std::uint64_t generation,
                               std::string sandboxId, std::string workspace, std::string defaultCwd)
    : state_(std::move(state)),
      runtime_(runtime),
      generation_(generation),
      sandboxId_(std::move(sandboxId)),
      workspace_(std::move(workspace)),
      defaultCwd_(std::move(defaultCwd)) {
  auto s = state_.lock();
  logBytesPerProcess_ = s ? s->logBytesPerProcess : 1 << 20;
  budget_ = std::make_shared<process::LogRing::Budget>(s ? s->logBytesTotal : 256u << 20);
}

bool ManagedSandbox::live() const {
  auto s = state_.lock();
  if (!s) return false;
  std::lock_guard lock(s->mu);
  return s->initialized && s->generation == generation_;
}

process::Admission ManagedSandbox::admit(const AdmitRequest& request) {
  auto st = state_.lock();
  if (!st) throw SandboxError(ErrorCode::kNotInitialized, "the sandbox manager is gone");
  ManagerState& s = *st;
  // Shared until the child is registered: narrow() and dispose() wait for it.
  std::shared_lock lease(s.gate);
  std::unique_lock lock(s.mu);
  if (!s.initialized || s.generation != generation_)
    throw SandboxError(ErrorCode::kNotInitialized,
                       "the sandbox " + sandboxId_ + " was disposed; create a new one");
  const SandboxPolicy livePolicy = *s.livePolicy;
  const policy::DriftBaseline baseline = *s.baseline;
  const DeriveContext ctx = s.context;
  lock.unlock();

  // Drift: re-derive from the live sources and compare with what was admitted.
  auto rederived = derive(livePolicy, ctx);
  if (auto* err = std::get_if<PolicyError>(&rederived)) {
    s.writeAudit("drift", {{"correlationId", request.correlationId}, {"message", err->text()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "the live policy no longer derives: " + err->text());
  }
  DerivedRules rules = std::get<DerivedRules>(std::move(rederived));
  if (auto w = baseline.check(rules)) {
    s.writeAudit("drift", {{"correlationId", request.correlationId}, {"axis", w->axis}, {"entry", w->entry},
                           {"message", w->message}, {"admitted", baseline.rules().fingerprint()},
                           {"now", rules.fingerprint()}});
    throw SandboxError(ErrorCode::kPolicyDrift, "refused, the rules widened since admission: " + w->message);
  }

  // Per-call policy: filesystem replaces the session's; network equal or strictly narrower.
  std::shared_ptr<const DerivedRules::Network> ownNetwork;
  if (request.perCall) {
    DerivedRules call = deriveOrThrow(*request.perCall, ctx, ErrorCode::kInvalidPolicy, "per-call policy");
    if (auto w = narrowing(rules, call, RuleAxis::kNetwork))
      throw SandboxError(ErrorCode::kNetworkGrantUnsupported,
                         "the per-call network section grants what the session's does not: " + w->message +
                             "; repeat the session's network section or narrow it");
    if (narrowing(call, rules, RuleAxis::kNetwork))  // strictly narrower: honoured for this child alone
      ownNetwork = std::make_shared<const DerivedRules::Network>(call.network());
    if (auto w = narrowing(rules, call, RuleAxis::kRead | RuleAxis::kWrite | RuleAxis::kEnv | RuleAxis::kLimits))
      throw SandboxError(ErrorCode::kPolicyConflict, "per-call policy " + call.fingerprint() + " widens the session's " +
                                                         rules.fingerprint() + ": " + w->message);
    checkNarrowable(rules, call);
    rules = std::move(call);
  }
  std::string fingerprint = rules.fingerprint();
  proxy::RulesProvider networkRules;
  const bool network = !rules.network().allowedDomains.empty();
  if (network) {
    // Every request reads the session's live rules; a child with its own
    // (per-call) rules gets what both allow, so later narrowing reaches it too.
    std::weak_ptr<ManagerState> weak = st;
    networkRules = [weak, ownNetwork]() -> std::shared_ptr<const DerivedRules::Network> {
      auto live = weak.lock();
      auto current = live ? live->liveNetwork.load() : nullptr;  // null after dispose: everything denied
      if (!current || !ownNetwork) return current;
      return std::make_shared<const DerivedRules::Network>(intersectNetworks(*current, *ownNetwork));
    };
  }
  // Under the session's rules, the spare built after the last child has
  // everything but the program; the next one is built when this child has
  // ended, so that building it does not compete with the program for the CPUs.
  std::optional<platform::PreparedSandbox> spare;
  std::function<void()> afterExit;
  if (!request.perCall) {
    if (request.spare) spare = takeSpare(s, generation_, fingerprint);
    std::weak_ptr<ManagerState> weak = st;
    afterExit = [weak, generation = generation_, rules, fingerprint, network] {
      if (auto live = weak.lock()) scheduleSpare(live, generation, rules, fingerprint, network);
    };
  }
  return process::Admission{std::move(rules), std::move(fingerprint), std::move(spare), std::move(networkRules),
                            std::move(afterExit), std::move(lease)};
}

}  // namespace detail

Run SandboxHandle::run(RunOptions o) {
  validate(o);
  detail::refuseFromAuditSink("run()");
  std::shared_ptr<detail::ManagedSandbox> sandbox;
  {
    std::lock_guard lock(state_->mu);
    requireLive("run()");
    sandbox = state_->sandbox;
  }
  const std::string runId = process::newId("run");
  process::Admission admitted = sandbox->admit(
      {.id = runId, .correlationId = o.correlationId, .perCall = o.policy ? &*o.policy : nullptr, .spare = true});
  const std::optional<std::uint16_t> proxyPort =
      admitted.network ? std::optional<std::uint16_t>(kSandboxProxyPort) : std::nullopt;
  if (auto problem = overlayProxyProblem(o.env, proxyPort); !problem.empty())
    throw std::invalid_argument("run(): env " + problem);  // the admission's lease and spare are released
  platform::ProgramRequest program{o.argv, o.cwd, childEnvironment(admitted.rules, environ, o.env, proxyPort)};

  ProcessDto dto;
  dto.id = runId;
  dto.sandboxId = sandbox->sandboxId();
  dto.argv = o.argv;
  dto.cwd = o.cwd;
  dto.createdAt = std::chrono::system_clock::now();
  auto record = std::make_shared<process::Record>(std::move(dto), 0, nullptr, /*listed=*/false);
  if (!sandbox->registry().add(record, runId))  // cannot happen while the lease is held; kept as the invariant's check
    throw SandboxError(ErrorCode::kNotInitialized, "run(): the sandbox was disposed while the child was starting");

  auto promise = std::make_shared<std::promise<Completion>>();
  auto stop = std::make_shared<StopHook>();
  process::Watch watch;
  std::weak_ptr<detail::ManagedSandbox> weakSandbox = sandbox;
  watch.onEnd = [record, promise, stop, weakSandbox, runId, afterExit = admitted.afterExit](const process::Ending& e) {
    if (afterExit) afterExit();
    {
      std::lock_guard lock(stop->mu);
      stop->ended = true;
      stop->callback.reset();  // waits for a stop callback that is running right now (it only posts)
    }
    // `completed` settles before the record: dispose() waits for the record.
    promise->set_value(completionOf(e));
    record->ended(e);
    if (auto sb = weakSandbox.lock()) sb->registry().remove(runId);
  };
  auto launched = sandbox->launcher().launch(
      process::LaunchRequest{.rules = admitted.rules,
                             .fingerprint = admitted.fingerprint,
                             .program = std::move(program),
                             .output = process::Output::kCaller,
                             .spare = std::move(admitted.spare),
                             .sandboxId = sandbox->sandboxId(),
                             .id = runId,
                             .idField = "runId",
                             .auditFields = {{"correlationId", o.correlationId}},
                             .network = admitted.network,
                             .resolve = o.resolve,
                             .workspace = sandbox->workspace()},
      std::move(watch));
  if (auto* err = std::get_if<platform::SpawnError>(&launched)) {
    sandbox->registry().remove(runId);
    throw SandboxError(ErrorCode::kSpawnFailed, "run(): " + err->message());
  }
  auto& child = std::get<process::Launched>(launched);
  record->running(child.pid, child.supervised);
  admitted.lease.unlock();  // registered: narrow() and dispose() may go ahead

  if (o.stop.stop_possible()) {
    std::lock_guard lock(stop->mu);
    if (!stop->ended) {
      std::weak_ptr<process::Supervised> weak = child.supervised;
      stop->callback.emplace(o.stop, std::function<void()>([weak] {
        if (auto s = weak.lock()) s->kill(SIGKILL);
      }));
    }
  }
  auto state = std::make_unique<Run::State>();
  state->out = std::move(child.stdoutPipe);
  state->err = std::move(child.stderrPipe);
  state->in = std::move(child.stdinPipe);
  state->runId = runId;
  Run result(std::move(state));
  result.completed = promise->get_future().share();
  return result;
}

}  // namespace stockade
