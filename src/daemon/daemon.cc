#include "src/daemon/daemon.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "platform/unique_fd.h"
#include "policy/drift.h"
#include "src/daemon/api.h"
#include "src/ledger/recovery.h"

namespace stockade::daemon {

namespace {

// Creates `dir` (one level) with mode 0700 if missing, and checks that it is
// a directory of this user that nobody else may write.
void prepareStateDir(const std::string& dir) {
  if (dir.empty() || dir.front() != '/')
    throw std::runtime_error("--state-dir " + dir + ": give an absolute path, such as /var/lib/stockade");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("--state-dir: mkdir(\"" + dir + "\", 0700) failed: " + std::strerror(errno));
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0)
    throw std::runtime_error("--state-dir: lstat(\"" + dir + "\") failed: " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error("--state-dir " + dir + ": not a directory");
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("--state-dir " + dir + ": owned by uid " + std::to_string(st.st_uid) +
                             ", not by this daemon's uid " + std::to_string(::geteuid()));
  if ((st.st_mode & 022) != 0)
    throw std::runtime_error("--state-dir " + dir + ": writable by group or others; chmod 700 it");
}

// One daemon per state dir: two would each "recover" the other's processes.
platform::UniqueFd lockStateDir(const std::string& dir) {
  std::string path = dir + "/lock";
  platform::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw std::runtime_error("--state-dir: open(\"" + path + "\") failed: " + std::strerror(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    (void)!::pread(fd.get(), buf, sizeof buf - 1, 0);
    throw std::runtime_error("--state-dir " + dir + " is in use by another stockaded (pid " + std::string(buf) +
                             "); one daemon per state dir");
  }
  std::string pid = std::to_string(::getpid());
  (void)!::ftruncate(fd.get(), 0);
  (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  return fd;
}

void logEvent(nlohmann::json j) {
  j["ts"] = ledger::utcTimestamp();
  spdlog::info("{}", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

std::string accessLogLine(const AccessRecord& r) {
  nlohmann::json j{{"ts", ledger::utcTimestamp()},
                   {"event", "request"},
                   {"method", r.method},
                   {"path", r.path},
                   {"status", r.status},
                   {"durationUs", r.duration.count()},
                   {"bytes", r.bytesOut}};
  if (!r.sandboxId.empty()) j["sandboxId"] = r.sandboxId;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct Daemon::Impl {
  DaemonOptions options;
  platform::UniqueFd stateLock;
  std::unique_ptr<ledger::Ledger> ledger;
  // One supervisor loop, launcher, proxy and audit log for every sandbox.
  // Declared before `sandboxes`: torn down after them.
  std::unique_ptr<process::Runtime> runtime;
  ledger::RecoveryReport recovery;
  std::unique_ptr<Sandboxes> sandboxes;
  std::optional<CheckpointStore> checkpoints;
  std::optional<SnapshotStore> snapshots;
  std::shared_ptr<Api> api;
  std::unique_ptr<Server> server;
  // The token file's identity when it was last read: the one every sandbox
  // admitted since then holds in its drift baseline (policy/drift.h).
  std::optional<policy::FileIdentity> tokenIdentity;

  // The collection pass, on a thread of its own.
  std::thread gc;
  std::mutex gcMu;
  std::condition_variable gcWake;
  bool stopping = false;

  void runGc() {
    std::unique_lock lock(gcMu);
    // Ends of processes reach the ledger within kSyncInterval; failed
    // closes are retried every gcInterval.
    constexpr auto kSyncInterval = std::chrono::milliseconds(500);
    auto nextCollect = std::chrono::steady_clock::now() + options.gcInterval;
    while (!gcWake.wait_for(lock, std::min<std::chrono::milliseconds>(kSyncInterval, options.gcInterval),
                            [&] { return stopping; })) {
      lock.unlock();
      try {
        sandboxes->syncEnded();
        if (std::chrono::steady_clock::now() >= nextCollect) {
          nextCollect = std::chrono::steady_clock::now() + options.gcInterval;
          if (int n = sandboxes->collect(); n > 0) logEvent({{"event", "collected"}, {"released", n}});
        }
      } catch (const std::exception& e) {
        logEvent({{"event", "collect_failed"}, {"error", e.what()}});
      }
      lock.lock();
    }
  }
};

Daemon::Daemon(DaemonOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  DaemonOptions& o = impl_->options;
  prepareStateDir(o.stateDir);
  impl_->stateLock = lockStateDir(o.stateDir);
  if (o.tokenFile) impl_->tokenIdentity = policy::identityOf(*o.tokenFile);
  auto opened = ledger::Ledger::open(o.stateDir + "/ledger.db");
  if (auto* e = std::get_if<std::string>(&opened)) throw std::runtime_error("ledger " + *e);
  impl_->ledger = std::move(std::get<std::unique_ptr<ledger::Ledger>>(opened));
  impl_->recovery = ledger::recoverProcesses(*impl_->ledger);
  if (impl_->recovery.total() > 0)
    logEvent({{"event", "recovered"},
              {"killed", impl_->recovery.killed},
              {"alreadyGone", impl_->recovery.alreadyGone},
              {"unconfirmed", impl_->recovery.unconfirmed},
              {"errors", impl_->recovery.errors}});
  impl_->runtime = std::make_unique<process::Runtime>();
  // Audit events in the library's schema, one JSON line each, beside the access log.
  impl_->runtime->audit.setSink([](const std::string& line) { spdlog::info("{}", line); });
  impl_->sandboxes = std::make_unique<Sandboxes>(*impl_->ledger, *impl_->runtime,
                                                 o.baseline ? *o.baseline : SandboxPolicy::defaults(),
                                                 o.stateDir + "/workspaces", o.sandboxLimits,
                                                 DaemonFiles{o.stateDir, o.tokenFile,
                                                             o.listen.kind == ListenAddress::Kind::kUnix
                                                                 ? std::optional<std::string>(o.listen.path)
                                                                 : std::nullopt});

  auto checkpoints = CheckpointStore::open({o.stateDir, o.maxPersistBytes});
  if (auto* e = std::get_if<WorkspaceError>(&checkpoints))
    throw std::runtime_error("--state-dir: the checkpoint store: " + e->message);
  impl_->checkpoints.emplace(std::get<CheckpointStore>(std::move(checkpoints)));
  SnapshotStore::Options so{};
  so.stateDir = o.stateDir;
  so.ledger = std::make_shared<ledger::LedgerSnapshots>(*impl_->ledger);
  auto snapshots = SnapshotStore::open(std::move(so));
  if (auto* e = std::get_if<WorkspaceError>(&snapshots))
    throw std::runtime_error("--state-dir: the snapshot store: " + e->message);
  impl_->snapshots.emplace(std::get<SnapshotStore>(std::move(snapshots)));

  ApiContext context;
  context.features = platform::detectKernelFeatures();
  context.checkpoints = &*impl_->checkpoints;
  context.snapshots = &*impl_->snapshots;
  context.sandboxes = impl_->sandboxes.get();
  context.ledger = impl_->ledger.get();
  impl_->api = std::make_shared<Api>(std::move(context));
  ServerOptions serverOptions;
  serverOptions.listen = o.listen;
  serverOptions.auth.token = o.token;
  serverOptions.auth.allowedOrigins = o.allowedOrigins;
  serverOptions.limits = o.limits;
  serverOptions.ioThreads = o.ioThreads;
  serverOptions.workerThreads = o.workerThreads;
  impl_->server = std::make_unique<Server>(std::move(serverOptions), impl_->api, [](const AccessRecord& r) {
    spdlog::info("{}", accessLogLine(r));
  });
  // Loaded once the socket is bound (served only from start()): the socket
  // file is a denyRead entry of every sandbox, and binding replaces the one
  // a crashed daemon left, so rules derived before it would see their entry
  // replaced and refuse every child as drift.
  impl_->sandboxes->load();
  impl_->sandboxes->collect();
}

Daemon::~Daemon() { stop(); }

void Daemon::start() {
  impl_->server->start();
  impl_->gc = std::thread([impl = impl_.get()] { impl->runGc(); });
}

void Daemon::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->gcMu);
    impl_->stopping = true;
  }
  impl_->gcWake.notify_all();
  if (impl_->gc.joinable()) impl_->gc.join();
  if (impl_->server) impl_->server->stop();
  // Every process is killed; the ledger records their ends.
  if (impl_->sandboxes) {
    impl_->sandboxes.reset();
  }
}

ListenAddress Daemon::address() const { return impl_->server->address(); }

Daemon::TokenReload Daemon::reloadToken() {
  const DaemonOptions& o = impl_->options;
  if (!o.tokenFile || !o.token) return {"no --token-file was given: there is no token to reload", ""};
  auto token = readTokenFile(*o.tokenFile);
  if (auto* e = std::get_if<1>(&token)) return {"--token-file " + *e + "; the previous token stays", ""};
  impl_->server->replaceToken(std::get<0>(std::move(token)));
  TokenReload result;
  auto now = policy::identityOf(*o.tokenFile);
  if (now != impl_->tokenIdentity)
    result.warning = "--token-file " + *o.tokenFile +
                     " is another file than the one read before (renamed over it): the sandboxes created before "
                     "deny reads of it by its identity, and refuse new processes as drift (naming it) until "
                     "created again; rotate the token by rewriting the file in place";
  impl_->tokenIdentity = now;
  return result;
}

const ledger::RecoveryReport& Daemon::recovery() const { return impl_->recovery; }

}  // namespace stockade::daemon
