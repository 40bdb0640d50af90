// spawn(): the parent prepares everything that allocates (mount plan, Landlock
// plan, compiled seccomp program, argv/envp arrays), then clone3()s.
//
// ASYNC-SIGNAL-SAFE from childMain() down: the child runs in a copy of a
// possibly multi-threaded parent, so between clone and exec it calls only
// syscalls and the async-signal-safe helpers of platform/linux/*, uses only
// memory prepared by the parent and its own stack, and never returns.
#include "platform/linux/spawn.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/landlock.h"
#include "platform/linux/mounts.h"
#include "platform/linux/namespaces.h"
#include "platform/linux/network.h"
#include "platform/linux/privileges.h"
#include "platform/linux/process.h"
#include "platform/linux/seccomp.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

constexpr int kSetupFailedExit = 125;

// Everything the child needs, prepared by the parent.
struct ChildPlan {
  int errorFd = -1;         // write end of the error pipe (CLOEXEC)
  int statusFd = -1;        // write end of the program-status pipe (kept by init)
  int channelFd = -1;       // proxy listener channel, or -1
  int stdioFds[3] = {-1, -1, -1};  // Stdio::kPipe: child ends to dup2 onto 0-2
  bool newSession = true;
  uid_t uid = 0;
  gid_t gid = 0;
  std::optional<std::uint16_t> proxyPort;
  const MountPlan* mounts = nullptr;
  const LandlockPlan* landlock = nullptr;
  const SeccompProgram* seccomp = nullptr;
  RlimitPlan limits;
  const char* cwd = nullptr;
  const char* path = nullptr;  // PATH for the program search
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

[[noreturn]] void report(const ChildPlan& plan, ChildError& error) noexcept {
  const char* p = reinterpret_cast<const char*>(&error);
  std::size_t left = sizeof(error);
  while (left > 0) {
    ssize_t n = ::write(plan.errorFd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::_exit(kSetupFailedExit);
}

[[noreturn]] void fail(const ChildPlan& plan, ChildError& error, SetupStep step) noexcept {
  error.step = static_cast<std::int32_t>(step);
  error.error = errno;
  report(plan, error);
}

// execve() of the program, searching PATH when argv[0] has no '/'.
[[noreturn]] void execProgram(const ChildPlan& plan, ChildError& error) noexcept {
  const char* file = plan.argv[0];
  if (std::strchr(file, '/') != nullptr) {
    ::execve(file, plan.argv, plan.envp);
    error.add("execve(").quoted(file).add(")");
    fail(plan, error, SetupStep::kExec);
  }
  int firstSignificant = 0;
  const char* dir = plan.path;
  char candidate[4096];
  while (true) {
    const char* end = std::strchr(dir, ':');
    std::size_t len = end ? static_cast<std::size_t>(end - dir) : std::strlen(dir);
    std::size_t fileLen = std::strlen(file);
    if (len + fileLen + 2 < sizeof(candidate)) {
      std::size_t n = 0;
      if (len == 0) {
        candidate[n++] = '.';
      } else {
        std::memcpy(candidate, dir, len);
        n = len;
      }
      candidate[n++] = '/';
      std::memcpy(candidate + n, file, fileLen + 1);
      ::execve(candidate, plan.argv, plan.envp);
      if (errno != ENOENT && errno != ENOTDIR && firstSignificant == 0) firstSignificant = errno;
    }
    if (!end) break;
    dir = end + 1;
  }
  errno = firstSignificant != 0 ? firstSignificant : ENOENT;
  error.add("execve(").quoted(file).add(" searched in PATH=").quoted(plan.path).add(")");
  fail(plan, error, SetupStep::kExec);
}

// Set by the init before forwarding starts; read by the signal handler.
volatile sig_atomic_t gProgramPid = 0;

void forwardSignal(int sig) noexcept {
  if (gProgramPid > 0) ::kill(static_cast<pid_t>(gProgramPid), sig);
}

// pid 1 of the sandbox. A pid-namespace init ignores signals it has no
// handler for, even SIGKILL sent from inside: running the program as pid 1
// would break `kill $$` and 128+N exit codes. So pid 1 stays a tiny init: it
// vforks the program (pid 2), forwards termination signals to it, reaps
// orphans, writes the program's status to the status pipe and exits with the
// shell code. Its exit makes the kernel kill whatever is left in the sandbox.
[[noreturn]] void runInit(const ChildPlan& plan, ChildError& error) noexcept {
  static const int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
  for (int sig : kForwarded) {
    struct sigaction action = {};
    action.sa_handler = forwardSignal;
    action.sa_flags = SA_RESTART;
    ::sigaction(sig, &action, nullptr);
  }
  // init is a copy of the supervisor: its memory and /proc/1/environ hold the
  // host's full environment. Non-dumpable (set before the fork; execve
  // makes the program itself dumpable again) makes them unreadable to the
  // program (same uid, but ptrace_may_access() then needs CAP_SYS_PTRACE).
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    error.add("prctl(PR_SET_DUMPABLE, 0)");
    fail(plan, error, SetupStep::kExec);
  }
  // vfork(), not fork(): init is a copy of the supervisor, and fork() copied
  // its page tables (and took copy-on-write faults) only for the program to
  // exec at once -- about 0.2 ms here. The child shares init's memory until
  // execve() (init is suspended meanwhile), has its own fd table and signal
  // mask, and calls only sigprocmask(), close(), execve() and, on failure,
  // write() and _exit(); it never returns from this function. The forwarded
  // signals stay blocked until gProgramPid is set, so one that arrives while
  // the program starts is forwarded to it instead of being lost (and no
  // handler runs in the child on init's memory).
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &previous);
  pid_t program = ::vfork();
  if (program < 0) {
    error.add("vfork() for the program");
    fail(plan, error, SetupStep::kExec);
  }
  if (program == 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);  // the mask survives execve
    ::close(plan.statusFd);
    execProgram(plan, error);
  }
  gProgramPid = static_cast<sig_atomic_t>(program);
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  // init never execs, so CLOEXEC does not clean its table: close every fd it
  // inherited from the supervisor (other sandboxes' pipes, sockets, ...) and
  // its stdio, keeping only the status pipe. Closing the error pipe gives the
  // parent EOF once the program has exec'd.
  const unsigned keep = static_cast<unsigned>(plan.statusFd);
  if ((keep > 0 && abi::closeRange(0, keep - 1, 0) != 0) || abi::closeRange(keep + 1, ~0U, 0) != 0) {
    ::kill(static_cast<pid_t>(program), SIGKILL);
    ::_exit(kSetupFailedExit);
  }
  ::prctl(PR_SET_NAME, "stockade-init", 0, 0, 0);
  for (;;) {
    int status = 0;
    pid_t reaped = ::waitpid(-1, &status, 0);
    if (reaped < 0) {
      if (errno == EINTR) continue;
      ::_exit(kSetupFailedExit);  // ECHILD without having seen the program: cannot happen
    }
    if (reaped != static_cast<pid_t>(program)) continue;  // an orphan
    std::int32_t record[2] = {WIFSIGNALED(status) ? 1 : 0, WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)};
    ssize_t ignored = ::write(plan.statusFd, record, sizeof(record));
    (void)ignored;
    ::_exit(record[0] ? 128 + record[1] : record[1]);
  }
}

// The child's setup, top to bottom. Each step either succeeds or reports
// itself and exits.
[[noreturn]] void childMain(const ChildPlan& plan) noexcept {
  ChildError error;

  // Signals: dispositions the parent ignored would survive exec, and the
  // parent blocked everything around clone; start the program clean.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction action = {};
    action.sa_handler = SIG_DFL;
    ::sigaction(sig, &action, nullptr);  // EINVAL for the libc-reserved ones: fine
  }
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
    error.add("sigprocmask(SIG_SETMASK, {})");
    fail(plan, error, SetupStep::kSignals);
  }

  for (int i = 0; i < 3; ++i) {
    if (plan.stdioFds[i] < 0) continue;
    if (::dup2(plan.stdioFds[i], i) < 0) {
      error.add("dup2(").number(plan.stdioFds[i]).add(", ").number(i).add(")");
      fail(plan, error, SetupStep::kStdio);
    }
  }
  // Every inherited fd above 2 is closed at exec; the error pipe with it.
  if (abi::closeRange(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    error.add("close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)");
    fail(plan, error, SetupStep::kCloseFds);
  }
  if (plan.newSession && ::setsid() < 0) {
    error.add("setsid()");
    fail(plan, error, SetupStep::kSession);
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    error.add("prctl(PR_SET_PDEATHSIG, SIGKILL)");
    fail(plan, error, SetupStep::kParentDeath);
  }
  {
    // The parent may have died before PR_SET_PDEATHSIG took effect: then the
    // read end of the error pipe is closed and the write end polls POLLERR.
    pollfd p = {plan.errorFd, POLLOUT, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) ::_exit(kSetupFailedExit);
  }
  if (!writeIdMaps(plan.uid, plan.gid, error)) report(plan, error);
  if (!setSandboxHostname(error)) report(plan, error);
  if (!bringUpLoopback(error)) report(plan, error);
  if (plan.proxyPort) {
    if (!sendProxyListeners(plan.channelFd, *plan.proxyPort, error)) report(plan, error);
    ::close(plan.channelFd);
  }
  if (!applyMounts(*plan.mounts, error)) report(plan, error);
  if (::chdir(plan.cwd) != 0) {
    error.add("chdir(").quoted(plan.cwd).add(")");
    fail(plan, error, SetupStep::kWorkingDir);
  }
  if (!applyRlimits(plan.limits, error)) report(plan, error);
  if (!dropCapabilities(error)) report(plan, error);
  if (!setNoNewPrivs(error)) report(plan, error);
  if (!applyLandlock(*plan.landlock, error)) report(plan, error);
  if (plan.seccomp && !installSeccomp(*plan.seccomp, error)) report(plan, error);
  runInit(plan, error);
}

std::vector<std::string> landlockWritable(const DerivedRules& rules) {
  std::vector<std::string> out;
  for (const auto* list : {&rules.filesystem().allowWrite, &rules.filesystem().defaultWrite})
    for (const auto& p : *list)
      if (p != "/dev/stdout" && p != "/dev/stderr" && p != "/dev/stdin") out.push_back(p);
  // Built by the mount layer, private to the sandbox.
  for (const char* p : {"/tmp", "/dev/shm", "/dev/pts"}) out.emplace_back(p);
  return out;
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

SpawnError parentError(SetupStep step, std::string call, int err, std::string detail = {}) {
  return SpawnError{step, std::move(call), err, std::move(detail)};
}

void validate(const SpawnRequest& request) {
  if (request.argv.empty() || request.argv[0].empty())
    throw std::invalid_argument("spawn: argv must name a program");
  if (!request.cwd.starts_with("/")) throw std::invalid_argument("spawn: cwd must be absolute, got \"" + request.cwd + "\"");
  for (const auto& e : request.env)
    if (e.find('=') == std::string::npos || e.starts_with("="))
      throw std::invalid_argument("spawn: env entry \"" + e + "\" is not NAME=VALUE");
  for (const auto& a : request.argv)
    if (a.find('\0') != std::string::npos) throw std::invalid_argument("spawn: argv entry contains NUL");
}

// Blocks every signal for the lifetime of the object (around clone3, so no
// parent handler can run in the child before it resets them).
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~SignalBlock() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace

std::string SpawnError::message() const {
  std::string out = std::string("setup step \"") + setupStepName(step) + "\": ";
  if (!call.empty()) {
    out += call + " failed";
    if (error != 0) {
      const char* name = strerrorname_np(error);
      out += std::string(": ") + (name ? name : std::to_string(error)) + " (" + std::strerror(error) + ")";
    }
  }
  if (!detail.empty()) out += (call.empty() ? "" : "; ") + detail;
  return out;
}

namespace {

// probeEnforcement() with the mount plan already made (spawn() needs the
// plan itself; planning twice cost an lstat per write-denied path).
EnforcementReport probe(const SpawnRequest& request, const MountPlan& mounts) {
  EnforcementReport r;
  r.userNamespace = r.mountNamespace = r.pidNamespace = r.networkNamespace = r.ipcNamespace = r.utsNamespace = true;
  r.cgroupNamespace = cgroupNamespaceAvailable();
  if (!r.cgroupNamespace) r.degradations.push_back("cgroup namespace: not offered by this kernel; the child sees the host's cgroup paths");
  r.seccomp = true;
  r.noNewPrivs = true;
  r.landlockAbi = landlockAbi();
  if (r.landlockAbi == 0) {
    r.degradations.push_back("landlock: unavailable on this kernel; writes are restricted by read-only mounts only");
  } else {
    r.landlockFilesystem = true;
    r.landlockNetwork = r.landlockAbi >= 4;
    r.landlockScopes = r.landlockAbi >= 6;
    if (!r.landlockNetwork)
      r.degradations.push_back("landlock: ABI " + std::to_string(r.landlockAbi) +
                               " < 4: TCP connect is not restricted to the proxy port (the network namespace still isolates the host)");
    if (!r.landlockScopes)
      r.degradations.push_back("landlock: ABI " + std::to_string(r.landlockAbi) +
                               " < 6: abstract unix sockets and signals are not scoped (the namespaces still isolate them)");
  }
  const auto& limits = request.rules.limits();
  if (limits.pids != 0)
    r.degradations.push_back("limits.pids: not enforced (needs a delegated cgroup, which stockade does not manage yet)");
  if (!request.rules.network().allowUnixSockets.empty())
    r.degradations.push_back("network.allowUnixSockets: unix sockets are allowed as a whole; every socket file visible "
                             "in the sandbox can be connected to, not only the listed ones");
  for (const auto& p : mounts.uncoverableDenyWrite)
    r.degradations.push_back("filesystem: write-denied path \"" + p +
                             "\" does not exist; its creation cannot be prevented without a placeholder on the host");
  for (const auto& p : mounts.linkedDenyWrite)
    r.degradations.push_back("filesystem: write-denied file \"" + p +
                             "\" has other hard links; only this name is read-only, the file stays writable through "
                             "the others");
  return r;
}

}  // namespace

EnforcementReport probeEnforcement(const SpawnRequest& request) { return probe(request, planMounts(request.rules)); }

std::variant<Child, SpawnError> spawn(const SpawnRequest& request) {
  validate(request);
  Child child;
  const MountPlan mounts = planMounts(request.rules);
  child.enforcement = probe(request, mounts);
  if (!child.enforcement.degradations.empty() && request.onMissingLayer == OnMissingLayer::kRefuse)
    return parentError(SetupStep::kPrepare, "", 0,
                       "refusing to run weaker than the rules: " + child.enforcement.degradations.front());

  // --- everything that allocates happens here, before clone ---
  LandlockPlan landlock;
  landlock.abi = child.enforcement.landlockAbi;
  landlock.writable = landlockWritable(request.rules);
  landlock.connectPort = request.proxyPort;
  landlock.allowTcpBind = request.rules.network().allowLocalBinding;

  std::vector<char*> argv = cStrings(request.argv);
  std::vector<char*> envp = cStrings(request.env);
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : request.env)
    if (e.starts_with("PATH=")) path = e.substr(5);

  int errorPipe[2];
  if (::pipe2(errorPipe, O_CLOEXEC) != 0)
    return parentError(SetupStep::kPrepare, "pipe2(O_CLOEXEC)", errno);
  UniqueFd errorRead(errorPipe[0]), errorWrite(errorPipe[1]);
  int statusPipe[2];
  if (::pipe2(statusPipe, O_CLOEXEC) != 0)
    return parentError(SetupStep::kPrepare, "pipe2(O_CLOEXEC)", errno);
  child.programStatus.reset(statusPipe[0]);
  UniqueFd statusWrite(statusPipe[1]);

  UniqueFd channelParent, channelChild;
  if (request.proxyPort) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
      return parentError(SetupStep::kPrepare, "socketpair(AF_UNIX, SOCK_SEQPACKET)", errno);
    channelParent.reset(pair[0]);
    channelChild.reset(pair[1]);
  }
  UniqueFd childStdio[3];
  if (request.stdio == Stdio::kPipe) {
    for (int i = 0; i < 3; ++i) {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) return parentError(SetupStep::kPrepare, "pipe2(O_CLOEXEC)", errno);
      if (i == 0) {
        childStdio[0].reset(p[0]);
        child.stdinPipe.reset(p[1]);
      } else {
        childStdio[i].reset(p[1]);
        (i == 1 ? child.stdoutPipe : child.stderrPipe).reset(p[0]);
      }
    }
  }

  ChildPlan plan;
  plan.errorFd = errorWrite.get();
  plan.statusFd = statusWrite.get();
  plan.channelFd = channelChild.get();
  for (int i = 0; i < 3; ++i) plan.stdioFds[i] = childStdio[i].get();
  plan.newSession = request.newSession;
  plan.uid = ::geteuid();
  plan.gid = ::getegid();
  plan.proxyPort = request.proxyPort;
  plan.mounts = &mounts;
  plan.landlock = &landlock;
  plan.seccomp = &seccompProgram({!request.rules.network().allowUnixSockets.empty()});
  plan.limits = {request.rules.limits().cpuSeconds, request.rules.limits().fileSizeBytes,
                 request.rules.limits().memoryBytes};
  plan.cwd = request.cwd.c_str();
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();

  int pidfd = -1;
  abi::CloneArgs args;
  args.flags = CLONE_PIDFD | namespaceCloneFlags(child.enforcement.cgroupNamespace);
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exitSignal = SIGCHLD;
  long pid;
  {
    SignalBlock block;
    pid = abi::clone3(&args);
    if (pid == 0) childMain(plan);  // never returns
  }
  if (pid < 0) {
    return parentError(SetupStep::kClone, "clone3(CLONE_PIDFD|CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|"
                                          "CLONE_NEWIPC|CLONE_NEWUTS" +
                                              std::string(child.enforcement.cgroupNamespace ? "|CLONE_NEWCGROUP" : "") + ")",
                       errno);
  }
  child.pid = static_cast<pid_t>(pid);
  child.pidfd.reset(pidfd);
  errorWrite.reset();
  statusWrite.reset();
  channelChild.reset();
  for (auto& fd : childStdio) fd.reset();

  // EOF on the error pipe: exec succeeded. A full record: a step failed.
  ChildError failure;
  std::size_t got = 0;
  while (got < sizeof(failure)) {
    ssize_t n = ::read(errorRead.get(), reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got != 0) {
    (void)platform::waitExit(child.pidfd);
    failure.call[sizeof(failure.call) - 1] = '\0';
    if (got != sizeof(failure))
      return parentError(SetupStep::kPrepare, "", 0, "child sent a truncated error report");
    SpawnError error = parentError(static_cast<SetupStep>(failure.step), failure.call, failure.error);
    if (error.step == SetupStep::kWorkingDir && error.error == ENOENT &&
        (request.cwd == "/tmp" || request.cwd.starts_with("/tmp/")))
      error.detail = "the sandbox's /tmp is private: a host directory under /tmp is visible inside only when "
                     "it is write-allowed (filesystem.allowWrite)";
    return error;
  }
  if (request.proxyPort) {
    auto listeners = receiveProxyListeners(channelParent.get());
    if (auto* e = std::get_if<std::string>(&listeners)) {
      (void)signalChild(child.pidfd, SIGKILL);
      (void)platform::waitExit(child.pidfd);
      return parentError(SetupStep::kProxyListeners, "", 0, *e);
    }
    child.proxyListeners = std::move(std::get<std::vector<UniqueFd>>(listeners));
  }
  return child;
}

namespace {

ExitStatus programStatus(const Child& child, ExitStatus initStatus) {
  std::int32_t record[2];
  ssize_t n = ::read(child.programStatus.get(), record, sizeof(record));
  if (n != static_cast<ssize_t>(sizeof(record))) return initStatus;  // init itself was killed
  return ExitStatus{record[0] ? ExitStatus::Kind::kSignaled : ExitStatus::Kind::kExited, record[1]};
}

}  // namespace

std::variant<ExitStatus, std::string> waitExit(const Child& child) {
  auto status = platform::waitExit(child.pidfd);
  if (auto* s = std::get_if<ExitStatus>(&status)) return programStatus(child, *s);
  return status;
}

std::variant<std::optional<ExitStatus>, std::string> waitExitFor(const Child& child, std::chrono::milliseconds timeout) {
  auto status = platform::waitExitFor(child.pidfd, timeout);
  if (auto* s = std::get_if<std::optional<ExitStatus>>(&status); s && *s) return std::optional(programStatus(child, **s));
  return status;
}

}  // namespace stockade::platform
