// spawn(): runs one program under DerivedRules with every enforcement layer
// this kernel offers, and says which ones are active.
//
// The child is created by clone3(CLONE_PIDFD | CLONE_NEWUSER | NEWNS | NEWPID
// | NEWNET | NEWIPC | NEWUTS [| NEWCGROUP]) and becomes pid 1 of its pid
// namespace: when it exits, or is killed, the kernel kills every process it
// left behind. Child-side setup is a flat list of steps (spawn.cc); the first
// failing step is reported with the syscall, its arguments and errno.
//
// Thread-safety: spawn() may be called from several threads at once. The
// child's parent-death signal is tied to the *thread* that called spawn():
// call it from a thread that outlives the child (e.g. the main thread or a
// dedicated supervisor thread).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "platform/linux/cgroup.h"
#include "platform/linux/child_error.h"
#include "platform/linux/mounts.h"
#include "platform/linux/process.h"
#include "platform/linux/pty.h"
#include "platform/linux/sandbox_plan.h"
#include "platform/linux/seccomp_notify.h"
#include "platform/linux/write_broker.h"
#include "platform/unique_fd.h"
#include "stockade/rules.h"

namespace stockade::platform {

// How the child's stdin/stdout/stderr are connected.
enum class Stdio {
  kInherit,   // the caller's own fds 0-2 (the CLI with -T)
  kPipe,      // new pipes; Child holds the parent's ends (the manager)
  // A fresh PTY made inside the sandbox, in its own devpts instance (so that
  // /dev/pts/N names it there): the slave is 0-2 and the controlling
  // terminal of the new session; Child::terminal holds the master.
  kTerminal,
};

// What to do when the kernel lacks an enforcement layer the rules call for
// (Landlock or one of its ABI features, a namespace, a limit).
enum class OnMissingLayer {
  kRefuse,         // fail the spawn, naming the missing layer (default)
  kRunAndReport,   // run, listing every missing layer in Child::enforcement
};

// The sandbox, without its program: everything prepare() needs.
struct SandboxRequest {
  const DerivedRules& rules;
  std::optional<std::uint16_t> proxyPort;  // see Child::proxyListeners
  bool newSession = true;          // setsid() in the child
  Stdio stdio = Stdio::kInherit;
  OnMissingLayer onMissingLayer = OnMissingLayer::kRefuse;
  WindowSize terminalSize;  // Stdio::kTerminal: the PTY's initial size
  // The workspace's real host path, shown at /workspace inside as well
  // (mounts.h: WorkspaceMount); empty: none. A cwd beneath /workspace is the
  // workspace's.
  std::string workspace;
};

// The program, given to launch().
struct ProgramRequest {
  std::vector<std::string> argv;   // argv[0] without '/' is searched in the env's PATH, inside the sandbox
  std::string cwd;                 // absolute, in the sandbox's view; must be visible there
  std::vector<std::string> env;    // "K=V", final: passed to execve as is
};

struct SpawnRequest {
  const DerivedRules& rules;
  std::vector<std::string> argv;   // as ProgramRequest
  std::string cwd;
  std::vector<std::string> env;
  std::optional<std::uint16_t> proxyPort;  // see Child::proxyListeners
  bool newSession = true;          // setsid() in the child
  Stdio stdio = Stdio::kInherit;
  OnMissingLayer onMissingLayer = OnMissingLayer::kRefuse;
  std::string workspace;           // as SandboxRequest

  SandboxRequest sandbox() const { return {rules, proxyPort, newSession, stdio, onMissingLayer, {}, workspace}; }
  ProgramRequest program() const { return {argv, cwd, env}; }
};


// What the request would get on this kernel, without spawning. Entries the
// plan would not enforce (the spawn would be refused) are listed among the
// degradations, starting "not enforced, the spawn would be refused".
EnforcementReport probeEnforcement(const SpawnRequest& request);

struct Child {
  pid_t pid = -1;                 // in the caller's pid namespace
  UniqueFd pidfd;                 // of the sandbox init: signalChild() it; wait with waitExit(const Child&)
  UniqueFd stdinPipe;             // Stdio::kPipe only: write end of the child's stdin
  UniqueFd stdoutPipe;            // Stdio::kPipe only: read end
  UniqueFd stderrPipe;            // Stdio::kPipe only: read end
  UniqueFd terminal;              // Stdio::kTerminal only: the PTY's master
  // proxyPort set: listening sockets on 127.0.0.1:<port> and [::1]:<port>
  // inside the child's network namespace (IPv4 first); accept() on them from
  // the supervisor. Landlock lets the child connect() over TCP to that port
  // only (any port of its own loopback with network.allowLocalBinding).
  // Without proxyPort the child has loopback only.
  std::vector<UniqueFd> proxyListeners;
  EnforcementReport enforcement;
  // The seccomp filter's listener: denied and brokered calls wait here for
  // an answer. waitExit()/waitExitFor() below answer them and pass each
  // refusal to onDenial; a caller polling the pidfd itself must answer them
  // too (answerNotification(), seccomp_notify.h).
  UniqueFd seccompListener;
  std::function<void(const SeccompDenial&)> onDenial;
  // Performs or refuses the sandbox's writes (write_broker.h); its answers
  // go through the listener above.
  std::shared_ptr<WriteBroker> broker;
  // The CPU time (ns) the supervisor has spent answering the sandbox's
  // trapped calls -- receiving, deciding, performing, answering and auditing
  // them -- which whoever answers adds here (threadCpuNs() around it). The
  // sandbox's cgroup does not see it (a flood of denied calls once made the
  // supervisor spend 4.6 times the sandbox's own CPU, unlimited), so it
  // counts with the cgroup's CPU time against limits.cpuSeconds and in the
  // reported CPU time (overLimit(), reap()).
  std::shared_ptr<std::atomic<std::uint64_t>> answeringNs = std::make_shared<std::atomic<std::uint64_t>>(0);
  // Read end of the pipe on which the sandbox's init (pid 1) reports how the
  // program (pid 2) ended. Use waitExit(const Child&) below.
  UniqueFd programStatus;
  // limits.cpuSeconds as the program's RLIMIT_CPU (no cgroup accounts the
  // sandbox's CPU), else 0: its SIGKILL at that much CPU is the limit's.
  std::uint64_t cpuRlimitSeconds = 0;
  // limits.fileSizeBytes (RLIMIT_FSIZE), else 0: a program ended by the
  // SIGXFSZ the kernel sends at a write past it was ended by the limit.
  std::uint64_t fileSizeLimitBytes = 0;
  // limits.pids, memoryBytes, cpuSeconds: the sandbox's cgroup; waitExit()
  // removes it once the sandbox is gone (and so does its destructor, if
  // nobody waited).
  SandboxCgroup cgroup;
};

struct SpawnError {
  SetupStep step = SetupStep::kNone;
  std::string call;  // `mount("tmpfs", "/home/u/.ssh", "tmpfs", 0x...)`; may be empty
  int error = 0;     // errno; 0 when the failure is not a syscall's
  std::string detail;  // extra text (parent-side failures)
  // `setup step "mounts": mount("tmpfs", ...) failed: EPERM (Operation not permitted)`
  std::string message() const;
};

// Caller bugs (empty argv, relative cwd, env entries without '=') throw
// std::invalid_argument. Everything else is a SpawnError -- among them a
// plan that does not enforce every rule (SetupStep::kCoverage, naming each
// entry; coverage.h) and a working directory the rules hide (kWorkingDir).
// spawn() is launch(prepare()) without waiting in between.
std::variant<Child, SpawnError> spawn(const SpawnRequest& request);
std::variant<Child, SpawnError> spawn(const SandboxRequest& sandbox, const ProgramRequest& program);

// A sandbox built ahead of its program: namespaces, mounts, limits,
// capabilities, Landlock and seccomp are all in place, and the sandbox's init
// waits for launch() to send the program. Single use. Destroying one that was
// not launched kills and reaps it.
class PreparedSandbox {
 public:
  PreparedSandbox(PreparedSandbox&&) noexcept = default;
  PreparedSandbox& operator=(PreparedSandbox&&) noexcept;
  ~PreparedSandbox();

  const EnforcementReport& enforcement() const noexcept { return child_.enforcement; }
  // False when a path the mounts bind, cover or pin now names another object
  // than when the sandbox was built (a write-allowed directory deleted and
  // made again, a .git/hooks replaced, a read-denied file deleted -- which
  // takes the mask on it away -- and written anew, a new hard link to a
  // write-denied file), or a mount came or went on the host: the sandbox would
  // show the old view, so launch it only while this holds.
  bool matchesHost() const;

 private:
  PreparedSandbox() = default;
  // clone3() and the child's setup, without waiting for it. `keep`: the
  // sandbox may wait before launch(), so snapshot the host for matchesHost()
  // (spawn() launches at once and skips that work).
  static std::variant<PreparedSandbox, SpawnError> start(const SandboxRequest& request, bool keep);
  // Reads the child's first report: ready, or the step that failed.
  std::optional<SpawnError> awaitReady();
  void discard() noexcept;
  friend std::variant<PreparedSandbox, SpawnError> prepare(const SandboxRequest&);
  friend std::variant<Child, SpawnError> launch(PreparedSandbox&&, const ProgramRequest&);
  friend std::variant<Child, SpawnError> spawn(const SandboxRequest&, const ProgramRequest&);

  Child child_;
  UniqueFd command_;     // socket to the init: the program goes here
  UniqueFd errors_;      // read end of the error pipe
  UniqueFd channel_;     // the child's fds for us, until received (awaitReady())
  bool proxy_ = false;   // proxy listeners come on channel_ first
  bool terminal_ = false;  // then the PTY's master
  bool ready_ = false;   // the init reported its setup complete
  MountPlan mounts_;
  HostSnapshot host_;  // taken before clone when kept; matchesHost() is false without one
};

// Builds a sandbox and waits until its setup is complete. Thread: as spawn()
// (the parent-death signal is tied to the calling thread).
std::variant<PreparedSandbox, SpawnError> prepare(const SandboxRequest& request);
// Runs the program in a prepared sandbox and returns once it was exec'd. Any
// thread. Throws std::invalid_argument for caller bugs, as spawn().
std::variant<Child, SpawnError> launch(PreparedSandbox&& sandbox, const ProgramRequest& program);

// What ended waitEvent().
enum class WaitEvent {
  kExited,       // the sandbox's init exited: reap it with waitExit()
  kDeadline,     // the deadline passed
  kAlsoWatched,  // `alsoWatch` became readable
  kOverLimit,    // a whole-sandbox limit is reached (overLimit()): kill the sandbox, then reap it
};
// Waits on the sandbox, answering its seccomp notifications meanwhile
// (denials, fallocate() checks and brokered writes; each refusal passed to
// child.onDenial), until its init exits, `deadline` passes,
// `alsoWatch` (if >= 0) is readable, or the sandbox goes over a limit. Errors
// name the call; the sandbox then still runs and nobody answers its denials:
// kill it.
//
// THE LIMIT HOOK. The kernel enforces limits.pids and a cgroup2 memory limit
// by itself; limits.cpuSeconds (no kernel CPU-time limit for a cgroup) and a
// cgroup v1 memory limit (its OOM killer kills one task, not the sandbox)
// need the supervisor: while child.cgroup.needsWatching(), waitEvent() wakes
// every kLimitCheckInterval and calls overLimit(child). An event loop that
// replaces waitEvent() keeps a timer per watched sandbox that does the same:
// on a non-null answer, SIGKILL the sandbox's init (its pid namespace dies
// with it) and reap it; the exit report then names the limit (waitExit()).
inline constexpr std::chrono::milliseconds kLimitCheckInterval{50};
std::variant<WaitEvent, std::string> waitEvent(const Child& child,
                                               std::optional<std::chrono::steady_clock::time_point> deadline,
                                               int alsoWatch = -1);
// The limit the sandbox must be killed for now ("limits.cpuSeconds",
// "limits.memoryBytes"), or nullptr; reads its cgroup's counters (cgroup.h,
// limitToKillFor()). The error names the file that could not be read.
std::variant<const char*, std::string> overLimit(const Child& child);
// Whether overLimit() must be asked every kLimitCheckInterval: a cgroup
// limit the kernel does not enforce by itself, or limits.cpuSeconds as
// RLIMIT_CPU (the supervisor's answering is bounded by overLimit()).
bool watchesLimits(const Child& child) noexcept;

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ns: taken
// around the supervisor's work for one sandbox, the difference goes to its
// Child::answeringNs.
std::uint64_t threadCpuNs() noexcept;

// Waits for the program and reaps the sandbox (and removes its cgroup): the
// program's own status (exit code, or the signal that killed it), or, when the
// sandbox was killed from outside, init's (kSignaled, SIGKILL); with a sandbox
// cgroup, the limit it reached (ExitStatus::limit) and its CPU time. A sandbox
// that goes over a limit meanwhile is killed. The errors name waitid()/poll().
std::variant<ExitStatus, std::string> waitExit(const Child& child);
// As waitExit(), giving up after `timeout` (nullopt: still running).
std::variant<std::optional<ExitStatus>, std::string> waitExitFor(const Child& child, std::chrono::milliseconds timeout);

}  // namespace stockade::platform
