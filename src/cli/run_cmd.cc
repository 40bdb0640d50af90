// `stockade run`: runs one program under a policy, passing stdin/stdout/stderr
// through. Parses arguments into a RunOptions value, derives the rules and
// hands them to the library's launcher and supervisor (src/process/foreground.h). Exit codes follow the shell:
// the child's code, 128+N for signal N, 124 timeout, 125 stockade failed,
// 126 not executable, 127 not found.
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "platform/linux/namespaces.h"
#include "platform/linux/pty.h"
#include "platform/linux/spawn.h"
#include "policy/paths.h"
#include "src/audit/event.h"
#include "src/audit/file_sink.h"
#include "src/audit/limits_event.h"
#include "src/audit/log.h"
#include "src/child_env.h"
#include "src/process/foreground.h"
#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"
#include "stockade/rules.h"

extern char** environ;

namespace stockade::cli {
namespace {

constexpr int kExitTimeout = 124;
constexpr int kExitStockadeFailed = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;

struct Failure {
  std::string message;
};

struct RunOptions {
  std::optional<std::string> policyFile;  // --policy or --settings (or ~/.srt-settings.json)
  std::string cwd;        // in the sandbox's view
  std::string workspace;  // --workspace, a real path: shown at /workspace; empty: none
  std::map<std::string, std::string> env;
  std::optional<std::chrono::milliseconds> timeout;
  std::map<std::string, std::string> resolve;
  std::optional<std::string> auditFile;
  bool quiet = false;   // warnings and notes only to the audit log
  bool strict = false;  // a degradation refuses the run
  std::size_t auditMaxEvents = audit::Limits{}.maxEventsPerSandbox;
  enum class Terminal { kAuto, kPty, kNone } terminal = Terminal::kAuto;
  std::vector<std::string> argv;
};

// The largest --timeout-ms: far beyond any run, and far from overflowing the
// steady clock's nanoseconds when added to now().
constexpr long long kMaxTimeoutMs = 1'000'000'000'000;  // about 31 years

// sandbox-runtime's settings file, read when no policy is named.
std::optional<std::string> defaultSettingsFile() {
  const std::string home = currentContext().home;
  if (home.empty()) return std::nullopt;
  std::string path = home + "/.srt-settings.json";
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  return path;
}

RunOptions parseRunOptions(const ParsedArgs& args) {
  RunOptions o;
  if (args.has("policy") && args.has("settings"))
    throw Failure{"--policy and --settings name the same thing; give one of them"};
  o.policyFile = args.has("settings") ? args.value("settings") : args.value("policy");
  if (!o.policyFile) o.policyFile = defaultSettingsFile();
  if (auto dir = args.value("workspace")) {
    char* real = ::realpath(dir->c_str(), nullptr);
    if (!real) throw Failure{"--workspace \"" + *dir + "\": " + std::strerror(errno) + "; name an existing directory"};
    o.workspace = real;
    std::free(real);
    struct stat st {};
    if (::stat(o.workspace.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw Failure{"--workspace \"" + *dir + "\": not a directory; name an existing directory"};
  }
  if (!o.workspace.empty()) {
    // The program's view: /workspace, or a directory given beneath it or absolute.
    const std::string cwd = args.value("cwd").value_or("");
    if (cwd.find('\0') != std::string::npos) throw Failure{"--cwd contains NUL"};
    o.cwd = policy::lexicallyNormal(cwd.starts_with("/") ? cwd : "/workspace/" + cwd);
  } else if (auto cwd = args.value("cwd")) {
    char* real = ::realpath(cwd->c_str(), nullptr);
    if (!real) throw Failure{"--cwd " + audit::printable(*cwd) + ": " + std::strerror(errno)};
    o.cwd = real;
    std::free(real);
  } else {
    char buf[4096];
    if (!::getcwd(buf, sizeof buf)) throw Failure{std::string("getcwd() failed: ") + std::strerror(errno)};
    o.cwd = buf;
  }
  for (const auto& e : args.values("env")) {
    auto eq = e.find('=');
    if (eq == std::string::npos) throw Failure{"--env \"" + e + "\": expected NAME=VALUE, such as --env LANG=C.UTF-8"};
    if (auto problem = overlayNameProblem(e.substr(0, eq), ProxyVariables::kNotSet); !problem.empty())
      throw Failure{"--env: " + problem};
    o.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  if (auto t = args.value("timeout-ms")) {
    long long ms = 0;
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), ms);
    bool digits = !t->empty() && t->find_first_not_of("0123456789") == std::string::npos;
    if (digits && (ec == std::errc::result_out_of_range || ms > kMaxTimeoutMs))
      throw Failure{"--timeout-ms \"" + *t + "\": more than " + std::to_string(kMaxTimeoutMs) +
                    " ms (about 31 years), the largest timeout; give fewer milliseconds, or no --timeout-ms for none"};
    if (ec != std::errc() || end != t->data() + t->size() || ms <= 0)
      throw Failure{"--timeout-ms \"" + *t + "\": expected a whole number of milliseconds from 1, such as 5000"};
    o.timeout = std::chrono::milliseconds(ms);
  }
  for (const auto& r : args.values("resolve"))
    if (auto problem = process::addResolveFlag(r, o.resolve)) throw Failure{*problem};
  if (args.has("tty") && args.has("no-tty")) throw Failure{"-t and -T contradict each other; pass one"};
  if (args.has("tty")) o.terminal = RunOptions::Terminal::kPty;
  if (args.has("no-tty")) o.terminal = RunOptions::Terminal::kNone;
  o.auditFile = args.value("audit");
  o.quiet = args.has("quiet");
  o.strict = args.has("strict");
  if (auto n = args.value("audit-max-events")) {
    std::size_t count = 0;
    auto [end, ec] = std::from_chars(n->data(), n->data() + n->size(), count);
    if (ec != std::errc() || end != n->data() + n->size())
      throw Failure{"--audit-max-events \"" + *n + "\": expected a number of events (0: no cap)"};
    o.auditMaxEvents = count;
  }
  if (!args.positionals.empty())
    throw Failure{"unexpected argument \"" + args.positionals.front() + "\"; put the program after --"};
  o.argv = args.rest;
  if (o.argv.empty()) throw Failure{"no program given; usage: stockade run [OPTIONS] -- PROGRAM [ARG...]"};
  return o;
}

// Sends the runtime's audit events to the file named by --audit, opened
// where the child cannot redirect it (src/audit/file_sink.h).
void attachAuditFile(audit::Log& log, const std::string& path, const DerivedRules& rules,
                     const std::string& privateTmp, std::size_t maxEvents) {
  // Every tree the child may write, except its private TMPDIR: that is a
  // tmpfs of the sandbox's own, not the host directory of that name.
  std::vector<std::string> writable = rules.filesystem().allowWrite;
  for (const auto& p : rules.filesystem().defaultWrite)
    if (p != privateTmp) writable.push_back(p);
  auto opened = audit::FileSink::open(path, writable);
  if (auto* err = std::get_if<std::string>(&opened)) throw Failure{"--audit: " + *err};
  auto file = std::make_shared<audit::FileSink>(std::get<audit::FileSink>(std::move(opened)));
  log.setLimits({.maxEventsPerSandbox = maxEvents});
  log.setSink([file](const std::string& line) { file->write(line); });
}

// The caller's terminal size, for the PTY (80x24 when neither fd 0 nor 1 is a terminal).
platform::WindowSize terminalSize() {
  if (auto size = platform::windowSize(STDIN_FILENO)) return *size;
  if (auto size = platform::windowSize(STDOUT_FILENO)) return *size;
  return {};
}

int execFailureCode(const platform::SpawnError& e) {
  if (e.step != platform::SetupStep::kExec) return kExitStockadeFailed;
  if (e.error == ENOENT || e.error == ENOTDIR) return kExitNotFound;
  return kExitNotExecutable;
}

int run(const RunOptions& o) {
  // Inside a sandbox the seccomp filter refuses the namespaces a sandbox is
  // made of: say so, rather than fail at clone3() with EPERM.
  if (platform::insideStockadeSandbox())
    throw Failure{"nested sandboxes are not supported: this runs inside a stockade sandbox already, whose seccomp "
                  "filter refuses the user, mount and pid namespaces a sandbox is made of (an inner sandbox could "
                  "only be weaker than the one it is in); run the program directly, it is sandboxed, or start "
                  "stockade outside the sandbox"};
  auto policy = [&]() -> SandboxPolicy {
    if (!o.policyFile) return SandboxPolicy::defaults();
    auto loaded = loadPolicyFile(*o.policyFile);
    if (auto* err = std::get_if<PolicyFileError>(&loaded)) throw Failure{err->lines()};
    return std::get<SandboxPolicy>(std::move(loaded));
  }();
  // stockade's own warnings and notes: on stderr unless --quiet.
  auto diagnostic = [&o](const std::string& line) {
    if (!o.quiet) printErr(line + "\n");
  };
  if (o.policyFile)
    for (const auto& line : policyNoteLines(*o.policyFile, policy)) diagnostic("stockade: " + line);
  DeriveContext context = currentContext();
  context.cwd = o.workspace.empty() ? o.cwd : o.workspace;  // what relative policy paths mean
  context.cwdName = o.workspace.empty() ? "--cwd" : "--workspace";
  context.tmpdir = "/tmp";
  auto derived = derive(policy, context);
  if (auto* err = std::get_if<PolicyError>(&derived)) throw Failure{"deriving the rules: " + err->text()};
  const DerivedRules& rules = std::get<DerivedRules>(derived);

  // Signals that would end stockade end the child first. Blocked before the
  // runtime's threads start, so that they inherit the mask and the signals
  // arrive only through the signalfd.
  sigset_t handled;
  sigemptyset(&handled);
  const bool pty = o.terminal == RunOptions::Terminal::kPty ||
                   (o.terminal == RunOptions::Terminal::kAuto && platform::isTerminal(STDIN_FILENO) &&
                    platform::isTerminal(STDOUT_FILENO));
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&handled, sig);
  if (pty) sigaddset(&handled, SIGWINCH);  // passed on to the PTY
  if (::sigprocmask(SIG_BLOCK, &handled, nullptr) != 0)
    throw Failure{std::string("sigprocmask(SIG_BLOCK) failed: ") + std::strerror(errno)};
  platform::UniqueFd signals(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) throw Failure{std::string("signalfd() failed: ") + std::strerror(errno)};

  // The main thread outlives every child it launches: it spawns them itself,
  // and runs the supervisor's loop while it waits (one thread: see event_loop.h).
  process::Runtime runtime(process::Spawner::Thread::kCaller, process::EventLoop::Thread::kCaller);
  const std::string sandboxId = "cli-" + std::to_string(::getpid());
  if (o.auditFile) attachAuditFile(runtime.audit, *o.auditFile, rules, *context.tmpdir, o.auditMaxEvents);
  else runtime.audit.discardEvents();  // no --audit: events are not wanted
  struct CloseAudit {
    audit::Log& log;
    const std::string& id;
    ~CloseAudit() { log.closeSandbox(id); }
  } closeAudit{runtime.audit, sandboxId};
  if (o.policyFile && !policy.notes().empty())  // the notes, also when --quiet keeps them off stderr
    runtime.audit.write("policy_notes",
                        {{"sandboxId", sandboxId}, {"file", *o.policyFile}, {"notes", audit::policyNotes(policy)}});

  std::optional<std::uint16_t> proxyPort;
  if (!rules.network().allowedDomains.empty()) proxyPort = kSandboxProxyPort;
  if (auto problem = overlayProxyProblem(o.env, proxyPort); !problem.empty()) throw Failure{"--env: " + problem};
  auto outcome = process::runForeground(
      runtime,
      process::ForegroundRequest{.rules = rules,
                                 .program = {o.argv, o.cwd, childEnvironment(rules, environ, o.env, proxyPort)},
                                 .timeout = o.timeout,
                                 .resolve = o.resolve,
                                 .sandboxId = sandboxId,
                                 .signalFd = signals.get(),
                                 .pty = pty ? std::optional(terminalSize()) : std::nullopt,
                                 .onMissingLayer = o.strict ? platform::OnMissingLayer::kRefuse
                                                            : platform::OnMissingLayer::kRunAndReport,
                                 .workspace = o.workspace},
      [&](const process::ForegroundStarted& started) {
        for (const auto& d : started.enforcement.degradations) diagnostic("stockade: warning: weaker enforcement: " + d);
      });
  if (auto* e = std::get_if<platform::SpawnError>(&outcome)) {
    int code = execFailureCode(*e);
    if (code == kExitNotFound)
      printErr("stockade run: " + audit::printable(o.argv[0]) + ": not found (" + e->message() + ")\n");
    else if (code == kExitNotExecutable)
      printErr("stockade run: " + audit::printable(o.argv[0]) + ": cannot execute (" + e->message() + ")\n");
    else printErr("stockade run: " + e->message() + (o.strict ? " (--strict)" : "") + "\n");
    return code;
  }
  const auto& [ending, signal] = std::get<process::ForegroundOutcome>(outcome);
  if (signal) return 128 + *signal;
  switch (ending.cause) {
    case process::Ending::Cause::kTimedOut:
      diagnostic("stockade run: timed out after " + std::to_string(o.timeout->count()) + " ms; killed the sandbox");
      return kExitTimeout;
    case process::Ending::Cause::kFailed:
      throw Failure{ending.error};
    case process::Ending::Cause::kLimit:
    case process::Ending::Cause::kExited:
    case process::Ending::Cause::kKilled:
      break;
  }
  if (ending.status.limit)
    diagnostic("stockade run: " + limitMessage(ending.status, rules.limits()) +
               (ending.cause == process::Ending::Cause::kLimit ? "; killed the sandbox" : ""));
  return ending.status.shellCode();
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  const HelpTopic& topic = *findHelpTopic("run");
  auto parsed = parseArgs(args, flagSpecs(topic));
  if (auto* err = std::get_if<std::string>(&parsed)) {
    printErr("stockade run: " + *err + "\n");
    return kExitStockadeFailed;
  }
  const auto& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(helpText(topic));
    return kExitOk;
  }
  try {
    return run(parseRunOptions(a));
  } catch (const Failure& f) {
    printErrLines("stockade run: ", f.message);
    return kExitStockadeFailed;
  } catch (const std::exception& e) {
    printErr(std::string("stockade run: ") + e.what() + "\n");
    return kExitStockadeFailed;
  }
}

}  // namespace stockade::cli
