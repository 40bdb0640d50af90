// Processes, terminals and IPC; the environment.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

// A child of the case's own, paused: the allowed target of process calls.
struct OwnChild {
  pid_t pid = ::fork();
  OwnChild() {
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~OwnChild() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

Verdict tiocsti(const Context&) {
  if (auto n = neighbour(::isatty(0) || errno == ENOTTY || errno == EINVAL, "isatty(0)")) return *n;
  char c = 'x';
  return refused(::ioctl(0, TIOCSTI, &c), {EPERM}, "ioctl(TIOCSTI)");
}

Verdict tiocstiHighBits(const Context&) {
  char c = 'x';
  if (auto n = neighbour(::syscall(SYS_ioctl, 0, TCGETS, &c) == 0 || errno == ENOTTY, "ioctl(TCGETS)")) return *n;
  return refused(::syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c), {EPERM}, "ioctl(TIOCSTI | 1<<32)");
}

Verdict tioclinux(const Context&) {
  char c = 'x';
  if (auto n = neighbour(::syscall(SYS_ioctl, 0, TCGETS, &c) == 0 || errno == ENOTTY, "ioctl(TCGETS)")) return *n;
  return refused(::ioctl(0, TIOCLINUX, &c), {EPERM}, "ioctl(TIOCLINUX)");
}

// Under -T fd 0 is the operator's terminal (the runner's PTY, terminalSetup).
// Whatever the child may set there must be put back when it ends: the size
// and the attributes it sets here (both allowed: a PTY of its own needs
// them) are checked on the host afterwards (terminalCheck).
Verdict terminalStateOutlives(const Context&) {
  winsize ws{};
  if (auto n = neighbour(::ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_col == 90, "TIOCGWINSZ on the operator's terminal"))
    return *n;
  winsize small{};
  small.ws_col = 33;
  small.ws_row = 11;
  termios t{};
  if (::tcgetattr(0, &t) != 0) return unproven("tcgetattr: " + errnoName(errno));
  ::cfmakeraw(&t);
  if (::ioctl(0, TIOCSWINSZ, &small) != 0 || ::tcsetattr(0, TCSANOW, &t) != 0)
    return refused(-1, {EPERM}, "TIOCSWINSZ / tcsetattr(raw) on the operator's terminal");
  if (::ioctl(0, TIOCGWINSZ, &ws) != 0 || ws.ws_col != 33) return unproven("the size did not change");
  return held("set the operator's terminal to 33x11 and raw; the host checks both are put back");
}

// A terminal state nothing restores must be refused: TIOCNXCL clears the
// operator's exclusive mode (TIOCEXCL is refused too).
Verdict terminalExclusiveMode(const Context&) {
  int on = -1;
  if (auto n = neighbour(::ioctl(0, TIOCGEXCL, &on) == 0, "TIOCGEXCL on the operator's terminal")) return *n;
  return refused(::ioctl(0, TIOCNXCL), {EPERM}, "ioctl(TIOCNXCL) on the operator's terminal");
}

// The runner's "operator terminal": a PTY of 90x20 in its normal mode.
struct OperatorTerminal {
  int master = -1, slave = -1;
  termios before{};
} gTerminal;

void terminalSetup(HostContext& h) {
  gTerminal.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[64] = {};
  if (gTerminal.master < 0 || ::grantpt(gTerminal.master) != 0 || ::unlockpt(gTerminal.master) != 0 ||
      ::ptsname_r(gTerminal.master, name, sizeof name) != 0)
    return;  // no terminal: the case's neighbour fails and says so
  gTerminal.slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  winsize ws{};
  ws.ws_col = 90;
  ws.ws_row = 20;
  ::ioctl(gTerminal.master, TIOCSWINSZ, &ws);
  ::tcgetattr(gTerminal.slave, &gTerminal.before);
  h.stdinTerminal = name;
}

std::string terminalCheck(HostContext&) {
  winsize ws{};
  termios now{};
  std::string out;
  if (::ioctl(gTerminal.slave, TIOCGWINSZ, &ws) != 0 || ws.ws_col != 90 || ws.ws_row != 20)
    out = "the operator's terminal is " + std::to_string(ws.ws_col) + "x" + std::to_string(ws.ws_row) +
          " after the run, not 90x20";
  else if (::tcgetattr(gTerminal.slave, &now) != 0 || now.c_lflag != gTerminal.before.c_lflag ||
           now.c_iflag != gTerminal.before.c_iflag || now.c_oflag != gTerminal.before.c_oflag)
    out = "the operator's terminal attributes outlived the run";
  ::close(gTerminal.slave);
  ::close(gTerminal.master);
  gTerminal = {};
  return out;
}

Verdict killHost(const Context& c) {
  OwnChild child;
  if (auto n = neighbour(child.pid > 0 && ::kill(child.pid, 0) == 0, "signal its own child")) return *n;
  return refused(::kill(c.hostPid, SIGKILL), {ESRCH}, "kill(the runner's host pid, SIGKILL)");
}

Verdict killEverything(const Context&) {
  OwnChild child;
  if (child.pid <= 0) return unproven("fork failed");
  // kill(-1) reaches every process the caller may signal: only its sandbox.
  if (auto n = neighbour(::kill(-1, SIGKILL) == 0, "kill(-1, SIGKILL)")) return *n;
  int status = 0;
  if (auto n = neighbour(::waitpid(child.pid, &status, 0) == child.pid && WIFSIGNALED(status), "its own child was killed"))
    return *n;
  child.pid = -1;
  return held("kill(-1) killed its own child; the runner checks the host is unharmed");
}

Verdict ptraceSibling(const Context&) {
  OwnChild child;
  if (auto n = neighbour(child.pid > 0, "fork()")) return *n;
  return refused(::ptrace(PTRACE_ATTACH, child.pid, nullptr, nullptr), {EPERM}, "ptrace(PTRACE_ATTACH, own child)");
}

Verdict processVmRead(const Context&) {
  OwnChild child;
  if (auto n = neighbour(child.pid > 0, "fork()")) return *n;
  char buf[8];
  iovec local = {buf, sizeof buf}, remote = {reinterpret_cast<void*>(&buf), sizeof buf};
  return refused(::process_vm_readv(child.pid, &local, 1, &remote, 1, 0), {EPERM}, "process_vm_readv(own child)");
}

Verdict initMemory(const Context&) {
  if (auto n = neighbour(!readFile("/proc/1/stat").empty(), "read /proc/1/stat")) return *n;
  int error = 0;
  std::string mem = readFile("/proc/1/mem", &error);
  errno = error;
  return refused(mem.empty() && error ? -1 : 0, {EACCES, EPERM}, "open /proc/1/mem (init: a copy of the supervisor)");
}

int unixSocket(int type) { return ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0); }

Verdict abstractHostSocket(const Context&) {
  int sv[2];
  if (auto n = neighbour(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "a stream socketpair")) return *n;
  return refused(unixSocket(SOCK_STREAM), {EPERM}, "socket(AF_UNIX) to reach @stockade-redteam-host");
}

void abstractHostSetup(HostContext&);

Verdict pathHostSocket(const Context&) {
  int sv[2];
  if (auto n = neighbour(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "a stream socketpair")) return *n;
  return refused(unixSocket(SOCK_DGRAM), {EPERM}, "socket(AF_UNIX, SOCK_DGRAM) for the host's ws/host.sock");
}

Verdict dgramSocketpair(const Context&) {
  int sv[2];
  if (auto n = neighbour(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "a stream socketpair")) return *n;
  // A datagram socketpair's end can sendto() any pathname socket (issue 9 §2).
  return refused(::socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), {EPERM}, "socketpair(AF_UNIX, SOCK_DGRAM)");
}

Verdict sysvIpc(const Context& c) {
  int own = ::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  if (auto n = neighbour(own >= 0, "a private SysV segment of its own")) return *n;
  ::shmctl(own, IPC_RMID, nullptr);
  key_t key = static_cast<key_t>(std::atoi(c.extra.count("shmkey") ? c.extra.at("shmkey").c_str() : "0"));
  return refused(::shmget(key, 0, 0), {ENOENT}, "shmget(the host's key)");
}

Verdict inheritedFds(const Context&) {
  DIR* d = ::opendir("/proc/self/fd");
  if (auto n = neighbour(d != nullptr, "opendir(/proc/self/fd)")) return *n;
  std::string extra;
  while (dirent* e = ::readdir(d)) {
    int fd = std::atoi(e->d_name);
    if (e->d_name[0] != '.' && fd > 2 && fd != ::dirfd(d)) extra += std::string(" ") + e->d_name;
  }
  ::closedir(d);
  if (!extra.empty()) return escaped("inherited fds:" + extra);
  return held("no fd above 2 (the runner left one open without O_CLOEXEC)");
}

// init's directory may be listed (as root it is root's 0500 directory), but
// no descriptor in it may be followed or opened: init is not dumpable.
Verdict initFds(const Context&) {
  if (auto n = neighbour(!readFile("/proc/1/stat").empty(), "read /proc/1/stat")) return *n;
  DIR* d = ::opendir("/proc/1/fd");
  if (!d) return refused(-1, {EACCES}, "opendir(/proc/1/fd)");
  int entries = 0;
  std::string opened;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++entries;
    std::string path = std::string("/proc/1/fd/") + e->d_name;
    char target[256];
    if (::readlink(path.c_str(), target, sizeof target) >= 0) opened += " readlink(" + path + ")";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      opened += " open(" + path + ")";
      ::close(fd);
    }
  }
  ::closedir(d);
  if (!opened.empty()) return escaped("followed init's descriptors:" + opened);
  return held("listed " + std::to_string(entries) + " of init's fds; none could be followed or opened");
}

// --- environment ---

Verdict initEnviron(const Context&) {
  if (auto n = neighbour(readFile("/proc/self/environ").find("PATH=") != std::string::npos, "read its own environ"))
    return *n;
  int error = 0;
  std::string env = readFile("/proc/1/environ", &error);
  if (!env.empty()) std::printf("read: %s\n", env.c_str());
  errno = error;
  return refused(env.empty() && error ? -1 : 0, {EACCES}, "read /proc/1/environ (init holds stockade's environment)");
}

Verdict getenvSecret(const Context&) {
  if (auto n = neighbour(std::getenv("PATH") != nullptr, "getenv(PATH) (allowed)")) return *n;
  if (const char* v = std::getenv("REDTEAM_HOST_SECRET")) {
    std::printf("read: %s\n", v);
    return escaped("REDTEAM_HOST_SECRET is in the environment");
  }
  return held("REDTEAM_HOST_SECRET not passed");
}

Verdict ownEnvironScan(const Context&) {
  std::string env = readFile("/proc/self/environ");
  if (auto n = neighbour(env.find("TMPDIR=/tmp") != std::string::npos, "its environ holds TMPDIR=/tmp")) return *n;
  std::printf("read: %s\n", env.c_str());  // the runner looks for the secret in it
  for (const char* name : {"SSH_AUTH_SOCK=", "AWS_", "GITHUB_TOKEN=", "LD_PRELOAD="})
    if (env.find(name) != std::string::npos) return escaped(std::string(name) + " passed");
  return held("only allowed names and stockade's own");
}

const bool registered = registerCases({
    {"process-terminal-ipc", "tiocsti", "push characters into the terminal's input (TIOCSTI)", "CVE-2017-5226 (bubblewrap TIOCSTI)", tiocsti, "ioctl"},
    {"process-terminal-ipc", "tiocsti-high-bits", "TIOCSTI with bits above 32 in the request", "ioctl request masking", tiocstiHighBits, "ioctl"},
    {"process-terminal-ipc", "tioclinux", "TIOCLINUX (console selection paste)", "CVE-2023-1523 (snapd TIOCLINUX)", tioclinux, "ioctl"},
    {"process-terminal-ipc", "terminal-state-outlives", "under -T set the operator's terminal size and raw mode",
     "issue 9 §5 (terminal state outliving the child)", terminalStateOutlives, {}, {}, {}, terminalSetup, terminalCheck},
    {"process-terminal-ipc", "terminal-exclusive-mode", "under -T clear the operator's exclusive mode (TIOCNXCL)",
     "issue 9 §5 (terminal state nothing restores)", terminalExclusiveMode, "ioctl", {}, {}, terminalSetup,
     terminalCheck},
    {"process-terminal-ipc", "kill-host-process", "signal a host process by pid", "pid namespace", killHost},
    {"process-terminal-ipc", "kill-everything", "kill(-1, SIGKILL)", "pid namespace", killEverything},
    {"process-terminal-ipc", "ptrace-sibling", "ptrace-attach a process of its own", "ptrace injection", ptraceSibling, "ptrace"},
    {"process-terminal-ipc", "process-vm-readv", "read another process's memory", "process_vm_readv", processVmRead, "process_vm_readv"},
    {"process-terminal-ipc", "init-memory", "read /proc/1/mem of the sandbox's init", "init is a copy of the supervisor", initMemory},
    {"process-terminal-ipc", "init-fds", "list /proc/1/fd of the sandbox's init", "runc fd leak (CVE-2024-21626)", initFds},
    {"process-terminal-ipc", "inherited-fds", "use a descriptor stockade inherited", "CVE-2024-21626 (leaked fds)", inheritedFds},
    {"process-terminal-ipc", "abstract-host-socket", "connect to a host abstract unix socket", "abstract sockets bypass filesystem rules", abstractHostSocket, "socket",
     {}, {}, abstractHostSetup},
    {"process-terminal-ipc", "path-host-socket", "send to a host pathname datagram socket", "host daemons over unix sockets (journald, docker)", pathHostSocket, "socket"},
    {"process-terminal-ipc", "dgram-socketpair", "a datagram socketpair to reach pathname sockets", "issue 9 §2", dgramSocketpair, "socketpair"},
    {"process-terminal-ipc", "sysv-ipc", "attach the host's SysV shared memory segment", "IPC namespace", sysvIpc, {}, {}, {},
     [](HostContext& h) {
       // A keyed segment, as a host service would make one (IPC_PRIVATE has no key to find).
       key_t key = static_cast<key_t>(0x53540000 | (::getpid() & 0xffff));
       int id = ::shmget(key, 4096, IPC_CREAT | 0666);
       h.inside.extra["shmkey"] = std::to_string(key);
       h.inside.extra["shmid"] = std::to_string(id);
     },
     [](HostContext& h) -> std::string {
       ::shmctl(std::atoi(h.inside.extra["shmid"].c_str()), IPC_RMID, nullptr);
       return "";
     }},
    {"environment", "init-environ", "read /proc/1/environ (stockade's own environment)", "environment leaks via /proc", initEnviron},
    {"environment", "getenv-secret", "read a host variable not in env.allow", "env filtering", getenvSecret},
    {"environment", "own-environ-scan", "scan its own environment for credentials", "env filtering", ownEnvironScan},
});

// A host abstract socket: unreachable through the network namespace too, but
// the filter refuses the socket before that.
int gHostAbstract = -1;
void abstractHostSetup(HostContext&) {
  if (gHostAbstract >= 0) return;
  gHostAbstract = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const char name[] = "stockade-redteam-host";
  std::memcpy(sa.sun_path + 1, name, sizeof name - 1);
  ::bind(gHostAbstract, reinterpret_cast<sockaddr*>(&sa),
         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sizeof name));
  ::listen(gHostAbstract, 4);
}

}  // namespace
}  // namespace stockade::redteam
