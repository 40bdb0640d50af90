// `stockade run`: runs one program under a policy, passing stdin/stdout/stderr
// through. Parses arguments into a RunOptions value, derives the rules, calls
// platform::spawn() and waits on the pidfd. Exit codes follow the shell:
// the child's code, 128+N for signal N, 124 timeout, 125 stockade failed,
// 126 not executable, 127 not found.
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "platform/linux/process.h"
#include "proxy/proxy.h"
#include "src/child_env.h"
#include "src/limits_audit.h"
#include "src/proxy_audit.h"
#include "platform/linux/spawn.h"
#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"
#include "stockade/rules.h"

extern char** environ;

namespace stockade::cli {
namespace {

constexpr int kExitTimeout = 124;
// Denial events written per run; the exit event counts them all.
constexpr long kMaxDenialEvents = 100;
constexpr int kExitStockadeFailed = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;

constexpr const char* kRunUsage = R"(usage: stockade run [--policy FILE] [--cwd DIR] [--env NAME=VALUE]...
                    [--timeout-ms N] [--resolve HOST=ADDR]... [--audit FILE]
                    -- PROGRAM [ARG...]

Runs PROGRAM under the policy (default: the bundled default policy) with
namespaces, read-only mounts and masks, Landlock and seccomp.

  --policy FILE       policy JSON (see `stockade policy --help`)
  --cwd DIR           working directory (default: the current one); relative
                      policy paths resolve against it
  --env NAME=VALUE    set a variable after the policy's env.allow names
  --timeout-ms N      kill the child's whole process tree after N ms (exit 124)
  --resolve HOST=ADDR map HOST to the IP address ADDR for the proxy
  --audit FILE        append one JSON line per enforcement event

Exit status: the child's; 128+N when it died of signal N; 124 timeout;
125 stockade failed; 126 not executable; 127 not found.
)";

struct Failure {
  std::string message;
};

struct RunOptions {
  std::optional<std::string> policyFile;
  std::string cwd;
  std::map<std::string, std::string> env;
  std::optional<std::chrono::milliseconds> timeout;
  std::map<std::string, std::string> resolve;
  std::optional<std::string> auditFile;
  std::vector<std::string> argv;
};

bool validHostName(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-') return false;
  std::size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!(c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
    if (++label > 63) return false;
  }
  return label != 0;
}

RunOptions parseRunOptions(const ParsedArgs& args) {
  RunOptions o;
  o.policyFile = args.value("policy");
  if (auto cwd = args.value("cwd")) {
    char* real = ::realpath(cwd->c_str(), nullptr);
    if (!real) throw Failure{"--cwd \"" + *cwd + "\": " + std::strerror(errno)};
    o.cwd = real;
    std::free(real);
  } else {
    char buf[4096];
    if (!::getcwd(buf, sizeof buf)) throw Failure{std::string("getcwd() failed: ") + std::strerror(errno)};
    o.cwd = buf;
  }
  for (const auto& e : args.values("env")) {
    auto eq = e.find('=');
    if (eq == std::string::npos) throw Failure{"--env \"" + e + "\": expected NAME=VALUE"};
    if (auto problem = overlayNameProblem(e.substr(0, eq)); !problem.empty()) throw Failure{"--env: " + problem};
    o.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  if (auto t = args.value("timeout-ms")) {
    long long ms = 0;
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), ms);
    if (ec != std::errc() || end != t->data() + t->size() || ms <= 0)
      throw Failure{"--timeout-ms \"" + *t + "\": expected a positive number of milliseconds"};
    o.timeout = std::chrono::milliseconds(ms);
  }
  for (const auto& r : args.values("resolve")) {
    auto eq = r.find('=');
    std::string host = eq == std::string::npos ? r : r.substr(0, eq);
    std::string addr = eq == std::string::npos ? "" : r.substr(eq + 1);
    if (!validHostName(host)) throw Failure{"--resolve \"" + r + "\": \"" + host + "\" is not a host name"};
    unsigned char buf[16];
    std::string bare = addr.size() > 2 && addr.front() == '[' && addr.back() == ']' ? addr.substr(1, addr.size() - 2) : addr;
    if (::inet_pton(AF_INET, bare.c_str(), buf) != 1 && ::inet_pton(AF_INET6, bare.c_str(), buf) != 1)
      throw Failure{"--resolve \"" + r + "\": \"" + addr + "\" is not an IPv4 or IPv6 address"};
    o.resolve[host] = bare;
  }
  o.auditFile = args.value("audit");
  if (!args.positionals.empty())
    throw Failure{"unexpected argument \"" + args.positionals.front() + "\"; put the program after --"};
  o.argv = args.rest;
  if (o.argv.empty()) throw Failure{"no program given; usage: stockade run [OPTIONS] -- PROGRAM [ARG...]"};
  return o;
}

// Appends JSON lines; every event carries a UTC timestamp.
class AuditLog {
 public:
  explicit AuditLog(const std::optional<std::string>& path) {
    if (!path) return;
    fd_.reset(::open(path->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!fd_) throw Failure{"--audit \"" + *path + "\": open(O_APPEND|O_CREAT) failed: " + std::strerror(errno)};
  }
  bool enabled() const { return fd_.valid(); }
  void write(nlohmann::json event) {
    if (!fd_) return;
    timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    tm utc;
    ::gmtime_r(&ts.tv_sec, &utc);
    char when[40];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &utc);
    char millis[24];
    std::snprintf(millis, sizeof millis, ".%03ldZ", ts.tv_nsec / 1000000);
    event["time"] = std::string(when) + millis;
    std::string line = event.dump() + "\n";
    // One write() per line: O_APPEND keeps concurrent writers' lines whole.
    if (::write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      printErr(std::string("stockade: warning: audit write failed: ") + std::strerror(errno) + "\n");
  }

 private:
  platform::UniqueFd fd_;
};

nlohmann::json enforcementJson(const platform::EnforcementReport& r) {
  nlohmann::json out = {{"namespaces",
           {{"user", r.userNamespace}, {"mount", r.mountNamespace}, {"pid", r.pidNamespace},
            {"network", r.networkNamespace}, {"ipc", r.ipcNamespace}, {"uts", r.utsNamespace},
            {"cgroup", r.cgroupNamespace}}},
          {"landlock",
           {{"abi", r.landlockAbi}, {"filesystem", r.landlockFilesystem}, {"network", r.landlockNetwork},
            {"scopes", r.landlockScopes}}},
          {"seccomp", r.seccomp},
          {"noNewPrivs", r.noNewPrivs},
          {"degradations", r.degradations}};
  // "pids", "memory", "cpu": null when not asked for or not enforced (then a degradation says why)
  out.update(limitEnforcementJson(r));
  return out;
}

int execFailureCode(const platform::SpawnError& e) {
  if (e.step != platform::SetupStep::kExec) return kExitStockadeFailed;
  if (e.error == ENOENT || e.error == ENOTDIR) return kExitNotFound;
  return kExitNotExecutable;
}

int run(const RunOptions& o) {
  AuditLog audit(o.auditFile);
  auto policy = [&]() -> SandboxPolicy {
    if (!o.policyFile) return SandboxPolicy::defaults();
    auto loaded = loadPolicyFile(*o.policyFile);
    if (auto* err = std::get_if<std::string>(&loaded)) throw Failure{"--policy " + *err};
    return std::get<SandboxPolicy>(std::move(loaded));
  }();
  DeriveContext context = currentContext();
  context.cwd = o.cwd;
  context.tmpdir = "/tmp";
  auto derived = derive(policy, context);
  if (auto* err = std::get_if<PolicyError>(&derived)) throw Failure{"deriving the rules: " + err->text()};
  const DerivedRules& rules = std::get<DerivedRules>(derived);

  // Signals that would end stockade end the child first (see below).
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&handled, sig);
  if (::sigprocmask(SIG_BLOCK, &handled, nullptr) != 0)
    throw Failure{std::string("sigprocmask(SIG_BLOCK) failed: ") + std::strerror(errno)};
  platform::UniqueFd signals(::signalfd(-1, &handled, SFD_CLOEXEC));
  if (!signals) throw Failure{std::string("signalfd() failed: ") + std::strerror(errno)};

  // With allowed domains, the child's one way out is the proxy, reached on its
  // own loopback; without, it has no network at all.
  std::optional<std::uint16_t> proxyPort;
  if (!rules.network().allowedDomains.empty()) proxyPort = kSandboxProxyPort;
  platform::SpawnRequest request{rules, o.argv, o.cwd, childEnvironment(rules, environ, o.env, proxyPort)};
  request.proxyPort = proxyPort;
  request.stdio = platform::Stdio::kInherit;
  request.onMissingLayer = platform::OnMissingLayer::kRunAndReport;
  // Only the audit log shows the fingerprint: skip the hashing when nobody reads it.
  const std::string fingerprint = audit.enabled() ? rules.fingerprint() : std::string();
  auto spawned = platform::spawn(request);
  if (auto* e = std::get_if<platform::SpawnError>(&spawned)) {
    int code = execFailureCode(*e);
    audit.write({{"event", "spawn_failed"}, {"fingerprint", fingerprint}, {"argv", o.argv},
                 {"step", platform::setupStepName(e->step)}, {"message", e->message()}, {"exitCode", code}});
    if (code == kExitNotFound) printErr("stockade run: " + o.argv[0] + ": not found (" + e->message() + ")\n");
    else if (code == kExitNotExecutable) printErr("stockade run: " + o.argv[0] + ": cannot execute (" + e->message() + ")\n");
    else printErr("stockade run: " + e->message() + "\n");
    return code;
  }
  platform::Child child = std::move(std::get<platform::Child>(spawned));
  // Declared before the listeners, so that they close first.
  std::unique_ptr<proxy::Proxy> egress;
  std::vector<proxy::ListenerHandle> listeners;
  if (proxyPort) {
    egress = std::make_unique<proxy::Proxy>();
    egress->setAuditSink([&audit](const proxy::ProxyEvent& e) {
      nlohmann::json event = proxyEventJson(e);
      event["event"] = "proxy";
      audit.write(std::move(event));
    });
    auto network = std::make_shared<const DerivedRules::Network>(rules.network());
    proxy::RulesProvider provider = [network] { return network; };
    const std::string runId = "run-" + std::to_string(child.pid);
    for (auto& fd : child.proxyListeners)
      listeners.push_back(egress->addListener(std::move(fd), {"cli", runId, provider, o.resolve}));
  }
  for (const auto& d : child.enforcement.degradations) printErr("stockade: warning: weaker enforcement: " + d + "\n");
  audit.write({{"event", "spawn"}, {"pid", child.pid}, {"fingerprint", fingerprint}, {"argv", o.argv},
               {"cwd", o.cwd}, {"enforcement", enforcementJson(child.enforcement)}});
  for (const auto& d : child.enforcement.degradations) audit.write({{"event", "degraded"}, {"pid", child.pid}, {"what", d}});

  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (o.timeout) deadline = std::chrono::steady_clock::now() + *o.timeout;
  // Denials beyond the first kMaxDenialEvents are counted in the exit event.
  long denials = 0;
  child.onDenial = [&](const platform::SeccompDenial& d) {
    if (++denials <= kMaxDenialEvents)
      audit.write({{"event", "denial"}, {"layer", "seccomp"}, {"pid", d.pid}, {"syscall", d.syscall},
                   {"args", d.args}, {"error", strerrorname_np(d.error)}});
  };
  auto killAndReap = [&]() {
    // The sandbox's init is pid 1 of its pid namespace: killing it kills
    // every process in the sandbox.
    if (auto err = platform::signalChild(child.pidfd, SIGKILL)) printErr("stockade run: " + *err + "\n");
    return platform::waitExit(child);
  };
  bool killedForLimit = false;
  for (;;) {
    auto event = platform::waitEvent(child, deadline, signals.get());
    if (auto* err = std::get_if<std::string>(&event)) {
      (void)killAndReap();  // never leave the sandbox running without its listener
      throw Failure{*err};
    }
    switch (std::get<platform::WaitEvent>(event)) {
      case platform::WaitEvent::kDeadline:
        (void)killAndReap();
        audit.write({{"event", "exit"}, {"pid", child.pid}, {"reason", "timeout"}, {"exitCode", kExitTimeout},
                     {"denials", denials}});
        printErr("stockade run: timed out after " + std::to_string(o.timeout->count()) + " ms; killed the sandbox\n");
        return kExitTimeout;
      case platform::WaitEvent::kAlsoWatched: {
        signalfd_siginfo info;
        if (::read(signals.get(), &info, sizeof info) != sizeof info) continue;
        (void)killAndReap();
        int code = 128 + static_cast<int>(info.ssi_signo);
        audit.write({{"event", "exit"}, {"pid", child.pid}, {"reason", "stockade received signal"},
                     {"signal", info.ssi_signo}, {"exitCode", code}, {"denials", denials}});
        return code;
      }
      case platform::WaitEvent::kOverLimit:
        // The whole sandbox goes; the exit below names the limit.
        if (auto err = platform::signalChild(child.pidfd, SIGKILL)) printErr("stockade run: " + *err + "\n");
        killedForLimit = true;
        continue;
      case platform::WaitEvent::kExited: {
        auto status = platform::waitExit(child);
        if (auto* err = std::get_if<std::string>(&status)) throw Failure{*err};
        const auto& s = std::get<platform::ExitStatus>(status);
        nlohmann::json exit = {{"event", "exit"}, {"pid", child.pid}, {"exitCode", s.shellCode()}, {"denials", denials}};
        if (s.kind == platform::ExitStatus::Kind::kSignaled) exit["signal"] = s.value;
        addExitUsage(exit, s);
        if (s.limit) {
          exit["reason"] = s.limit;
          printErr("stockade run: " + limitMessage(s, rules.limits()) + (killedForLimit ? "; killed the sandbox\n" : "\n"));
        }
        audit.write(exit);
        return s.shellCode();
      }
    }
  }
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  auto parsed = parseArgs(args, {{"policy"},
                                 {"cwd"},
                                 {"env", true, true},
                                 {"timeout-ms"},
                                 {"resolve", true, true},
                                 {"audit"}});
  if (auto* err = std::get_if<std::string>(&parsed)) {
    printErr("stockade run: " + *err + "\n");
    return kExitStockadeFailed;
  }
  const auto& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(kRunUsage);
    return kExitOk;
  }
  try {
    return run(parseRunOptions(a));
  } catch (const Failure& f) {
    printErr("stockade run: " + f.message + "\n");
    return kExitStockadeFailed;
  } catch (const std::exception& e) {
    printErr(std::string("stockade run: ") + e.what() + "\n");
    return kExitStockadeFailed;
  }
}

}  // namespace stockade::cli
