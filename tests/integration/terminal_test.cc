// `stockade run` on a terminal (issue 9.5). The test is the operator's
// terminal: it opens a PTY pair, runs stockade as a session leader with the
// slave as its controlling terminal, reads the master as a terminal
// emulator would, and checks that nothing the child did outlives it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A terminal the test owns, with stockade running on it.
class OperatorTerminal {
 public:
  explicit OperatorTerminal(unsigned short cols = 100, unsigned short rows = 30) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) throw std::runtime_error("posix_openpt");
    char name[128];
    if (::ptsname_r(master_, name, sizeof name) != 0) throw std::runtime_error("ptsname_r");
    slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave_ < 0) throw std::runtime_error("open slave");
    resize(cols, rows);
    if (::tcgetattr(slave_, &before_) != 0) throw std::runtime_error("tcgetattr");
  }
  ~OperatorTerminal() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
    ::close(slave_);
  }

  // Runs `argv` as the session leader of this terminal.
  void start(const std::vector<std::string>& argv) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      ::ioctl(slave_, TIOCSCTTY, 0);
      for (int fd = 0; fd < 3; ++fd) ::dup2(slave_, fd);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  // Output until `text` appears (or `limit` passes); returns all seen so far.
  const std::string& readUntil(const std::string& text, std::chrono::seconds limit = 30s) {
    const auto deadline = Clock::now() + limit;
    while (seen_.find(text) == std::string::npos && Clock::now() < deadline) readSome(100);
    return seen_;
  }
  // Waits for stockade, draining the output; its exit status.
  int wait() {
    const auto deadline = Clock::now() + 60s;
    int status = 0;
    while (Clock::now() < deadline) {
      readSome(50);
      pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        readSome(50);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  void type(const std::string& keys) { ASSERT_EQ(::write(master_, keys.data(), keys.size()), (ssize_t)keys.size()); }
  void resize(unsigned short cols, unsigned short rows) {
    winsize ws{};
    ws.ws_col = cols;
    ws.ws_row = rows;
    ::ioctl(master_, TIOCSWINSZ, &ws);
  }
  void signal(int sig) { ::kill(pid_, sig); }

  // The terminal as the operator would find it now.
  bool attributesAsBefore() const {
    termios now{};
    if (::tcgetattr(slave_, &now) != 0) return false;
    return now.c_iflag == before_.c_iflag && now.c_oflag == before_.c_oflag && now.c_cflag == before_.c_cflag &&
           now.c_lflag == before_.c_lflag && std::memcmp(now.c_cc, before_.c_cc, sizeof now.c_cc) == 0;
  }
  // The status flags (F_GETFL) of the description the operator's shell
  // holds, which stockade's fds 0-2 are dup'd from.
  int statusFlags() const { return ::fcntl(slave_, F_GETFL); }
  // A terminal device its owner cannot open again (mode 0): root still can.
  void forbidReopening() { ASSERT_EQ(::fchmod(slave_, 0), 0) << std::strerror(errno); }
  int lineDiscipline() const {
    int ldisc = -1;
    ::ioctl(slave_, TIOCGETD, &ldisc);
    return ldisc;
  }
  // "COLSxROWS" as the operator's terminal has it now.
  std::string size() const {
    winsize ws{};
    ::ioctl(slave_, TIOCGWINSZ, &ws);
    return std::to_string(ws.ws_col) + "x" + std::to_string(ws.ws_row);
  }
  void setExclusive() { ASSERT_EQ(::ioctl(slave_, TIOCEXCL), 0) << std::strerror(errno); }
  int exclusive() const {
    int on = -1;
    ::ioctl(slave_, TIOCGEXCL, &on);
    return on;
  }
  const std::string& output() const { return seen_; }

 private:
  void readSome(int ms) {
    pollfd p = {master_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return;
    char buf[4096];
    ssize_t n = ::read(master_, buf, sizeof buf);
    if (n > 0) seen_.append(buf, static_cast<std::size_t>(n));
  }
  int master_ = -1, slave_ = -1;
  pid_t pid_ = -1;
  termios before_{};
  std::string seen_;
};

class TerminalTest : public ::testing::Test {
 protected:
  std::vector<std::string> run(std::vector<std::string> flags, std::vector<std::string> program) {
    std::vector<std::string> argv = {stockadeBinary(), "run", "--cwd", work_.path(), "--audit", audit_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }
  // The seccomp denials of ioctl request `request` in the audit log.
  int ioctlDenials(unsigned long request) {
    std::ifstream in(audit_);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line);
      if (e["event"] == "denial" && e["syscall"] == "ioctl" && e.contains("args") &&
          (e["args"][1].get<unsigned long>() & 0xffffffff) == request)
        ++n;
    }
    return n;
  }
  static std::string python(const std::string& code) {
    return "/usr/bin/python3 -c 'import fcntl, struct, termios, sys\n" + code + "'";
  }

  TempDir work_;
  TempDir logs_;  // outside the writable cwd
  std::string audit_ = logs_ / "audit.jsonl";
};

TEST_F(TerminalTest, OnATerminalTheChildGetsAFreshPtyOfTheOperatorsSize) {
  OperatorTerminal t(100, 30);
  t.start(run({}, {"/bin/sh", "-c", "tty; stty size; echo done"}));
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("/dev/pts/0"), std::string::npos) << "a PTY of the sandbox's own devpts: " << t.output();
  EXPECT_NE(t.output().find("30 100"), std::string::npos) << t.output();
  EXPECT_TRUE(t.attributesAsBefore()) << "raw mode was not undone";
}

TEST_F(TerminalTest, TheChildCannotChangeTheOperatorsLineDiscipline) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call TIOCSETD";
  OperatorTerminal t;
  t.start(run({}, {"/bin/sh", "-c",
                   python("try:\n fcntl.ioctl(0, termios.TIOCSETD, struct.pack(\"i\", 2)); print(\"CHANGED\")\n"
                          "except OSError as e:\n print(\"REFUSED\", e.errno)") +
                       "; stty raw -echo; echo ran"}));
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("REFUSED 1"), std::string::npos) << t.output();
  EXPECT_NE(t.output().find("ran"), std::string::npos);
  EXPECT_EQ(t.lineDiscipline(), 0) << "the operator's terminal is no longer N_TTY";
  EXPECT_TRUE(t.attributesAsBefore());
  EXPECT_GE(ioctlDenials(TIOCSETD), 1) << "stockade's seccomp table refused it, not the kernel";
}

TEST_F(TerminalTest, WithMinusTTheChildHasTheTerminalButItsStateIsRestoredAndDangerousIoctlsRefused) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call the ioctls";
  OperatorTerminal t(90, 20);
  t.start(run({"-T"}, {"/bin/sh", "-c",
                       "stty size; stty raw -echo -icanon; " +
                           python("for name in (\"TIOCSETD\", \"TIOCSTI\", \"TIOCCONS\", \"TIOCEXCL\"):\n"
                                  " try:\n  fcntl.ioctl(0, getattr(termios, name), struct.pack(\"i\", 2)); print(name, \"ALLOWED\")\n"
                                  " except OSError as e:\n  print(name, \"REFUSED\", e.errno)")}));
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("20 90"), std::string::npos) << "reading the size is allowed: " << t.output();
  for (const char* name : {"TIOCSETD", "TIOCSTI", "TIOCCONS", "TIOCEXCL"})
    EXPECT_NE(t.output().find(std::string(name) + " REFUSED 1"), std::string::npos) << name << ": " << t.output();
  EXPECT_EQ(t.lineDiscipline(), 0);
  EXPECT_TRUE(t.attributesAsBefore()) << "stty raw -echo outlived the child";
  EXPECT_GE(ioctlDenials(TIOCSETD), 1);
  EXPECT_GE(ioctlDenials(TIOCEXCL), 1);
}

// Under -T the child may set the window size (a PTY of its own needs it;
// the filter cannot tell that one from the operator's), and once the size it
// set outlived it on the operator's terminal: stockade now puts the size
// back at the end, as it does the attributes. A state nothing restores is
// refused: TIOCNXCL would clear the operator's exclusive mode for good.
TEST_F(TerminalTest, WithMinusTTheWindowSizeTheChildSetsIsRestoredAndTheExclusiveModeKept) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call the ioctls";
  OperatorTerminal t(90, 20);
  t.setExclusive();  // the operator's own choice, which the child must not undo
  t.start(run({"-T"}, {"/bin/sh", "-c",
                       python("fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack(\"HHHH\", 11, 33, 0, 0))\n"
                              "r, c, x, y = struct.unpack(\"HHHH\", fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8)))\n"
                              "print(\"child size\", c, r)\n"
                              "try:\n fcntl.ioctl(0, termios.TIOCNXCL); print(\"TIOCNXCL ALLOWED\")\n"
                              "except OSError as e:\n print(\"TIOCNXCL REFUSED\", e.errno)")}));
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("child size 33 11"), std::string::npos) << "the child set its size: " << t.output();
  EXPECT_NE(t.output().find("TIOCNXCL REFUSED 1"), std::string::npos) << t.output();
  EXPECT_EQ(t.size(), "90x20") << "the size the child set outlived it";
  EXPECT_EQ(t.exclusive(), 1) << "the operator's exclusive mode was cleared";
  EXPECT_TRUE(t.attributesAsBefore());
  EXPECT_GE(ioctlDenials(TIOCNXCL), 1) << "stockade's seccomp table refused it, not the kernel";
}

// The neighbour: with a PTY of its own (-t) the child's resize is its PTY's,
// and the operator's resize during the run is passed on and kept after it.
TEST_F(TerminalTest, WithMinusTTheOperatorsResizeDuringTheRunIsKept) {
  OperatorTerminal t(90, 20);
  t.start(run({"-t"}, {"/bin/sh", "-c", "stty cols 33 rows 11; echo child size $(stty size); read x; stty size"}));
  t.readUntil("child size 11 33");
  t.resize(120, 40);
  t.type("\r");
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("child size 11 33"), std::string::npos) << t.output();
  EXPECT_NE(t.output().find("40 120"), std::string::npos) << "the operator's resize reached the child: " << t.output();
  EXPECT_EQ(t.size(), "120x40") << "the operator's own resize was undone";
  EXPECT_TRUE(t.attributesAsBefore());
}

// The file status flags belong to the open file description, which the
// operator's shell shares with the descriptors it gives stockade: a child
// that set O_NONBLOCK there left the shell's reads failing with EAGAIN after
// it exited. The child gets a description of its own (it sees its flags
// set), or, when the terminal cannot be reopened, stockade restores them.
void expectFlagsStayTheChilds(OperatorTerminal& t, const std::vector<std::string>& argv) {
  const int before = t.statusFlags();
  ASSERT_GE(before, 0);
  ASSERT_EQ(before & (O_NONBLOCK | O_APPEND | O_ASYNC), 0);
  t.start(argv);
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("child flags set 1"), std::string::npos)
      << "the child ran and its own descriptor has the flags: " << t.output();
  EXPECT_EQ(t.statusFlags(), before) << "O_NONBLOCK|O_APPEND|O_ASYNC outlived the child on the operator's terminal";
}

std::string setFlagsCode() {
  return "import os\n"
         "for fd in (0, 1, 2):\n"
         " fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK | os.O_APPEND | os.O_ASYNC)\n"
         "fcntl.ioctl(0, termios.FIONBIO, struct.pack(\"i\", 1))\n"
         "f = fcntl.fcntl(0, fcntl.F_GETFL)\n"
         "print(\"child flags set\", int(f & os.O_NONBLOCK != 0 and f & os.O_APPEND != 0), flush=True)";
}

TEST_F(TerminalTest, WithMinusTTheFlagsTheChildSetsOnItsTerminalDescriptorStayItsOwn) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call fcntl";
  OperatorTerminal t;
  expectFlagsStayTheChilds(t, run({"-T"}, {"/bin/sh", "-c", python(setFlagsCode())}));
}

TEST_F(TerminalTest, WithStdoutRedirectedTheFlagsTheChildSetsOnTheTerminalStdinStayItsOwn) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call fcntl";
  OperatorTerminal t;
  // No -T: stdout is not a terminal, so the child gets fds 0-2 as they are.
  expectFlagsStayTheChilds(
      t, {"/bin/sh", "-c",
          "\"$0\" \"$@\" | cat",  // stockade's stdout a pipe, its stdin and stderr the terminal
          stockadeBinary(), "run", "--cwd", work_.path(), "--audit", audit_, "--", "/bin/sh", "-c", python(setFlagsCode())});
}

TEST_F(TerminalTest, WithMinusTATerminalStockadeCannotReopenHasTheFlagsTheChildSetRestored) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call fcntl";
  OperatorTerminal t;
  t.forbidReopening();  // as root reopening still works: that path is checked then
  expectFlagsStayTheChilds(t, run({"-T"}, {"/bin/sh", "-c", python(setFlagsCode())}));
}

// A PTY master among fds 0-2 is passed as it is: reopening it would make a
// new PTY, and the child's output went there, read by nobody.
TEST_F(TerminalTest, WithMinusTAPtyMasterAsStdoutStillReceivesTheChildsOutput) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  char name[128];
  ASSERT_EQ(::ptsname_r(master, name, sizeof name), 0);
  const int slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(slave, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(master, STDOUT_FILENO);
    const auto argv = run({"-T"}, {"/bin/sh", "-c", "echo through-the-master"});
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string seen;
  pollfd p = {slave, POLLIN, 0};
  while (::poll(&p, 1, 500) > 0) {
    char buf[256];
    const ssize_t n = ::read(slave, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<std::size_t>(n));
    if (seen.find("through-the-master") != std::string::npos) break;
  }
  EXPECT_NE(seen.find("through-the-master"), std::string::npos) << seen;
  ::close(slave);
  ::close(master);
}

TEST_F(TerminalTest, WithMinusTTheChildCannotStopTheOperatorsOutputOrUseATerminalIoctlOutsideTheAllowList) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 is needed to call the ioctls";
  OperatorTerminal t;
  // TCXONC(TCOOFF) (tcflow) suspends the terminal's output, and it stayed
  // suspended after the sandbox: nothing written to it appeared again.
  // 0x54ff: a request of the terminal space no kernel knows today.
  t.start(run({"-T"}, {"/bin/sh", "-c",
                       python("for name, request in ((\"TCXONC\", termios.TCXONC), (\"UNKNOWN\", 0x54ff)):\n"
                              " try:\n  fcntl.ioctl(0, request, 0); print(name, \"ALLOWED\", flush=True)\n"
                              " except OSError as e:\n  print(name, \"REFUSED\", e.errno, flush=True)\n"
                              "fcntl.ioctl(0, termios.TCFLSH, termios.TCIFLUSH); print(\"flushed\")") +
                           "; echo ran"}));
  EXPECT_EQ(t.wait(), 0) << t.output();
  EXPECT_NE(t.output().find("TCXONC REFUSED 1"), std::string::npos) << t.output();
  EXPECT_NE(t.output().find("UNKNOWN REFUSED 1"), std::string::npos) << t.output();
  EXPECT_NE(t.output().find("flushed"), std::string::npos) << "an allowed neighbour (tcflush) works: " << t.output();
  EXPECT_NE(t.output().find("ran"), std::string::npos) << "the terminal still prints: " << t.output();
  EXPECT_GE(ioctlDenials(TCXONC), 1) << "stockade's seccomp table refused it, not the kernel";
}

TEST_F(TerminalTest, AWindowChangeReachesTheChildAndASignalToStockadeRestoresTheTerminal) {
  OperatorTerminal t(80, 24);
  t.start(run({"-t"}, {"/bin/sh", "-c", "trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done"}));
  t.readUntil("ready");
  ASSERT_NE(t.output().find("ready"), std::string::npos) << t.output();
  t.resize(120, 40);
  EXPECT_NE(t.readUntil("40 120").find("40 120"), std::string::npos) << t.output();
  t.signal(SIGTERM);
  EXPECT_EQ(t.wait(), 128 + SIGTERM);
  EXPECT_TRUE(t.attributesAsBefore()) << "raw mode outlived stockade's end by a signal";
}

TEST_F(TerminalTest, KeysTypedAtTheOperatorsTerminalReachTheChild) {
  OperatorTerminal t;
  t.start(run({}, {"/bin/sh", "-c", "read line; echo got-$line"}));
  t.type("hello\r");
  EXPECT_EQ(t.wait(), 0);
  EXPECT_NE(t.output().find("got-hello"), std::string::npos) << t.output();
}

TEST_F(TerminalTest, MinusTAndMinusCapitalTContradict) {
  auto r = runProcess(run({"-t", "-T"}, {"/bin/true"}));
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_NE(r.err.find("-t and -T"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stockade::testing
