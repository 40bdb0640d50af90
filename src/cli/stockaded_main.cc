// stockaded: the daemon's entry point. Parses flags into DaemonOptions, runs
// the Daemon until SIGTERM or SIGINT, then stops it.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"
#include "src/daemon/auth.h"
#include "src/daemon/daemon.h"
#include "src/process/foreground.h"
#include "stockade/version.h"

namespace {

constexpr const char* kUsage = R"(usage: stockaded --listen unix:PATH --state-dir DIR [OPTIONS]
       stockaded --listen 127.0.0.1:PORT --token-file FILE --state-dir DIR [OPTIONS]

Serves stockade's API (docs/api.md) as JSON over HTTP/1.1.

  --listen ADDR             unix:/run/stockade/stockaded.sock (created 0600), or a loopback
                            127.0.0.1:PORT / [::1]:PORT (needs --token-file)
  --token-file FILE         every request but GET /v1/health needs "Authorization: Bearer TOKEN",
                            TOKEN being the file's first line (the file must be mode 0600);
                            SIGHUP reads it again (a bad file keeps the old token, logged)
  --state-dir DIR           the ledger and the workspaces (created 0700)
  --policy FILE             the widest policy any sandbox may have (default: the bundled default);
                            its relative paths resolve against DIR/workspaces
  --allow-origin ORIGIN     accept requests carrying this Origin header (repeatable; any other
                            Origin is refused: a web page must not reach the daemon)
  --resolve HOST=ADDR       the sandboxes' proxy resolves HOST to ADDR instead of asking DNS
                            (repeatable; HOST must still be in a sandbox's allowedDomains)
  --max-body-bytes N        JSON request bodies (default 16777216)
  --max-raw-body-bytes N    streamed bodies: file uploads and tar trees (default 8589934592)
  --body-timeout-ms N       a JSON body must arrive within N ms; a streamed body may pause at most
                            N ms between pieces (default 120000)
  --max-persist-bytes N     a persist's archive (default 26214400, 25 MiB)
  --max-file-bytes N        one file uploaded to or downloaded from a workspace (default 8589934592)
  --max-requests N          requests served at once, streams included (default 256)
  --max-connections N       open connections (default 1024)
  --max-sandboxes N         sandboxes not yet released (default 256)
  --max-processes N         processes running at once in one sandbox (default 1024)
  --log-bytes N             output kept per process (default 1048576; 64 MiB per sandbox)
  --gc-interval-ms N        how often failed closes are retried (default 60000)
  --io-threads N            (default 2)
  --workers N               threads running request handlers (default 8)
  --help, --version
)";

std::optional<std::size_t> positive(const stockade::cli::ParsedArgs& a, const std::string& name, std::string& error) {
  auto v = a.value(name);
  if (!v) return std::nullopt;
  std::size_t n = 0;
  bool ok = !v->empty() && v->size() <= 15;
  for (char c : *v) ok = ok && c >= '0' && c <= '9';
  if (ok) n = std::stoull(*v);
  if (!ok || n == 0) {
    error = "--" + name + " " + *v + ": give a whole number above 0";
    return std::nullopt;
  }
  return n;
}

int usageError(const std::string& message) {
  stockade::cli::printErr("stockaded: " + message + "\n");
  return stockade::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stockade;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    cli::printOut("stockaded " + std::string(version()) + "\n");
    return 0;
  }
  auto parsed = cli::parseArgs(args, {{"listen"},
                                      {"token-file"},
                                      {"state-dir"},
                                      {"policy"},
                                      {"allow-origin", true, true},
                                      {"resolve", true, true},
                                      {"max-body-bytes"},
                                      {"max-raw-body-bytes"},
                                      {"body-timeout-ms"},
                                      {"max-persist-bytes"},
                                      {"max-file-bytes"},
                                      {"max-requests"},
                                      {"max-connections"},
                                      {"max-sandboxes"},
                                      {"max-processes"},
                                      {"log-bytes"},
                                      {"gc-interval-ms"},
                                      {"io-threads"},
                                      {"workers"}});
  if (auto* e = std::get_if<std::string>(&parsed)) return usageError(*e);
  const auto& a = std::get<cli::ParsedArgs>(parsed);
  if (a.has("help")) {
    cli::printOut(kUsage);
    return 0;
  }
  if (!a.positionals.empty() || !a.rest.empty()) return usageError("unexpected argument; see --help");
  if (!a.value("listen")) return usageError("--listen is required; see --help");
  if (!a.value("state-dir")) return usageError("--state-dir is required; see --help");

  daemon::DaemonOptions o;
  auto listen = daemon::parseListenAddress(*a.value("listen"));
  if (auto* e = std::get_if<std::string>(&listen)) return usageError(*e);
  o.listen = std::get<daemon::ListenAddress>(listen);
  if (auto file = a.value("token-file")) {
    auto token = daemon::readTokenFile(*file);
    if (token.index() == 1) return usageError("--token-file " + std::get<1>(token));
    o.token = std::get<0>(std::move(token));
    // Absolute: it becomes a denyRead entry of every sandbox.
    char real[PATH_MAX];
    o.tokenFile = ::realpath(file->c_str(), real) ? std::string(real) : *file;
  }
  if (o.listen.kind == daemon::ListenAddress::Kind::kTcp && !o.token)
    return usageError("--listen " + o.listen.text() +
                      " is a TCP port, which any local user can connect to: give --token-file FILE as well");
  o.stateDir = *a.value("state-dir");
  if (auto file = a.value("policy")) {
    auto policy = cli::loadPolicyFile(*file);
    if (auto* e = std::get_if<cli::PolicyFileError>(&policy)) {
      std::string lines = e->lines();
      while (!lines.empty() && lines.back() == '\n') lines.pop_back();
      return usageError("--policy " + lines);
    }
    for (const auto& line : cli::policyNoteLines(*file, std::get<SandboxPolicy>(policy)))
      cli::printErr("stockaded: " + line + "\n");
    o.baseline = std::get<SandboxPolicy>(std::move(policy));
  }
  o.allowedOrigins = a.values("allow-origin");
  for (const auto& r : a.values("resolve"))
    if (auto problem = process::addResolveFlag(r, o.sandboxLimits.processes.resolve)) return usageError(*problem);
  std::string error;
  if (auto n = positive(a, "max-body-bytes", error)) o.limits.maxJsonBodyBytes = *n;
  if (auto n = positive(a, "max-raw-body-bytes", error)) o.limits.maxRawBodyBytes = *n;
  if (auto n = positive(a, "body-timeout-ms", error)) o.limits.bodyTimeout = std::chrono::milliseconds(*n);
  if (auto n = positive(a, "max-persist-bytes", error)) o.maxPersistBytes = *n;
  if (auto n = positive(a, "max-file-bytes", error)) o.sandboxLimits.maxFileBytes = *n;
  if (auto n = positive(a, "max-requests", error)) o.limits.maxConcurrentRequests = *n;
  if (auto n = positive(a, "max-connections", error)) o.limits.maxConnections = *n;
  if (auto n = positive(a, "max-sandboxes", error)) o.sandboxLimits.maxSandboxes = *n;
  if (auto n = positive(a, "max-processes", error)) o.sandboxLimits.maxProcessesPerSandbox = *n;
  if (auto n = positive(a, "log-bytes", error)) o.sandboxLimits.processes.logBytesPerProcess = *n;
  if (auto n = positive(a, "gc-interval-ms", error)) o.gcInterval = std::chrono::milliseconds(*n);
  if (auto n = positive(a, "io-threads", error)) o.ioThreads = static_cast<int>(std::min<std::size_t>(*n, 64));
  if (auto n = positive(a, "workers", error)) o.workerThreads = static_cast<int>(std::min<std::size_t>(*n, 256));
  if (!error.empty()) return usageError(error);

  spdlog::set_pattern("%v");
  // SIGTERM, SIGINT and SIGHUP are taken by sigwait() below, in this thread
  // only: blocked before any thread starts, so every thread inherits the mask.
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &waited, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<daemon::Daemon> d;
  try {
    d = std::make_unique<daemon::Daemon>(std::move(o));
    d->start();
  } catch (const std::exception& e) {
    cli::printErr(std::string("stockaded: ") + e.what() + "\n");
    return 1;
  }
  spdlog::info("{}", nlohmann::json{{"event", "listening"},
                                    {"address", d->address().text()},
                                    {"version", std::string(version())},
                                    {"pid", ::getpid()}}
                         .dump());
  int sig = 0;
  // SIGHUP: the token file is read again (rotation without a restart).
  while (sigwait(&waited, &sig) == 0 && sig == SIGHUP) {
    auto reload = d->reloadToken();
    if (!reload.error.empty())
      spdlog::error("{}", nlohmann::json{{"event", "token_reload_failed"}, {"error", reload.error}}.dump());
    else if (!reload.warning.empty())
      spdlog::warn("{}", nlohmann::json{{"event", "token_reloaded"}, {"warning", reload.warning}}.dump());
    else
      spdlog::info("{}", nlohmann::json{{"event", "token_reloaded"}}.dump());
  }
  spdlog::info("{}", nlohmann::json{{"event", "stopping"}, {"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}}.dump());
  d->stop();
  return 0;
}
