#include "src/process/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "platform/linux/syscall_decode.h"
#include "src/audit/limits_event.h"
#include "src/child_env.h"

namespace stockade::process {
namespace {

nlohmann::json enforcementJson(const platform::EnforcementReport& r) {
  return {{"namespaces",
           {{"user", r.userNamespace}, {"mount", r.mountNamespace}, {"pid", r.pidNamespace},
            {"network", r.networkNamespace}, {"ipc", r.ipcNamespace}, {"uts", r.utsNamespace},
            {"cgroup", r.cgroupNamespace}}},
          {"landlock",
           {{"abi", r.landlockAbi}, {"filesystem", r.landlockFilesystem}, {"network", r.landlockNetwork},
            {"scopes", r.landlockScopes}}},
          {"seccomp", r.seccomp},
          {"writeBroker", {{"active", r.writeBroker}, {"trees", r.brokeredTrees}, {"synchronousWakeUp", r.synchronousWakeUp}}},
          {"noNewPrivs", r.noNewPrivs},
          {"degradations", r.degradations}};
}

const char* causeName(Ending::Cause cause) {
  switch (cause) {
    case Ending::Cause::kExited: return "exited";
    case Ending::Cause::kKilled: return "killed";
    case Ending::Cause::kTimedOut: return "timed_out";
    case Ending::Cause::kLimit: return "limit";
    case Ending::Cause::kFailed: return "failed";
  }
  return "exited";
}

// Fields common to every event of one child.
nlohmann::json identity(const LaunchRequest& r) {
  nlohmann::json j = r.auditFields.is_object() ? r.auditFields : nlohmann::json::object();
  j["sandboxId"] = r.sandboxId;
  j[r.idField] = r.id;
  return j;
}

}  // namespace

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(signal);
}

platform::SandboxRequest Launcher::sandboxRequest(const DerivedRules& rules, Output output,
                                                  platform::OnMissingLayer onMissingLayer, bool network,
                                                  platform::WindowSize terminalSize, std::string workspace) {
  std::optional<std::uint16_t> proxyPort;
  if (network) proxyPort = kSandboxProxyPort;
  platform::Stdio stdio = platform::Stdio::kPipe;
  if (output == Output::kInherit) stdio = platform::Stdio::kInherit;
  if (output == Output::kPty) stdio = platform::Stdio::kTerminal;
  return platform::SandboxRequest{.rules = rules,
                                  .proxyPort = proxyPort,
                                  .newSession = true,
                                  .stdio = stdio,
                                  .onMissingLayer = onMissingLayer,
                                  .terminalSize = terminalSize,
                                  .workspace = std::move(workspace)};
}

std::variant<Launched, platform::SpawnError> Launcher::launch(LaunchRequest r, Watch watch) {
  const bool network = static_cast<bool>(r.network);
  auto spawned = [&] {
    if (r.spare) return platform::launch(std::move(*r.spare), r.program);
    // The spawner thread: a child's parent-death signal is tied to the thread that created it.
    return spawner_.call([&] {
      return platform::spawn(sandboxRequest(r.rules, r.output, r.onMissingLayer, network, r.terminalSize, r.workspace),
                             r.program);
    });
  }();
  if (auto* err = std::get_if<platform::SpawnError>(&spawned)) {
    nlohmann::json event = identity(r);
    event["fingerprint"] = r.fingerprint;
    event["step"] = platform::setupStepName(err->step);
    event["message"] = err->message();
    audit_.write("spawn_failed", std::move(event));
    return std::move(*err);
  }
  platform::Child child = std::get<platform::Child>(std::move(spawned));
  Launched out;
  out.pid = child.pid;
  out.enforcement = child.enforcement;

  // Until the supervisor owns the child, a failure kills and reaps it: a
  // child never runs without someone answering its listener.
  auto listeners = std::make_shared<std::vector<proxy::ListenerHandle>>();
  try {
    if (network)
      *listeners = egress_.attach(std::move(child.proxyListeners),
                                  proxy::ListenerContext{r.sandboxId, r.id, r.network, r.resolve});
  } catch (...) {
    (void)platform::signalChild(child.pidfd, SIGKILL);
    (void)platform::waitExit(child);
    throw;
  }
  switch (r.output) {
    case Output::kCaller:
      out.stdinPipe = std::move(child.stdinPipe);
      out.stdoutPipe = std::move(child.stdoutPipe);
      out.stderrPipe = std::move(child.stderrPipe);
      break;
    case Output::kSupervisor:
      watch.outputs.emplace_back(Channel::kStdout, std::move(child.stdoutPipe));
      watch.outputs.emplace_back(Channel::kStderr, std::move(child.stderrPipe));
      if (r.stdin == StdinMode::kOpen) watch.stdinFd = std::move(child.stdinPipe);
      child.stdinPipe.reset();  // closed: the program reads EOF
      break;
    case Output::kPty:
      // Three descriptors of the master: drained (EIO once every slave is
      // closed), written, and resized.
      watch.stdinFd.reset(::fcntl(child.terminal.get(), F_DUPFD_CLOEXEC, 0));
      out.terminal.reset(::fcntl(child.terminal.get(), F_DUPFD_CLOEXEC, 0));
      watch.outputs.emplace_back(Channel::kPty, std::move(child.terminal));
      break;
    case Output::kInherit:
      break;
  }

  if (audit_.wanted()) {
    nlohmann::json spawn = identity(r);
    spawn["pid"] = child.pid;
    spawn["fingerprint"] = r.fingerprint;
    spawn["argv"] = r.program.argv;
    spawn["cwd"] = r.program.cwd;
    spawn["enforcement"] = enforcementJson(child.enforcement);
    // "pids", "memory", "cpu": null when not asked for or not enforced (then a degradation says why)
    spawn["enforcement"].update(limitEnforcementJson(child.enforcement));
    audit_.write("spawn", std::move(spawn));
    for (const auto& d : child.enforcement.degradations) {
      nlohmann::json degraded = identity(r);
      degraded["what"] = d;
      audit_.write("degraded", std::move(degraded));
    }
  }

  watch.onDenial = [&audit = audit_, ids = identity(r), next = std::move(watch.onDenial)](const platform::SeccompDenial& d) {
    nlohmann::json event = ids;
    event["pid"] = d.pid;
    event["syscall"] = d.syscall;
    if (!d.rule.empty()) {
      // A write the broker refused: what it was, the path as the child gave
      // it, the name the rule decided on, and the rule.
      event["layer"] = "broker";
      event["operation"] = d.operation;
      event["path"] = d.path;
      if (!d.path2.empty()) event["path2"] = d.path2;
      event["resolvedPath"] = d.resolvedPath;
      event["rule"] = d.rule;
      event["reason"] = d.reason;
      event["error"] = strerrorname_np(d.error);
      audit.decision("denial", std::move(event), {"layer", "operation", "resolvedPath", "rule", "error"});
      if (next) next(d);
      return;
    }
    event["layer"] = "seccomp";
    event["args"] = d.args;
    nlohmann::json decoded = nlohmann::json::object();  // what the raw args mean, beside them
    for (auto& [name, text] : platform::decodeArguments(d.syscall, d.args)) decoded[name] = std::move(text);
    if (!decoded.empty()) event["decoded"] = std::move(decoded);
    event["error"] = strerrorname_np(d.error);
    // Two denials are the same decision when the table would decide them
    // alike: the syscall and what its inspected arguments mean ("decoded":
    // the family and type of a socket, an ioctl's request, open flags and
    // modes, clone flags). Not the raw arguments: registers a call does not
    // use hold whatever the process left there (stack addresses differ in
    // every process), so keying on them let a loop of short-lived processes
    // write one event per denial.
    audit.decision("denial", std::move(event), {"layer", "syscall", "decoded", "error"});
    if (next) next(d);
  };
  watch.onEnd = [&audit = audit_, ids = identity(r), listeners, next = std::move(watch.onEnd)](const Ending& e) {
    listeners->clear();  // closes the child's listeners and tunnels (waits for the proxy's io thread)
    if (!audit.wanted()) {
      if (next) next(e);
      return;
    }
    nlohmann::json event = ids;
    event["exitCode"] = e.status.shellCode();
    if (e.status.kind == platform::ExitStatus::Kind::kSignaled) event["signal"] = signalName(e.status.value);
    // A limit the sandbox reached is the reason, whether it was killed for
    // it (memory, CPU) or a fork failed at it (pids).
    event["reason"] = e.status.limit ? e.status.limit : causeName(e.cause);
    addExitUsage(event, e.status);
    if (!e.limit.empty() && !e.status.limit) event["limit"] = e.limit;
    if (!e.error.empty()) event["error"] = e.error;
    event["denials"] = e.denials;
    event["cpuTimeUs"] = e.status.usage.cpuTime.count();
    event["peakRssBytes"] = e.status.usage.peakRssBytes;
    audit.write("exit", std::move(event));
    if (next) next(e);
  };
  out.supervised = supervisor_.supervise(std::move(child), std::move(watch));
  return out;
}

}  // namespace stockade::process
