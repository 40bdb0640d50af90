#include "src/daemon/sandboxes.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "platform/linux/process_identity.h"
#include "platform/unique_fd.h"
#include "src/daemon/ids.h"
#include "src/process/registry.h"

#include <csignal>

namespace stockade::daemon {

namespace {

DerivedRules deriveBaseline(const SandboxPolicy& baseline, const std::string& root) {
  // 0300: the daemon creates and enters workspaces by name; nobody lists them
  // (a sandbox runs as the daemon's uid, without the capability to read anyway).
  if (::mkdir(root.c_str(), 0300) != 0 && errno != EEXIST)
    throw std::runtime_error("mkdir(\"" + root + "\", 0300) failed: " + std::strerror(errno));
  if (::chmod(root.c_str(), 0300) != 0)
    throw std::runtime_error("chmod(\"" + root + "\", 0300) failed: " + std::strerror(errno));
  DeriveContext ctx = currentContext();
  ctx.cwd = root;
  ctx.cwdName = "--state-dir's workspaces directory, " + root;
  ctx.tmpdir = std::nullopt;
  auto derived = derive(baseline, ctx);
  if (auto* e = std::get_if<PolicyError>(&derived)) throw std::runtime_error("--policy: " + e->text());
  return std::get<DerivedRules>(std::move(derived));
}

// A sandbox holds about 12 of the daemon's descriptors while idle (its spare's
// pidfd, seccomp listener, command socket, root, pipes and workspace; the host
// objects every sandbox pins are shared: host_pins.h), and more while a
// program runs (its output pipes, a request's socket). A create is refused
// while fewer than this many are left under RLIMIT_NOFILE, so that the limit
// is met here, with a reason, rather than half-way into a spawn.
constexpr std::size_t kDescriptorsPerSandbox = 32;

// Refused (503) when fewer than kDescriptorsPerSandbox more descriptors can
// be opened now: that many are opened and closed again (some 30 us; counting
// /proc/self/fd would take ms with thousands open).
std::optional<ApiError> descriptorShortage(std::size_t sandboxes) {
  std::vector<platform::UniqueFd> probes;
  probes.reserve(kDescriptorsPerSandbox);
  int err = 0;
  while (probes.size() < kDescriptorsPerSandbox) {
    int fd = probes.empty() ? ::open("/", O_PATH | O_CLOEXEC) : ::fcntl(probes.front().get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      break;
    }
    probes.emplace_back(fd);
  }
  if (err != EMFILE) return std::nullopt;  // room, or not this limit (ENFILE: the system's; the spawn will say)
  probes.clear();
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  std::size_t open = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++open;
  return ApiError{ApiCode::kUnavailable,
                  "the daemon's descriptor limit is reached: " + std::to_string(open) + " of RLIMIT_NOFILE " +
                      std::to_string(files.rlim_cur) + " open with " + std::to_string(sandboxes) +
                      " sandboxes, and a sandbox needs up to " + std::to_string(kDescriptorsPerSandbox) +
                      "; close a sandbox, or raise the limit (LimitNOFILE= in stockaded.service, ulimit -n)"};
}

ApiError closedError(const ledger::SandboxRecord& r) {
  return {ApiCode::kStaleEpoch, "sandbox " + r.id + " was closed (" + std::string(ledger::sandboxStateName(r.state)) +
                                    " since " + r.updatedAt + "); its epoch " + r.epoch + " is stale"};
}

}  // namespace

Sandboxes::Sandboxes(ledger::Ledger& ledger, process::Runtime& runtime, const SandboxPolicy& baseline,
                     std::string workspacesRoot, SandboxLimits limits, DaemonFiles files)
    : ledger_(ledger),
      runtime_(runtime),
      workspacesRoot_(std::move(workspacesRoot)),
      limits_(limits),
      files_(std::move(files)),
      baseline_(deriveBaseline(baseline, workspacesRoot_)) {}

Sandboxes::~Sandboxes() {
  // Every process of every sandbox is killed (their records say lost); the
  // sandboxes themselves stay active in the ledger for the next start.
  std::lock_guard lock(mu_);
  for (auto& [id, e] : entries_)
    if (e.live) e.live->dispose();
}

namespace {

// A path as a policy entry that names it exactly (no glob characters).
std::string literal(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

SandboxPolicy Sandboxes::confined(const SandboxPolicy& policy, const std::string&) const {
  FilesystemPolicy fs = policy.filesystem();
  for (const char* name : {"/ledger.db", "/ledger.db-wal", "/ledger.db-shm", "/lock", "/checkpoints", "/snapshots"})
    fs.denyRead.push_back(literal(files_.stateDir + name));
  if (files_.tokenFile) fs.denyRead.push_back(literal(*files_.tokenFile));
  if (files_.socket) fs.denyRead.push_back(literal(*files_.socket));
  return SandboxPolicy::make(std::move(fs), policy.network(), policy.env(), policy.limits());
}

void Sandboxes::startLive(Entry& e, const SandboxPolicy& policy) {
  e.live = LiveSandbox::make(runtime_, e.record.id, e.record.workspace, confined(policy, e.record.workspace),
                             contextFor(e.record.workspace), *e.rules, limits_.processes);
  e.core = process::makeServiceCore(e.live);
  // The kernel is a process of the sandbox like any other: its start is
  // written to the ledger before it is dispatched, then its identity.
  process::KernelRecorder recorder;
  recorder.beforeStart = [this, id = e.record.id](const std::string& key) -> std::optional<ProcessError> {
    if (ledger_.beginStart(key, id, "")) return std::nullopt;
    return ProcessError{ProcessErrorCode::kUnavailable, "processKey " + key + " of a new kernel was used before"};
  };
  recorder.afterStart = [this](const std::string& key, const ProcessDto& dto) {
    std::optional<platform::ProcessIdentity> identity;
    if (dto.pid && dto.state != ProcessState::kTerminal) identity = platform::identifyProcess(*dto.pid);
    if (identity) ledger_.markStarted(key, dto.id, *identity, "");
    else ledger_.markEnded(key, ledger::ProcessState::kFailed, std::nullopt, std::nullopt, "the kernel did not start");
  };
  e.code = std::make_shared<process::CodeKernel>(e.core, std::move(recorder));
  // The workspace holds the sandbox (its rules, whether it is live), never
  // the other way round: a request still holding it after the close gets
  // stale_epoch.
  WorkspaceOptions o;
  o.hostPath = e.record.workspace;
  o.rules = [sandbox = e.live] { return sandbox->rules(); };
  o.live = [sandbox = e.live] { return sandbox->live(); };
  o.maxFileBytes = limits_.maxFileBytes;
  auto opened = Workspace::open(std::move(o));
  if (auto* err = std::get_if<WorkspaceError>(&opened))
    e.workspaceProblem = "its workspace " + e.record.workspace + " could not be opened: " + err->message;
  else
    e.workspace = std::get<Workspace>(std::move(opened));
}

DeriveContext Sandboxes::contextFor(const std::string& workspace) const {
  DeriveContext ctx = currentContext();
  ctx.cwd = workspace;
  ctx.cwdName = "the sandbox's \"workspace\"";
  ctx.tmpdir = std::nullopt;
  return ctx;
}

void Sandboxes::load() {
  std::lock_guard lock(mu_);
  for (ledger::SandboxRecord& r : ledger_.liveSandboxes()) {
    Entry e{std::move(r), std::nullopt, "", nullptr, nullptr, nextOrder_++};
    if (e.record.state == ledger::SandboxState::kActive) {
      auto policy = SandboxPolicy::parse(e.record.policyJson);
      if (auto* pe = std::get_if<PolicyError>(&policy)) {
        e.problem = "its recorded policy no longer parses: " + pe->text();
      } else {
        auto derived = derive(confined(std::get<SandboxPolicy>(policy), e.record.workspace),
                              contextFor(e.record.workspace));
        if (auto* de = std::get_if<PolicyError>(&derived)) {
          e.problem = "its policy no longer derives: " + de->text();
        } else {
          e.rules = std::get<DerivedRules>(std::move(derived));
          startLive(e, std::get<SandboxPolicy>(policy));
        }
      }
    }
    std::string id = e.record.id;
    entries_.emplace(std::move(id), std::move(e));
  }
}

std::variant<SandboxView, ApiError> Sandboxes::create(const CreateSandboxRequest& request) {
  std::lock_guard lock(mu_);
  if (entries_.size() >= limits_.maxSandboxes)
    return ApiError{ApiCode::kUnavailable, "the daemon holds " + std::to_string(limits_.maxSandboxes) +
                                               " sandboxes (stockaded --max-sandboxes); close one first"};
  if (auto shortage = descriptorShortage(entries_.size())) return *std::move(shortage);
  ledger::SandboxRecord r;
  r.id = newId("sb_");
  r.epoch = newId("ep_");
  if (request.workspace) {
    std::error_code ec;
    auto real = std::filesystem::canonical(*request.workspace, ec);
    if (ec || !std::filesystem::is_directory(real, ec))
      return ApiError{ApiCode::kInvalidPath, "workspace: " + quoteValue(*request.workspace) +
                                                 " is not an existing directory; create it, or omit workspace and the "
                                                 "daemon creates one"};
    r.workspace = real.string();
  } else {
    r.workspace = workspacesRoot_ + "/" + r.id;
    r.workspaceOwned = true;
  }
  if (r.workspaceOwned && ::mkdir(r.workspace.c_str(), 0700) != 0)
    return ApiError{ApiCode::kInternal, "mkdir(\"" + r.workspace + "\", 0700) failed: " + std::strerror(errno)};
  // Removes the workspace the daemon just created, unless admission succeeds.
  struct Undo {
    const ledger::SandboxRecord& r;
    bool keep = false;
    ~Undo() {
      if (!keep && r.workspaceOwned) ::rmdir(r.workspace.c_str());
    }
  } undo{r};
  // Admission: derived against its workspace, inside the baseline.
  auto derived = derive(confined(*request.policy, r.workspace), contextFor(r.workspace));
  if (auto* e = std::get_if<PolicyError>(&derived)) return invalidPolicy(*e);
  DerivedRules rules = std::get<DerivedRules>(std::move(derived));
  if (auto w = narrowing(baseline_, rules))
    return ApiError{ApiCode::kPolicyConflict,
                    "policy is wider than the daemon's baseline (stockaded --policy, fingerprint " +
                        baseline_.fingerprint().substr(0, 12) + "): " + w->message};
  r.policyJson = request.policy->toJson();
  r.fingerprint = rules.fingerprint();
  r.createdAt = ledger::utcTimestamp();
  r.updatedAt = r.createdAt;
  ledger_.insertSandbox(r);
  undo.keep = true;
  std::string id = r.id;
  auto [it, inserted] = entries_.emplace(id, Entry{r, std::move(rules), "", nullptr, nullptr, nextOrder_++});
  startLive(it->second, *request.policy);
  return SandboxView{it->second.record, it->second.rules, ""};
}

std::vector<ledger::SandboxRecord> Sandboxes::list() {
  std::lock_guard lock(mu_);
  std::vector<const Entry*> sorted;
  for (const auto& [id, e] : entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) { return a->order < b->order; });
  std::vector<ledger::SandboxRecord> out;
  for (const Entry* e : sorted) out.push_back(e->record);
  return out;
}

std::variant<Sandboxes::Entry*, ApiError> Sandboxes::liveEntry(std::string_view id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) {
    if (it->second.record.state != ledger::SandboxState::kActive) return closedError(it->second.record);
    return &it->second;
  }
  if (auto r = ledger_.sandbox(id)) return closedError(*r);
  return ApiError{ApiCode::kNotFound, "no sandbox " + quoteValue(id)};
}

std::variant<SandboxView, ApiError> Sandboxes::get(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) return SandboxView{it->second.record, it->second.rules, it->second.problem};
  if (auto r = ledger_.sandbox(id)) return closedError(*r);
  return ApiError{ApiCode::kNotFound, "no sandbox " + quoteValue(id)};
}

std::variant<SandboxView, ApiError> Sandboxes::narrow(std::string_view id, const SandboxPolicy& policy) {
  std::lock_guard lock(mu_);
  auto found = liveEntry(id);
  if (auto* e = std::get_if<ApiError>(&found)) return *e;
  Entry& entry = *std::get<Entry*>(found);
  if (!entry.rules) return ApiError{ApiCode::kNotInitialized, "sandbox " + entry.record.id + ": " + entry.problem};
  auto derived = derive(confined(policy, entry.record.workspace), contextFor(entry.record.workspace));
  if (auto* e = std::get_if<PolicyError>(&derived)) return invalidPolicy(*e);
  DerivedRules rules = std::get<DerivedRules>(std::move(derived));
  if (auto w = narrowing(*entry.rules, rules))
    return ApiError{ApiCode::kPolicyConflict,
                    "narrow may only shrink sandbox " + entry.record.id + "'s live policy: " + w->message};
  std::string json = policy.toJson(), fingerprint = rules.fingerprint();
  ledger_.updatePolicy(entry.record.id, json, fingerprint);
  if (entry.live) entry.live->narrow(confined(policy, entry.record.workspace), rules);
  entry.record.policyJson = std::move(json);
  entry.record.fingerprint = std::move(fingerprint);
  entry.record.updatedAt = ledger::utcTimestamp();
  entry.rules = std::move(rules);
  return SandboxView{entry.record, entry.rules, ""};
}

std::optional<std::string> Sandboxes::release(const ledger::SandboxRecord& record) {
  std::string errors;
  // Its processes: the live ones are killed by their supervisor and waited
  // for; then the ledger's rows are brought up to date.
  if (auto it = entries_.find(record.id); it != entries_.end() && it->second.live) {
    it->second.live->dispose();  // every process of this run is dead now
    for (const ledger::ProcessRecord& p : ledger_.unfinished(record.id))
      ledger_.markEnded(p.processKey, ledger::ProcessState::kKilled, std::nullopt, SIGKILL, "its sandbox was closed");
  }
  // Any group still recorded as running is killed through its identity.
  for (const ledger::ProcessRecord& p : ledger_.unfinished(record.id)) {
    if (ledger::terminateRecorded(ledger_, record.id, p.processKey) == ledger::TerminateAnswer::kUnknown &&
        p.identity)
      errors += (errors.empty() ? "" : "; ") + std::string("process ") + p.processKey + " could not be killed";
    else if (!p.identity)
      ledger_.markLost(p.processKey, ledger::Termination::kUnconfirmed, "closed before its spawn was recorded");
  }
  if (record.workspaceOwned) {
    std::error_code ec;
    std::filesystem::remove_all(record.workspace, ec);
    if (ec)
      errors += (errors.empty() ? "" : "; ") + std::string("removing the workspace ") + record.workspace +
                " failed: " + ec.message();
  }
  if (!errors.empty()) return errors;
  return std::nullopt;
}

std::optional<ApiError> Sandboxes::close(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    if (ledger_.sandbox(id)) return std::nullopt;  // released already
    return ApiError{ApiCode::kNotFound, "no sandbox " + quoteValue(id)};
  }
  Entry& entry = it->second;
  auto error = ledger::releaseSandbox(ledger_, entry.record,
                                      [this](const ledger::SandboxRecord& r) { return release(r); });
  if (error) {
    entry.record = *ledger_.sandbox(id);
    entry.rules.reset();
    return ApiError{ApiCode::kReleaseFailed, "sandbox " + entry.record.id + " is closed but not released: " + *error +
                                                 "; the daemon retries it (state release_failed)"};
  }
  entries_.erase(it);
  return std::nullopt;
}

std::variant<Sandboxes::LiveHandle, ApiError> Sandboxes::live(std::string_view id) {
  std::lock_guard lock(mu_);
  auto found = liveEntry(id);
  if (auto* e = std::get_if<ApiError>(&found)) return *e;
  Entry& entry = *std::get<Entry*>(found);
  if (!entry.live) return ApiError{ApiCode::kNotInitialized, "sandbox " + entry.record.id + ": " + entry.problem};
  return LiveHandle{entry.record.id, entry.live, entry.core, entry.code};
}

std::variant<Sandboxes::WorkspaceHandle, ApiError> Sandboxes::workspace(std::string_view id) {
  std::lock_guard lock(mu_);
  auto found = liveEntry(id);
  if (auto* e = std::get_if<ApiError>(&found)) return *e;
  Entry& entry = *std::get<Entry*>(found);
  if (!entry.live) return ApiError{ApiCode::kNotInitialized, "sandbox " + entry.record.id + ": " + entry.problem};
  if (!entry.workspace) return ApiError{ApiCode::kUnavailable, "sandbox " + entry.record.id + ": " + entry.workspaceProblem};
  return WorkspaceHandle{LiveHandle{entry.record.id, entry.live, entry.core, entry.code}, *entry.workspace};
}

void Sandboxes::syncEnded() {
  std::vector<std::pair<std::shared_ptr<process::ServiceCore>, ledger::ProcessRecord>> running;
  {
    std::lock_guard lock(mu_);
    for (const ledger::ProcessRecord& p : ledger_.unfinished()) {
      auto it = entries_.find(p.sandboxId);
      if (it != entries_.end() && it->second.core && !p.processId.empty()) running.emplace_back(it->second.core, p);
    }
  }
  for (const auto& [core, p] : running) {
    auto dto = core->get(p.processId);
    if (std::holds_alternative<ProcessError>(dto)) {
      // Deleted (its delete wrote its end) or its sandbox closed meanwhile.
      if (std::get<ProcessError>(dto).code == ProcessErrorCode::kNotFound)
        ledger_.markEnded(p.processKey, ledger::ProcessState::kKilled, std::nullopt, std::nullopt, "deleted");
      continue;
    }
    const ProcessDto& d = std::get<ProcessDto>(dto);
    if (d.state != ProcessState::kTerminal || !d.reason) continue;
    ledger::ProcessState state = *d.reason == ProcessReason::kFailed ? ledger::ProcessState::kFailed
                                 : *d.reason == ProcessReason::kLost ? ledger::ProcessState::kKilled
                                                                     : ledger::ProcessState::kExited;
    ledger_.markEnded(p.processKey, state, d.exitCode, std::nullopt, d.reasonDetail.value_or(""));
  }
}

std::variant<ledger::TerminateAnswer, ApiError> Sandboxes::terminate(std::string_view id, const std::string& key) {
  LiveHandle h;
  {
    std::lock_guard lock(mu_);
    auto found = liveEntry(id);
    if (auto* e = std::get_if<ApiError>(&found)) return *e;
    Entry& entry = *std::get<Entry*>(found);
    h = LiveHandle{entry.record.id, entry.live, entry.core, entry.code};
  }
  auto record = ledger_.process(key);
  if (!record || record->sandboxId != h.id) return ledger::TerminateAnswer::kUnknown;
  // Started by this daemon and still supervised: kill the whole sandbox of
  // the process, then confirm its end.
  if (h.core && !record->processId.empty()) {
    auto found = h.core->find(record->processId);
    if (auto* rec = std::get_if<std::shared_ptr<process::Record>>(&found)) {
      if (!(*rec)->terminal()) {
        std::int64_t effect = ledger_.beginEffect(key, "terminate", "SIGKILL");
        (void)h.core->kill(record->processId, KillOptions{ProcessSignal::kKill, std::nullopt, ProcessSignal::kKill});
        bool gone = (*rec)->wait(std::chrono::seconds(10)).has_value();
        ledger_.endEffect(effect, gone, gone ? "killed" : "still running 10 s after SIGKILL");
        if (!gone) return ledger::TerminateAnswer::kUnknown;
        ledger_.markEnded(key, ledger::ProcessState::kKilled, std::nullopt, SIGKILL, "terminate");
        return ledger::TerminateAnswer::kTerminated;
      }
      syncEnded();
    }
  }
  return ledger::terminateRecorded(ledger_, h.id, key);
}

int Sandboxes::collect() {
  std::lock_guard lock(mu_);
  int released = ledger::collectReleases(ledger_, [this](const ledger::SandboxRecord& r) { return release(r); });
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto r = ledger_.sandbox(it->first);
    if (r && r->state == ledger::SandboxState::kReleased) {
      it = entries_.erase(it);
    } else {
      if (r) it->second.record = *r;
      ++it;
    }
  }
  return released;
}

}  // namespace stockade::daemon
