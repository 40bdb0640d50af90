#include "src/daemon/daemon.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "src/daemon/api.h"

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

std::string isoNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1'000'000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long>(us));
  return buf;
}

}  // namespace

std::string accessLogLine(const AccessRecord& r) {
  nlohmann::json j{{"ts", isoNow()},
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
  std::shared_ptr<Api> api;
  std::unique_ptr<Server> server;
};

Daemon::Daemon(DaemonOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  DaemonOptions& o = impl_->options;
  prepareStateDir(o.stateDir);
  ApiContext context;
  context.features = platform::detectKernelFeatures();
  impl_->api = std::make_shared<Api>(std::move(context));
  ServerOptions so;
  so.listen = o.listen;
  so.auth.token = o.token;
  so.auth.allowedOrigins = o.allowedOrigins;
  so.limits = o.limits;
  so.ioThreads = o.ioThreads;
  so.workerThreads = o.workerThreads;
  impl_->server = std::make_unique<Server>(std::move(so), impl_->api, [](const AccessRecord& r) {
    spdlog::info("{}", accessLogLine(r));
  });
}

Daemon::~Daemon() { stop(); }

void Daemon::start() { impl_->server->start(); }

void Daemon::stop() {
  if (impl_ && impl_->server) impl_->server->stop();
}

ListenAddress Daemon::address() const { return impl_->server->address(); }

}  // namespace stockade::daemon
