// prepare()/launch()/spawn(): the parent prepares everything that allocates
// (mount plan, Landlock plan, compiled seccomp program), then clone3()s, and
// checks the plan's coverage while the child builds the sandbox, reports
// ready, and waits for its program on the command socket: argv, env and cwd,
// which it maps into memory of its own (sent only to a sandbox the check
// passed).
//
// ASYNC-SIGNAL-SAFE from childMain() down: the child runs in a copy of a
// possibly multi-threaded parent, so between clone and exec it calls only
// raw system calls (raw_syscall.h: no libc function, none that a sanitizer
// intercepts) and the async-signal-safe helpers of platform/linux/*, uses
// only memory prepared by the parent and its own stack, and never returns.
#include "platform/linux/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "platform/linux/cgroup.h"
#include "platform/linux/coverage.h"
#include "platform/linux/fd_channel.h"
#include "platform/linux/hidden.h"
#include "platform/linux/kernel_abi.h"
#include "platform/linux/landlock.h"
#include "platform/linux/mounts.h"
#include "platform/linux/namespaces.h"
#include "platform/linux/network.h"
#include "platform/linux/privileges.h"
#include "platform/linux/process.h"
#include "platform/linux/pty.h"
#include "platform/linux/raw_syscall.h"
#include "platform/linux/seccomp.h"
#include "platform/linux/write_broker.h"
#include "platform/mutation.h"
#include "policy/paths.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

constexpr int kSetupFailedExit = 125;

// What init writes on the status pipe when its program ends (one write of
// 16 bytes: atomic on a pipe).
struct ProgramRecord {
  std::int32_t signaled = 0;
  std::int32_t value = 0;      // exit code or signal number
  std::int64_t cpuMicros = 0;  // its CPU time by the count RLIMIT_CPU uses (sys::processProfTime())
};

// Everything the child needs, prepared by the parent.
struct ChildPlan {
  int errorFd = -1;         // write end of the error pipe (CLOEXEC)
  int statusFd = -1;        // write end of the program-status pipe (kept by init)
  int channelFd = -1;       // fds for the supervisor: proxy listeners, then the seccomp listener
  int commandFd = -1;       // the program arrives here (receiveProgram())
  int cgroupTasks[3] = {-1, -1, -1};  // cgroup v1 only: the sandbox cgroups' "tasks" files, to join before forking
  std::span<const int> treeFds;  // the brokered trees, bound by applyMounts() (which closes them)
  int stdioFds[3] = {-1, -1, -1};  // Stdio::kPipe: child ends to dup2 onto 0-2
  bool newSession = true;
  bool terminal = false;  // Stdio::kTerminal: make a PTY after the mounts (openSandboxPty())
  unsigned short terminalCols = 80, terminalRows = 24;
  uid_t uid = 0;
  gid_t gid = 0;
  std::optional<std::uint16_t> proxyPort;
  const MountPlan* mounts = nullptr;
  const LandlockPlan* landlock = nullptr;
  const SeccompProgram* seccomp = nullptr;
  RlimitPlan limits;
#if defined(STOCKADE_SANITIZER_REPORTS)
  // Sanitizer builds only: a duplicate of the supervisor's stderr (CLOEXEC),
  // the child's fd 2 through the whole setup and init's again once the
  // program has exec'd, so that a sanitizer report of the setup's or init's
  // reaches the supervisor (the program's stderr waits at gParkedStderr).
  int sanitizerReportFd = -1;
#endif
};

// Calls f(fd) for each of the child's own descriptors: the plan's pipes and
// sockets, its cgroup files and the brokered trees' (until the mounts are
// built). Async-signal-safe.
template <typename F>
void forEachOwnFd(const ChildPlan& plan, F&& f) noexcept {
  for (int fd : {plan.errorFd, plan.statusFd, plan.channelFd, plan.commandFd, plan.cgroupTasks[0], plan.cgroupTasks[1],
                 plan.cgroupTasks[2]})
    f(fd);
  for (int fd : plan.treeFds) f(fd);
}

#if defined(STOCKADE_SANITIZER_REPORTS)
// Sanitizer builds only: where the program's stderr waits during the setup
// (CLOEXEC), made its fd 2 just before execve() (execveProgram()); -1 when
// not parked (fd 2 is then the program's stderr all along, as in a release
// build). The child's own variable: it is a copy of the supervisor's memory.
int gParkedStderr = -1;

// Puts the program's stderr (fd 2) aside and the supervisor's in its place,
// unless one of the child's own descriptors is fd 2. Async-signal-safe.
void parkProgramStderr(const ChildPlan& plan) noexcept {
  if (plan.sanitizerReportFd < 0) return;
  bool ownIsStderr = false;
  forEachOwnFd(plan, [&](int fd) { ownIsStderr = ownIsStderr || fd == STDERR_FILENO; });
  if (ownIsStderr) return;
  const int parked = sys::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (parked < 0) return;
  if (sys::dup2(plan.sanitizerReportFd, STDERR_FILENO) < 0) {
    sys::close(parked);
    return;
  }
  gParkedStderr = parked;
}
#endif

// execve() with the program's stderr at fd 2: in a sanitizer build it waits
// at gParkedStderr, and the supervisor's comes back if execve() fails.
void execveProgram(const ChildPlan& plan, const char* file, char* const* argv, char* const* envp) noexcept {
#if defined(STOCKADE_SANITIZER_REPORTS)
  if (gParkedStderr >= 0) sys::dup2(gParkedStderr, STDERR_FILENO);
  sys::execve(file, argv, envp);
  const int err = errno;
  if (gParkedStderr >= 0) sys::dup2(plan.sanitizerReportFd, STDERR_FILENO);
  errno = err;
#else
  (void)plan;
  sys::execve(file, argv, envp);
#endif
}

// The program as the child received it, in memory it mapped itself.
struct ProgramView {
  const char* cwd = nullptr;
  const char* path = nullptr;  // PATH for the program search
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// The command socket's message: this header, then `bytes` bytes holding
// cwd, PATH, argv[0..argc) and env[0..envc), each NUL-terminated.
struct ProgramHeader {
  std::uint32_t bytes = 0;
  std::uint32_t argc = 0;
  std::uint32_t envc = 0;
};
// execve() itself refuses more than this (MAX_ARG_STRLEN * 32 is far above).
constexpr std::uint32_t kMaxProgramBytes = 16u << 20;

void writeRecord(const ChildPlan& plan, const ChildError& record) noexcept {
  const char* p = reinterpret_cast<const char*>(&record);
  std::size_t left = sizeof(record);
  while (left > 0) {
    ssize_t n = sys::write(plan.errorFd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void report(const ChildPlan& plan, ChildError& error) noexcept {
  writeRecord(plan, error);
  sys::exitGroup(kSetupFailedExit);
}

// Reads exactly `size` bytes; false on EOF or error (errno 0 on EOF).
bool readFully(int fd, void* into, std::size_t size) noexcept {
  char* p = static_cast<char*>(into);
  while (size > 0) {
    ssize_t n = sys::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Receives the program from the supervisor into fresh anonymous memory.
// Returns false with `error` filled on a malformed message; exits quietly
// when the supervisor closed the socket without one (the sandbox was
// discarded before use).
bool receiveProgram(const ChildPlan& plan, ProgramView& program, ChildError& error) noexcept {
  ProgramHeader header;
  if (!readFully(plan.commandFd, &header, sizeof header)) {
    if (errno == 0) sys::exitGroup(0);
    error.add("read(command socket)");
    return error.fail(SetupStep::kProgram);
  }
  if (header.bytes == 0 || header.bytes > kMaxProgramBytes || header.argc == 0 || header.argc > header.bytes ||
      header.envc > header.bytes) {
    errno = EPROTO;
    error.add("program message: bad header");
    return error.fail(SetupStep::kProgram);
  }
  const std::size_t pointers = (std::size_t{header.argc} + header.envc + 2) * sizeof(char*);
  void* memory = sys::mmap(nullptr, pointers + header.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    error.add("mmap(").number(static_cast<long long>(pointers + header.bytes)).add(") for the program");
    return error.fail(SetupStep::kProgram);
  }
  char** slots = static_cast<char**>(memory);
  char* text = static_cast<char*>(memory) + pointers;
  if (!readFully(plan.commandFd, text, header.bytes)) {
    if (errno == 0) errno = EPROTO;
    error.add("read(command socket): program message cut short");
    return error.fail(SetupStep::kProgram);
  }
  // cwd, PATH, argc + envc strings; each slot list ends with nullptr.
  const std::size_t strings = std::size_t{header.argc} + header.envc + 2;
  const char* found[2] = {nullptr, nullptr};
  std::size_t index = 0, slot = 0, at = 0;
  for (; at < header.bytes && index < strings; ++index) {
    char* start = text + at;
    const void* nul = sys::find(start, header.bytes - at, '\0');
    if (nul == nullptr) break;
    at = static_cast<std::size_t>(static_cast<const char*>(nul) - text) + 1;
    if (index < 2) {
      found[index] = start;
      continue;
    }
    slots[slot++] = start;
    if (index - 2 + 1 == header.argc) slots[slot++] = nullptr;  // end of argv
  }
  if (index != strings || at != header.bytes) {
    errno = EPROTO;
    error.add("program message: wrong number of strings");
    return error.fail(SetupStep::kProgram);
  }
  slots[slot] = nullptr;  // end of env
  program.cwd = found[0];
  program.path = found[1];
  program.argv = slots;
  program.envp = slots + header.argc + 1;
  return true;
}

[[noreturn]] void fail(const ChildPlan& plan, ChildError& error, SetupStep step) noexcept {
  error.step = static_cast<std::int32_t>(step);
  error.error = errno;
  report(plan, error);
}

// execve() of the program, searching PATH when argv[0] has no '/'.
[[noreturn]] void execProgram(const ChildPlan& plan, const ProgramView& program, ChildError& error) noexcept {
  const char* file = program.argv[0];
  if (sys::find(file, '/') != nullptr) {
    execveProgram(plan, file, program.argv, program.envp);
    error.add("execve(").quoted(file).add(")");
    fail(plan, error, SetupStep::kExec);
  }
  int firstSignificant = 0;
  const char* dir = program.path;
  char candidate[4096];
  while (true) {
    const char* end = sys::find(dir, ':');
    std::size_t len = end ? static_cast<std::size_t>(end - dir) : sys::length(dir);
    std::size_t fileLen = sys::length(file);
    if (len + fileLen + 2 < sizeof(candidate)) {
      std::size_t n = 0;
      if (len == 0) {
        candidate[n++] = '.';
      } else {
        sys::copy(candidate, dir, len);
        n = len;
      }
      candidate[n++] = '/';
      sys::copy(candidate + n, file, fileLen + 1);
      execveProgram(plan, candidate, program.argv, program.envp);
      if (errno != ENOENT && errno != ENOTDIR && firstSignificant == 0) firstSignificant = errno;
    }
    if (!end) break;
    dir = end + 1;
  }
  errno = firstSignificant != 0 ? firstSignificant : ENOENT;
  error.add("execve(").quoted(file).add(" searched in PATH=").quoted(program.path).add(")");
  fail(plan, error, SetupStep::kExec);
}

// Closes every fd above 2 except the child's own (the plan's, and the
// brokered trees' until the mounts are built). Async-signal-safe.
bool closeAllBut(const ChildPlan& plan, ChildError& error) noexcept {
  constexpr std::size_t kMaxKeep = 64;
  int keep[kMaxKeep];
  std::size_t count = 0;
  bool tooMany = false;
  auto add = [&](int fd) {
    if (count == kMaxKeep) tooMany = true;
    else keep[count++] = fd;
  };
  forEachOwnFd(plan, add);
#if defined(STOCKADE_SANITIZER_REPORTS)
  add(plan.sanitizerReportFd);
  add(gParkedStderr);
#endif
  if (tooMany) {
    errno = EMFILE;
    error.add("keeping more than ").number(kMaxKeep).add(" descriptors for the mounts");
    return error.fail(SetupStep::kCloseFds);
  }
  for (std::size_t i = 1; i < count; ++i)  // insertion sort: a handful of entries
    for (std::size_t j = i; j > 0 && keep[j - 1] > keep[j]; --j) std::swap(keep[j - 1], keep[j]);
  unsigned next = 3;
  for (std::size_t i = 0; i < count; ++i) {
    int fd = keep[i];
    if (fd < static_cast<int>(next)) continue;  // -1, 0-2, or a duplicate
    if (static_cast<unsigned>(fd) > next && abi::closeRange(next, static_cast<unsigned>(fd) - 1, 0) != 0) {
      error.add("close_range(").number(next).add(", ").number(fd - 1).add(", 0)");
      return error.fail(SetupStep::kCloseFds);
    }
    next = static_cast<unsigned>(fd) + 1;
  }
  if (abi::closeRange(next, ~0U, 0) != 0 || abi::closeRange(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    error.add("close_range(").number(next).add(", ~0U)");
    return error.fail(SetupStep::kCloseFds);
  }
  return true;
}

#if defined(STOCKADE_SANITIZER_REPORTS)
// Sanitizer builds only: closes every fd but `a` and `b` (either may be -1).
// Async-signal-safe.
bool closeAllButTwo(int a, int b) noexcept {
  if (a > b) std::swap(a, b);
  unsigned next = 0;
  for (int fd : {a, b}) {
    if (fd < static_cast<int>(next)) continue;
    if (static_cast<unsigned>(fd) > next && abi::closeRange(next, static_cast<unsigned>(fd) - 1, 0) != 0) return false;
    next = static_cast<unsigned>(fd) + 1;
  }
  return abi::closeRange(next, ~0U, 0) == 0;
}
#endif

// Stdio::kTerminal: a PTY in the sandbox's own devpts (mounted by
// applyMounts()), so that the program's `tty` names a device that exists in
// its view and no host terminal is reachable. The slave becomes 0-2 and the
// controlling terminal of the session made by setsid(); the master goes to
// the supervisor. Before Landlock: opening the multiplexer needs write access.
bool openSandboxPty(const ChildPlan& plan, ChildError& error) noexcept {
  int master = sys::open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) {
    error.add("open(\"/dev/pts/ptmx\", O_RDWR|O_NOCTTY)");
    return error.fail(SetupStep::kTerminal);
  }
  int unlock = 0;
  if (sys::ioctl(master, TIOCSPTLCK, &unlock) != 0) {
    error.add("ioctl(ptmx, TIOCSPTLCK, 0)");
    return error.fail(SetupStep::kTerminal);
  }
  winsize size = {};
  size.ws_col = plan.terminalCols;
  size.ws_row = plan.terminalRows;
  if (sys::ioctl(master, TIOCSWINSZ, &size) != 0) {
    error.add("ioctl(ptmx, TIOCSWINSZ)");
    return error.fail(SetupStep::kTerminal);
  }
  int slave = sys::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
  if (slave < 0) {
    error.add("ioctl(ptmx, TIOCGPTPEER, O_RDWR|O_NOCTTY)");
    return error.fail(SetupStep::kTerminal);
  }
  for (int i = 0; i < 3; ++i) {
    int to = i;
#if defined(STOCKADE_SANITIZER_REPORTS)
    if (i == STDERR_FILENO && gParkedStderr >= 0) to = gParkedStderr;  // (made fd 2 before execve)
#endif
    if ((to == i ? sys::dup2(slave, to) : sys::dup3(slave, to, O_CLOEXEC)) < 0) {
      error.add("dup2(pty slave, ").number(i).add(")");
      return error.fail(SetupStep::kTerminal);
    }
  }
  sys::close(slave);
  if (sys::ioctl(0, TIOCSCTTY, 0) != 0) {
    error.add("ioctl(0, TIOCSCTTY, 0)");
    return error.fail(SetupStep::kTerminal);
  }
  const int fds[] = {master};
  if (!sendFds(plan.channelFd, fds, SetupStep::kTerminal, "PTY master", error)) return false;
  sys::close(master);
  return true;
}

// Set by the init before forwarding starts; read by the signal handler.
volatile sig_atomic_t gProgramPid = 0;

// Termination signals go to every process of the sandbox (kill(-1) from a
// pid namespace's init reaches all of its processes but init): a program that
// traps TERM cannot shield its children, nor a descendant that left the
// process group with setsid(). Window changes go to the program alone.
void forwardSignal(int sig) noexcept {
  if (gProgramPid <= 0) return;
  // (Without a pid namespace, kill(-1) would reach every process of the host's user.)
  if (sig == SIGWINCH || mutation::disabled(mutation::Layer::kPidNamespace)) {
    sys::kill(static_cast<pid_t>(gProgramPid), sig);
    return;
  }
  sys::kill(-1, sig);
}

// pid 1 of the sandbox. A pid-namespace init ignores signals it has no
// handler for, even SIGKILL sent from inside: running the program as pid 1
// would break `kill $$` and 128+N exit codes. So pid 1 stays a tiny init: it
// vforks the program (pid 2), forwards termination signals to every process of the sandbox, reaps
// orphans, writes the program's status to the status pipe and exits with the
// shell code. Its exit makes the kernel kill whatever is left in the sandbox.
[[noreturn]] void runInit(const ChildPlan& plan, const ProgramView& program, ChildError& error) noexcept {
  static const int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
  for (int sig : kForwarded) sys::sigaction(sig, forwardSignal, SA_RESTART);
  // init is a copy of the supervisor: its memory and /proc/1/environ hold the
  // host's full environment. Non-dumpable (set before the fork; execve
  // makes the program itself dumpable again) makes them unreadable to the
  // program (same uid, but ptrace_may_access() then needs CAP_SYS_PTRACE).
  if (sys::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
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
  sys::SignalSet forwarded = 0, previous = 0;
  for (int sig : kForwarded) forwarded |= sys::signalBit(sig);
  sys::sigprocmask(SIG_BLOCK, &forwarded, &previous);
  const long forked = sys::vforkRaw();
  if (forked < 0) {
    errno = static_cast<int>(-forked);
    error.add("vfork() for the program");
    fail(plan, error, SetupStep::kExec);
  }
  if (forked == 0) {
    // init's handlers would run on init's memory: default them here (this
    // table is the child's own) before the forwarded signals are unblocked.
    for (int sig : kForwarded) sys::sigaction(sig, SIG_DFL, 0);
    sys::sigprocmask(SIG_SETMASK, &previous, nullptr);  // the mask survives execve
    sys::close(plan.statusFd);
    execProgram(plan, program, error);
  }
  sys::forgetVforkChildStack();
  const auto pid = static_cast<pid_t>(forked);
  gProgramPid = static_cast<sig_atomic_t>(pid);
  sys::sigprocmask(SIG_SETMASK, &previous, nullptr);
  // init never execs, so CLOEXEC does not clean its table: close its stdio
  // and the error pipe (closeAllBut() took the supervisor's other fds),
  // keeping only the status pipe. Closing the error pipe gives the parent EOF
  // once the program has exec'd.
#if defined(STOCKADE_SANITIZER_REPORTS)
  // Sanitizer builds: and the supervisor's stderr, made init's fd 2 again,
  // where the runtime writes its reports (the program has exec'd: it has
  // none of this).
  const bool reports = plan.sanitizerReportFd >= 0 && plan.statusFd != STDERR_FILENO;
  if (!closeAllButTwo(plan.statusFd, reports ? plan.sanitizerReportFd : -1) ||
      (reports && sys::dup2(plan.sanitizerReportFd, STDERR_FILENO) < 0)) {
    sys::kill(static_cast<pid_t>(pid), SIGKILL);
    sys::exitGroup(kSetupFailedExit);
  }
  if (reports) sys::close(plan.sanitizerReportFd);
#else
  const unsigned keep = static_cast<unsigned>(plan.statusFd);
  if ((keep > 0 && abi::closeRange(0, keep - 1, 0) != 0) || abi::closeRange(keep + 1, ~0U, 0) != 0) {
    sys::kill(static_cast<pid_t>(pid), SIGKILL);
    sys::exitGroup(kSetupFailedExit);
  }
#endif
  for (;;) {
    // The next child to end, left a zombie so that the program's CPU time
    // can still be read, then reaped.
    siginfo_t ended = {};
    if (sys::waitid(P_ALL, 0, &ended, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      sys::exitGroup(kSetupFailedExit);  // ECHILD without having seen the program: cannot happen
    }
    ProgramRecord record;
    timespec used = {};
    if (ended.si_pid == pid && sys::processProfTime(pid, &used) == 0)
      record.cpuMicros = used.tv_sec * 1'000'000L + used.tv_nsec / 1000;
    int status = 0;
    while (sys::waitpid(ended.si_pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (ended.si_pid != pid) continue;  // an orphan
    record.signaled = WIFSIGNALED(status) ? 1 : 0;
    record.value = record.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    ssize_t ignored = sys::write(plan.statusFd, &record, sizeof(record));
    (void)ignored;
    sys::exitGroup(record.signaled ? 128 + record.value : record.value);
  }
}

// The child's setup, top to bottom. Each step either succeeds or reports
// itself and exits.
// Not inlined into start(): the child path is then a function of its own,
// which tests/child_path_symbols.py starts from.
[[noreturn, gnu::noinline]] void childMain(const ChildPlan& plan) noexcept {
  ChildError error;
  sys::prctl(PR_SET_NAME, reinterpret_cast<unsigned long>(kSandboxInitName));  // also while it waits for its program

  // Signals: dispositions the parent ignored would survive exec, and the
  // parent blocked everything around clone; start the program clean.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sys::sigaction(sig, SIG_DFL, 0);
  }
  const sys::SignalSet none = 0;
  if (sys::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
    error.add("sigprocmask(SIG_SETMASK, {})");
    fail(plan, error, SetupStep::kSignals);
  }

  for (int i = 0; i < 3; ++i) {
    if (plan.stdioFds[i] < 0) continue;
    if (sys::dup2(plan.stdioFds[i], i) < 0) {
      error.add("dup2(").number(plan.stdioFds[i]).add(", ").number(i).add(")");
      fail(plan, error, SetupStep::kStdio);
    }
  }
  // The child is a copy of the supervisor's fd table: other children's pipe
  // ends, sockets, listeners. A sandbox can wait a long time for its program
  // (prepare()), and copies it held would keep other children's stdin from
  // reaching EOF and the supervisor's exit from being seen; so everything
  // but its own fds goes now, and its own close at exec.
#if defined(STOCKADE_SANITIZER_REPORTS)
  parkProgramStderr(plan);
#endif
  if (!mutation::disabled(mutation::Layer::kFdClosing) && !closeAllBut(plan, error)) report(plan, error);
  if (plan.newSession && sys::setsid() < 0) {
    error.add("setsid()");
    fail(plan, error, SetupStep::kSession);
  }
  if (sys::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    error.add("prctl(PR_SET_PDEATHSIG, SIGKILL)");
    fail(plan, error, SetupStep::kParentDeath);
  }
  {
    // The parent may have died before PR_SET_PDEATHSIG took effect: then the
    // read end of the error pipe is closed and the write end polls POLLERR.
    pollfd p = {plan.errorFd, POLLOUT, 0};
    if (sys::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) sys::exitGroup(kSetupFailedExit);
  }
  using mutation::disabled, mutation::Layer;  // scripts/mutate: each step without its namespace is left out with it
  if (!disabled(Layer::kUserNamespace) && !writeIdMaps(plan.uid, plan.gid, error)) report(plan, error);
  if (!disabled(Layer::kUtsNamespace) && !setSandboxHostname(error)) report(plan, error);
  if (!disabled(Layer::kNetworkNamespace) && !bringUpLoopback(error)) report(plan, error);
  if (plan.proxyPort && !sendProxyListeners(plan.channelFd, *plan.proxyPort, error)) report(plan, error);
  if (!disabled(Layer::kMountNamespace) && !applyMounts(*plan.mounts, error)) report(plan, error);
  if (plan.terminal && !openSandboxPty(plan, error)) report(plan, error);
  // The sandbox's root, for the write broker to resolve the child's paths in.
  const int root = sys::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    error.add("open(\"/\", O_PATH|O_DIRECTORY)");
    fail(plan, error, SetupStep::kMounts);
  }
  if (!disabled(Layer::kCapabilities) && !dropCapabilities(error)) report(plan, error);
  if (!disabled(Layer::kCapabilities) && !setNoNewPrivs(error)) report(plan, error);
  if (!applyLandlock(*plan.landlock, error)) report(plan, error);
  // The filter's listener goes to the supervisor, which answers the denials
  // and brokers the writes; nothing in the sandbox may keep it (it could
  // answer its own calls).
  int listener = -1;
  bool killableWait = false;
  if (!installSeccomp(*plan.seccomp, listener, killableWait, error)) report(plan, error);
  const int forSupervisor[] = {listener, root};
  if (!sendFds(plan.channelFd, forSupervisor, SetupStep::kSeccomp, "seccomp listener and root", error))
    report(plan, error);
  sys::close(listener);
  sys::close(root);
  sys::close(plan.channelFd);
  if (!joinCgroups(plan.cgroupTasks, 3, error)) report(plan, error);

  // Built: say so, then wait for the program. Everything from here on runs
  // under every layer above.
  writeRecord(plan, ChildError{});
  ProgramView program;
  if (!receiveProgram(plan, program, error)) report(plan, error);
  sys::close(plan.commandFd);
  if (sys::chdir(program.cwd) != 0) {
    error.add("chdir(").quoted(program.cwd).add(")");
    fail(plan, error, SetupStep::kWorkingDir);
  }
  // Last, because init is a copy of the whole supervisor: with RLIMIT_AS below
  // the supervisor's size, even receiving the program would fail. Only the
  // program is what the limits are for, and it inherits them.
  if (!applyRlimits(plan.limits, error)) report(plan, error);
  runInit(plan, program, error);
}

SpawnError parentError(SetupStep step, std::string call, int err, std::string detail = {}) {
  return SpawnError{step, std::move(call), err, std::move(detail)};
}

void validate(const ProgramRequest& program) {
  if (program.argv.empty() || program.argv[0].empty())
    throw std::invalid_argument("spawn: argv must name a program");
  if (!program.cwd.starts_with("/")) throw std::invalid_argument("spawn: cwd must be absolute, got \"" + program.cwd + "\"");
  for (const auto& e : program.env)
    if (e.find('=') == std::string::npos || e.starts_with("="))
      throw std::invalid_argument("spawn: env entry \"" + e + "\" is not NAME=VALUE");
  for (const auto& a : program.argv)
    if (a.find('\0') != std::string::npos) throw std::invalid_argument("spawn: argv entry contains NUL");
  if (program.cwd.find('\0') != std::string::npos) throw std::invalid_argument("spawn: cwd contains NUL");
}

// The command socket's message for `program` (ProgramHeader, then strings).
std::string encodeProgram(const ProgramRequest& program) {
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : program.env)
    if (e.starts_with("PATH=")) path = e.substr(5);
  std::string text;
  text.append(program.cwd).push_back('\0');
  text.append(path).push_back('\0');
  for (const auto* list : {&program.argv, &program.env})
    for (const auto& item : *list) text.append(item).push_back('\0');
  if (text.size() > kMaxProgramBytes)
    throw std::invalid_argument("spawn: argv, env and cwd take " + std::to_string(text.size()) + " bytes; at most " +
                                std::to_string(kMaxProgramBytes) + " can be passed to a program");
  ProgramHeader header{static_cast<std::uint32_t>(text.size()), static_cast<std::uint32_t>(program.argv.size()),
                       static_cast<std::uint32_t>(program.env.size())};
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) + text;
}

// Sends all of `bytes`; the errno of the failure otherwise (EPIPE: the
// sandbox's init is gone, its error record says why).
int sendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

// Reads one record from the error pipe; the number of bytes got (0: EOF).
std::size_t readRecord(int fd, ChildError& record) {
  std::size_t got = 0;
  while (got < sizeof(record)) {
    ssize_t n = ::read(fd, reinterpret_cast<char*>(&record) + got, sizeof(record) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// The failure a record (of `got` bytes) reports; with the program (after
// launch), also what the rules hide that the failed step needed.
SpawnError childFailure(ChildError& record, std::size_t got, const MountPlan& mounts, const ProgramRequest* program) {
  if (got == 0) return parentError(SetupStep::kPrepare, "", 0, "the sandbox's init ended without a report");
  if (got != sizeof(record)) return parentError(SetupStep::kPrepare, "", 0, "child sent a truncated error report");
  record.call[sizeof(record.call) - 1] = '\0';
  SpawnError error = parentError(static_cast<SetupStep>(record.step), record.call, record.error);
  if (program) error.detail = hiddenDetail(error.step, error.error, mounts, *program);
  return error;
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
  // The one errno whose fix is the supervisor's, not the policy's.
  rlimit files{};
  if (error == EMFILE && ::getrlimit(RLIMIT_NOFILE, &files) == 0)
    out += "; the supervisor is at its descriptor limit (RLIMIT_NOFILE " + std::to_string(files.rlim_cur) +
           "): end sandboxes or raise the limit";
  return out;
}

EnforcementReport probeEnforcement(const SpawnRequest& request) {
  SandboxPlan plan = planSandbox(request.rules, request.proxyPort, WorkspaceMount{request.workspace});
  for (const auto& g : plan.uncovered) plan.report.degradations.push_back("not enforced, the spawn would be refused: " + g.text());
  return plan.report;
}

PreparedSandbox::~PreparedSandbox() { discard(); }

PreparedSandbox& PreparedSandbox::operator=(PreparedSandbox&& other) noexcept {
  if (this != &other) {
    discard();
    child_ = std::move(other.child_);
    command_ = std::move(other.command_);
    errors_ = std::move(other.errors_);
    channel_ = std::move(other.channel_);
    proxy_ = other.proxy_;
    ready_ = other.ready_;
    mounts_ = std::move(other.mounts_);
    host_ = std::move(other.host_);
  }
  return *this;
}

void PreparedSandbox::discard() noexcept {
  if (!child_.pidfd) return;
  (void)signalChild(child_.pidfd, SIGKILL);
  (void)platform::waitExit(child_);  // reaps it and removes its cgroup
  child_.pidfd.reset();
}

bool PreparedSandbox::matchesHost() const { return host_.unchanged(); }

std::variant<PreparedSandbox, SpawnError> PreparedSandbox::start(const SandboxRequest& request, bool keep) {
  PreparedSandbox sandbox;
  Child& child = sandbox.child_;
  // The plan stays here until the init is cloned (the init has its own copy
  // of it), and is checked while the init builds the sandbox.
  SandboxPlan plan = planUncheckedSandbox(request.rules, request.proxyPort, WorkspaceMount{request.workspace});
  // The coverage check (coverage.h), once: a refusal before the program is
  // sent, naming each entry the plan would not enforce -- or, with
  // OnMissingLayer::kRefuse, the first degradation. Asked first as well when
  // the cgroup or the clone fails: the entry it names says more than the step.
  // (Not when the broker cannot open a tree: the broker has its rules then.)
  const policy::WriteRules* brokerRules = plan.writeRules ? &*plan.writeRules : nullptr;
  bool checked = false;
  auto refusal = [&]() -> std::optional<SpawnError> {
    if (!checked) checkSandboxPlan(request.rules, request.proxyPort, brokerRules, plan);
    checked = true;
    if (!plan.uncovered.empty()) {
      std::string gaps;
      for (const auto& g : plan.uncovered) gaps += (gaps.empty() ? "" : "; ") + g.text();
      return parentError(SetupStep::kCoverage, "", 0, "refusing to run: the sandbox would not enforce " + gaps);
    }
    if (!plan.report.degradations.empty() && request.onMissingLayer == OnMissingLayer::kRefuse)
      return parentError(SetupStep::kPrepare, "", 0,
                         "refusing to run weaker than the rules: " + plan.report.degradations.front());
    return std::nullopt;
  };
  auto failed = [&](SpawnError error) -> SpawnError { return refusal().value_or(std::move(error)); };

  // --- everything that allocates happens here, before clone ---
  std::vector<UniqueFd> cgroupTasks;  // cgroup v1: joined by the child itself
  if (plan.cgroupLimits.any()) {
    auto prepared = prepareSandboxCgroup(*plan.cgroups, plan.cgroupLimits);
    if (auto* e = std::get_if<std::string>(&prepared)) return failed(parentError(SetupStep::kCgroup, "", 0, *e));
    auto& [cgroup, tasks] = std::get<PreparedCgroup>(prepared);
    plan.report.pidsCgroup = cgroup.pathOf(CgroupController::kPids);
    plan.report.memoryCgroup = cgroup.pathOf(CgroupController::kMemory);
    plan.report.cpuCgroup = cgroup.pathOf(CgroupController::kCpu);
    child.cgroup = std::move(cgroup);
    cgroupTasks = std::move(tasks);
  }
  const LandlockPlan& landlock = plan.landlock;
  // The broker the coverage check counts on: its rules, the trees the mount
  // plan brokers, and their descriptors. (Without one the check refuses
  // every brokered entry: this one serves no tree, and answers the filter's
  // other notifications.)
  auto broker = WriteBroker::open(
      request.rules, plan.writeRules ? std::move(*plan.writeRules) : policy::WriteRules(request.rules, {}, {}),
      plan.seccomp, plan.mounts.workspace);
  if (auto* e = std::get_if<std::string>(&broker)) return parentError(SetupStep::kPrepare, "", 0, *e);
  child.broker = std::move(std::get<std::shared_ptr<WriteBroker>>(broker));
  if (brokerRules) brokerRules = &child.broker->writeRules();
  plan.mounts.writableFds = child.broker->treeFds();

  int errorPipe[2];
  if (::pipe2(errorPipe, O_CLOEXEC) != 0)
    return parentError(SetupStep::kPrepare, "pipe2(O_CLOEXEC)", errno);
  sandbox.errors_.reset(errorPipe[0]);
  UniqueFd errorWrite(errorPipe[1]);
  int statusPipe[2];
  if (::pipe2(statusPipe, O_CLOEXEC) != 0)
    return parentError(SetupStep::kPrepare, "pipe2(O_CLOEXEC)", errno);
  child.programStatus.reset(statusPipe[0]);
  UniqueFd statusWrite(statusPipe[1]);
  int command[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, command) != 0)
    return parentError(SetupStep::kPrepare, "socketpair(AF_UNIX, SOCK_STREAM)", errno);
  sandbox.command_.reset(command[0]);
  UniqueFd commandChild(command[1]);

  // The child's fds for the supervisor: proxy listeners, then the seccomp listener.
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return parentError(SetupStep::kPrepare, "socketpair(AF_UNIX, SOCK_SEQPACKET)", errno);
  sandbox.channel_.reset(pair[0]);
  UniqueFd channelChild(pair[1]);
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
  } else if (request.stdio == Stdio::kInherit) {
    // A terminal among the caller's fds 0-2 is given as a description of the
    // child's own (pty.h: ownDescription), so the flags it sets there stay
    // its own; one that cannot be reopened is shared, and the CLI restores
    // its flags at the end (SavedTerminal).
    for (int i = 0; i < 3; ++i) childStdio[i] = ownDescription(i);
  }

  ChildPlan childPlan;
  childPlan.errorFd = errorWrite.get();
  childPlan.statusFd = statusWrite.get();
  childPlan.channelFd = channelChild.get();
  childPlan.commandFd = commandChild.get();
  for (std::size_t i = 0; i < cgroupTasks.size() && i < 3; ++i) childPlan.cgroupTasks[i] = cgroupTasks[i].get();
  childPlan.treeFds = plan.mounts.writableFds;
  for (int i = 0; i < 3; ++i) childPlan.stdioFds[i] = childStdio[i].get();
  childPlan.newSession = request.newSession;
  childPlan.terminal = request.stdio == Stdio::kTerminal;
  childPlan.terminalCols = request.terminalSize.cols;
  childPlan.terminalRows = request.terminalSize.rows;
  childPlan.uid = ::geteuid();
  childPlan.gid = ::getegid();
  childPlan.proxyPort = request.proxyPort;
  childPlan.mounts = &plan.mounts;
  childPlan.landlock = &landlock;
  childPlan.seccomp = &seccompProgram(plan.seccomp);
  childPlan.limits = plan.limits;
  child.cpuRlimitSeconds = plan.limits.cpuSeconds;
  child.fileSizeLimitBytes = plan.limits.fileSizeBytes;
#if defined(STOCKADE_SANITIZER_REPORTS)
  // Closed here once the child has its copy (end of scope).
  UniqueFd sanitizerReports(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
  childPlan.sanitizerReportFd = sanitizerReports.get();
#endif
  if (keep) sandbox.host_ = HostSnapshot::take(plan.mounts);

  int pidfd = -1;
  abi::CloneArgs args;
  args.flags = CLONE_PIDFD | namespaceCloneFlags(plan.report.cgroupNamespace);
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exitSignal = SIGCHLD;
  if (child.cgroup.cgroup2DirFd() >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(child.cgroup.cgroup2DirFd());
  }
  long pid;
  {
    SignalBlock block;
    pid = abi::clone3(&args);
    if (pid == 0) childMain(childPlan);  // never returns
  }
  if (pid < 0) {
    const int err = errno;
    std::string into;
    for (auto c : {CgroupController::kPids, CgroupController::kMemory, CgroupController::kCpu})
      if (child.cgroup.mechanismOf(c) == LimitMechanism::kCgroup2) into = child.cgroup.pathOf(c);
    return failed(parentError(SetupStep::kClone,
                              "clone3(CLONE_PIDFD|CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|"
                              "CLONE_NEWIPC|CLONE_NEWUTS" +
                                  std::string(plan.report.cgroupNamespace ? "|CLONE_NEWCGROUP" : "") +
                                  (args.cgroup ? "|CLONE_INTO_CGROUP, \"" + into + "\")" : ")"),
                              err));
  }
  child.pid = static_cast<pid_t>(pid);
  child.pidfd.reset(pidfd);
  // The child's ends are the child's now: EOF on the pipes means its end.
  errorWrite.reset();
  statusWrite.reset();
  commandChild.reset();
  channelChild.reset();
  for (auto& fd : childStdio) fd.reset();
  // The init builds the sandbox meanwhile, then waits for its program: none
  // is sent to a sandbox the check refuses.
  if (auto refused = refusal()) {
    sandbox.discard();
    return std::move(*refused);
  }
  sandbox.mounts_ = std::move(plan.mounts);
  child.enforcement = std::move(plan.report);
  sandbox.proxy_ = request.proxyPort.has_value();
  sandbox.terminal_ = request.stdio == Stdio::kTerminal;
  return sandbox;
}

std::optional<SpawnError> PreparedSandbox::awaitReady() {
  ChildError record;
  std::size_t got = readRecord(errors_.get(), record);
  if (got != sizeof(record) || record.step != static_cast<std::int32_t>(SetupStep::kNone)) {
    discard();
    return childFailure(record, got, mounts_, nullptr);
  }
  ready_ = true;
  if (proxy_) {
    auto listeners = receiveProxyListeners(channel_.get());
    if (auto* e = std::get_if<std::string>(&listeners)) {
      discard();
      return parentError(SetupStep::kProxyListeners, "", 0, *e);
    }
    child_.proxyListeners = std::move(std::get<std::vector<UniqueFd>>(listeners));
  }
  if (terminal_) {
    auto master = receiveFds(channel_.get(), 1, "PTY master channel");
    if (auto* e = std::get_if<std::string>(&master)) {
      discard();
      return parentError(SetupStep::kTerminal, "", 0, *e);
    }
    child_.terminal = std::move(std::get<std::vector<UniqueFd>>(master).front());
  }
  auto seccomp = receiveFds(channel_.get(), 2, "seccomp listener and root channel");
  if (auto* e = std::get_if<std::string>(&seccomp)) {
    discard();
    return parentError(SetupStep::kSeccomp, "", 0, *e);
  }
  auto& fds = std::get<std::vector<UniqueFd>>(seccomp);
  child_.seccompListener = std::move(fds[0]);
  child_.broker->attachRoot(std::move(fds[1]));
  child_.enforcement.synchronousWakeUp = preferSynchronousWakeUp(child_.seccompListener.get());
  channel_.reset();
  return std::nullopt;
}

std::variant<PreparedSandbox, SpawnError> prepare(const SandboxRequest& request) {
  auto started = PreparedSandbox::start(request, /*keep=*/true);
  if (auto* sandbox = std::get_if<PreparedSandbox>(&started))
    if (auto error = sandbox->awaitReady()) return *error;
  return started;
}

std::variant<Child, SpawnError> launch(PreparedSandbox&& prepared, const ProgramRequest& program) {
  validate(program);
  const std::string message = encodeProgram(program);
  PreparedSandbox sandbox = std::move(prepared);  // used up, whatever happens
  // A working directory the rules hide would be an empty mask, or missing:
  // refused here, naming the entry, rather than run in nothing.
  if (auto mask = maskOf(sandbox.mounts_, sandbox.mounts_.workspace.hostPath(policy::lexicallyNormal(program.cwd)));
      !mask.empty()) {
    sandbox.discard();
    return parentError(SetupStep::kWorkingDir, "chdir(\"" + program.cwd + "\")", ENOENT,
                       hiddenCwdDetail(program.cwd, mask));
  }
  // Sent before the ready record is read when spawn() did not wait for it:
  // the socket holds the program until the init asks for it.
  const int sendError = sendAll(sandbox.command_.get(), message);
  sandbox.command_.reset();
  if (!sandbox.ready_)
    if (auto error = sandbox.awaitReady()) return *error;
  ChildError record;
  if (std::size_t got = readRecord(sandbox.errors_.get(), record); got != 0) {
    sandbox.discard();
    return childFailure(record, got, sandbox.mounts_, &program);
  }
  if (sendError != 0) {  // exec'd without its program cannot happen; kept as the protocol's check
    sandbox.discard();
    return parentError(SetupStep::kProgram, "send(command socket)", sendError);
  }
  // EOF on the error pipe: the program was exec'd -- unless init died first
  // (a prepared sandbox killed while it waited), which its pidfd shows.
  // A program that exec'd and ended already has its status in the pipe.
  pollfd init = {sandbox.child_.pidfd.get(), POLLIN, 0};
  int pending = 0;
  if (::poll(&init, 1, 0) == 1 && ::ioctl(sandbox.child_.programStatus.get(), FIONREAD, &pending) == 0 && pending == 0) {
    sandbox.discard();
    return parentError(SetupStep::kProgram, "", 0, "the sandbox's init ended before its program started");
  }
  sandbox.errors_.reset();
  return std::move(sandbox.child_);
}

std::variant<Child, SpawnError> spawn(const SandboxRequest& sandbox, const ProgramRequest& program) {
  validate(program);
  auto started = PreparedSandbox::start(sandbox, /*keep=*/false);
  if (auto* error = std::get_if<SpawnError>(&started)) return std::move(*error);
  return launch(std::move(std::get<PreparedSandbox>(started)), program);
}

std::variant<Child, SpawnError> spawn(const SpawnRequest& request) { return spawn(request.sandbox(), request.program()); }

namespace {

ExitStatus programStatus(const Child& child, ExitStatus initStatus) {
  ProgramRecord record;
  ssize_t n = ::read(child.programStatus.get(), &record, sizeof(record));
  if (n != static_cast<ssize_t>(sizeof(record))) return initStatus;  // init itself was killed
  ExitStatus out{record.signaled ? ExitStatus::Kind::kSignaled : ExitStatus::Kind::kExited, record.value,
                 initStatus.usage};
  // RLIMIT_CPU (limits.cpuSeconds where no cgroup accounts the sandbox's
  // CPU) ends a process with SIGKILL once its CPU time reaches the hard
  // limit: a program killed so with that much used was ended by the limit,
  // and says so. (Its rusage would not do: scaled to the scheduler's
  // runtime, it read 936 ms for a kill at 1 s under load.)
  const std::chrono::microseconds used(record.cpuMicros);
  if (child.cpuRlimitSeconds != 0 && record.signaled && record.value == SIGKILL &&
      used >= std::chrono::seconds(child.cpuRlimitSeconds)) {
    out.limit = "limits.cpuSeconds";
    out.cpuTime = used;
  }
  // RLIMIT_FSIZE: a write past it fails with EFBIG after the kernel sent the
  // writer SIGXFSZ, which ends a program that does not catch it. (A SIGXFSZ
  // the program sends itself looks the same: it can only misname its own end.)
  if (child.fileSizeLimitBytes != 0 && record.signaled && record.value == SIGXFSZ) out.limit = "limits.fileSizeBytes";
  return out;
}

// The cgroup's CPU time plus what the supervisor spent answering the
// sandbox's trapped calls (Child::answeringNs): both are the sandbox's doing.
CgroupUsage withAnswering(CgroupUsage usage, const Child& child) {
  if (usage.cpuNanoseconds && child.answeringNs) *usage.cpuNanoseconds += child.answeringNs->load();
  return usage;
}

// Under RLIMIT_CPU (no cgroup accounts the sandbox's CPU: `cpuNanoseconds`
// unknown) the kernel bounds each process, and nothing the supervisor's
// answering: that is bounded by the same limit on its own.
bool answeringOverRlimit(const std::optional<std::uint64_t>& cgroupCpu, const Child& child) {
  return !cgroupCpu && child.cpuRlimitSeconds != 0 && child.answeringNs &&
         child.answeringNs->load() / 1'000'000'000u >= child.cpuRlimitSeconds;
}

// Reaps the exited init: the program's status, with the limit the sandbox
// reached and its CPU time read from its cgroup before the cgroup is removed.
std::variant<ExitStatus, std::string> reap(const Child& child) {
  auto status = platform::waitExit(child.pidfd);
  auto* initStatus = std::get_if<ExitStatus>(&status);
  if (!initStatus) return status;
  ExitStatus out = programStatus(child, *initStatus);
  std::optional<std::uint64_t> cgroupCpu;
  if (child.cgroup.valid()) {
    // Every task is gone (init was reaped, and it outlives them all): the counters are final.
    auto counted = child.cgroup.usage();
    if (auto* usage = std::get_if<CgroupUsage>(&counted)) {
      cgroupCpu = usage->cpuNanoseconds;
      *usage = withAnswering(*usage, child);
      if (const char* reached = limitReached(*usage, child.cgroup.limits())) out.limit = reached;
      if (usage->cpuNanoseconds) out.cpuTime = std::chrono::nanoseconds(*usage->cpuNanoseconds);
    }
    (void)child.cgroup.remove();
  }
  if (!out.limit && answeringOverRlimit(cgroupCpu, child)) {
    out.limit = "limits.cpuSeconds";
    out.cpuTime = std::chrono::nanoseconds(child.answeringNs->load());
  }
  return out;
}

}  // namespace

std::variant<const char*, std::string> overLimit(const Child& child) {
  std::optional<std::uint64_t> cgroupCpu;
  if (child.cgroup.valid()) {
    auto usage = child.cgroup.usage();
    if (auto* e = std::get_if<std::string>(&usage)) return *e;
    cgroupCpu = std::get<CgroupUsage>(usage).cpuNanoseconds;
    if (const char* kill = limitToKillFor(withAnswering(std::get<CgroupUsage>(usage), child), child.cgroup.limits()))
      return kill;
  }
  return answeringOverRlimit(cgroupCpu, child) ? "limits.cpuSeconds" : nullptr;
}

bool watchesLimits(const Child& child) noexcept { return child.cgroup.needsWatching() || child.cpuRlimitSeconds != 0; }

std::uint64_t threadCpuNs() noexcept {
  timespec t{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

std::variant<WaitEvent, std::string> waitEvent(const Child& child,
                                               std::optional<std::chrono::steady_clock::time_point> deadline,
                                               int alsoWatch) {
  using Clock = std::chrono::steady_clock;
  bool listening = child.seccompListener.valid();
  const bool watchLimits = watchesLimits(child);
  auto nextCheck = Clock::now() + kLimitCheckInterval;
  for (;;) {
    int waitMs = -1;
    auto waitUntil = [&](Clock::time_point when) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now());
      int ms = static_cast<int>(std::max<long long>(0, left.count()));
      waitMs = waitMs < 0 ? ms : std::min(waitMs, ms);
    };
    if (deadline) waitUntil(*deadline);
    if (watchLimits) waitUntil(nextCheck);
    pollfd fds[3] = {{child.pidfd.get(), POLLIN, 0}, {alsoWatch, POLLIN, 0}, {child.seccompListener.get(), POLLIN, 0}};
    if (!listening) fds[2].fd = -1;  // poll() ignores negative fds
    int rc = ::poll(fds, 3, waitMs);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return std::string("poll(pidfd, seccomp listener) failed: ") + strerrorname_np(errno);
    if (fds[0].revents & POLLIN) return WaitEvent::kExited;
    // Checked on every pass: a program flooding denied calls keeps poll() from ever timing out.
    if (deadline && Clock::now() >= *deadline) return WaitEvent::kDeadline;
    if (watchLimits && Clock::now() >= nextCheck) {
      auto over = overLimit(child);
      if (auto* e = std::get_if<std::string>(&over)) return *e;
      if (std::get<const char*>(over)) return WaitEvent::kOverLimit;
      nextCheck = Clock::now() + kLimitCheckInterval;
    }
    if (fds[1].revents & POLLIN) return WaitEvent::kAlsoWatched;
    if (fds[2].revents & POLLIN) {
      const std::uint64_t before = threadCpuNs();
      auto denial = answerNotification(child.seccompListener.get(), *child.broker);
      if (auto* e = std::get_if<std::string>(&denial)) return *e;
      if (auto& d = std::get<std::optional<SeccompDenial>>(denial); d && child.onDenial) child.onDenial(*d);
      *child.answeringNs += threadCpuNs() - before;
    } else if (fds[2].revents & (POLLHUP | POLLERR)) {
      listening = false;  // no task is left under the filter
    }
  }
}

std::variant<ExitStatus, std::string> waitExit(const Child& child) {
  for (;;) {
    auto event = waitEvent(child, std::nullopt);
    if (auto* e = std::get_if<std::string>(&event)) return *e;
    if (std::get<WaitEvent>(event) == WaitEvent::kExited) return reap(child);
    // kOverLimit: the whole sandbox goes; reap() names the limit.
    if (auto e = signalChild(child.pidfd, SIGKILL)) return *e;
  }
}

std::variant<std::optional<ExitStatus>, std::string> waitExitFor(const Child& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto event = waitEvent(child, deadline);
    if (auto* e = std::get_if<std::string>(&event)) return *e;
    switch (std::get<WaitEvent>(event)) {
      case WaitEvent::kExited: {
        auto status = reap(child);
        if (auto* e = std::get_if<std::string>(&status)) return *e;
        return std::optional(std::get<ExitStatus>(status));
      }
      case WaitEvent::kOverLimit:
        if (auto e = signalChild(child.pidfd, SIGKILL)) return *e;
        continue;
      case WaitEvent::kDeadline:
      case WaitEvent::kAlsoWatched:
        return std::optional<ExitStatus>();
    }
  }
}

}  // namespace stockade::platform
