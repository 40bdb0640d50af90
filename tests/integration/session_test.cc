// Persistent shell sessions (seed 003's Session) with a real shell in a
// sandbox: state carries over, commands run in order each with its own exit
// code and logs, a timeout or an interrupt ends the command and not the
// session, and a command that will not stop ends the session instead of
// wedging it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "tests/support/process_fixture.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::ok;
using testing::ProcessServiceTest;

class SessionTest : public ProcessServiceTest {
 protected:
  Session create() {
    CreateSessionOptions o;
    o.cwd = work_;
    return ok(service().createSession(o));
  }
  static RunResult run(const Session& s, const std::string& command, SessionRunOptions o = {}) {
    return ok(s.run(command, o, 60s));
  }
  static int exitCode(const RunResult& r) {
    EXPECT_TRUE(std::holds_alternative<Exited>(r.result)) << "reason " << processReasonName(reasonOf(r.result));
    return std::holds_alternative<Exited>(r.result) ? std::get<Exited>(r.result).exitCode : -1;
  }
};

TEST_F(SessionTest, CwdExportsAndFunctionsCarryOverAndGetReportsTheCwd) {
  auto s = create();
  std::filesystem::create_directories(work_ + "/sub");
  EXPECT_EQ(exitCode(run(s, "cd sub && export FOO=bar && greet() { echo hello-$1; }")), 0);
  auto r = run(s, "pwd; echo $FOO; greet you");
  EXPECT_EQ(r.stdout, work_ + "/sub\nbar\nhello-you\n");
  EXPECT_EQ(ok(s.get()).cwd, work_ + "/sub");
  EXPECT_EQ(ok(s.get()).kind, ProcessKind::kSession);
}

TEST_F(SessionTest, EachCommandHasItsOwnExitCodeAndLogsWithoutBleed) {
  auto s = create();
  auto first = run(s, "echo one; echo err-one >&2; false");
  EXPECT_EQ(exitCode(first), 1);
  EXPECT_EQ(first.stdout, "one\n");
  EXPECT_EQ(first.stderr, "err-one\n");
  auto second = run(s, "printf 'no newline'");
  EXPECT_EQ(exitCode(second), 0);
  EXPECT_EQ(second.stdout, "no newline");
  auto third = run(s, "echo three");
  EXPECT_EQ(third.stdout, "three\n") << "the previous command's output bled into this one";
  EXPECT_NE(first.processId, third.processId);
}

TEST_F(SessionTest, QueuedCommandsRunOneAtATimeInOrder) {
  auto s = create();
  std::vector<ProcessHandle> handles;
  for (int i = 0; i < 5; ++i) handles.push_back(ok(s.start("sleep 0.05; echo cmd" + std::to_string(i) + " >> order")));
  for (auto& h : handles) (void)ok(h.wait(30s));
  EXPECT_EQ(run(s, "cat order").stdout, "cmd0\ncmd1\ncmd2\ncmd3\ncmd4\n");
  auto listed = ok(service().list({.sessionId = s.id()}));
  EXPECT_GE(listed.size(), 6u) << "the shell and its commands are listed under the session";
}

TEST_F(SessionTest, AnIncompleteCommandIsASyntaxErrorNotAWedgedShell) {
  auto s = create();
  auto broken = run(s, "echo 'unterminated");
  EXPECT_NE(exitCode(broken), 0);
  EXPECT_FALSE(broken.stderr.empty());
  EXPECT_EQ(run(s, "echo next").stdout, "next\n");
}

TEST_F(SessionTest, AnExecutionTimeoutStopsTheCommandAndTheSessionSurvives) {
  auto s = create();
  (void)run(s, "export KEPT=yes");
  SessionRunOptions o;
  o.executionTimeout = 300ms;
  auto timedOut = ok(s.run("sleep 100", o, 60s));
  EXPECT_TRUE(std::holds_alternative<TimedOut>(timedOut.result));
  auto after = run(s, "echo alive $KEPT");
  EXPECT_EQ(after.stdout, "alive yes\n");
  EXPECT_EQ(ok(s.get()).state, ProcessState::kRunning);
}

TEST_F(SessionTest, KillIntInterruptsTheCommandNotTheSession) {
  auto s = create();
  auto h = ok(s.start("sleep 100; echo not-reached"));
  std::this_thread::sleep_for(200ms);
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kInt}));
  auto result = ok(h.wait(30s));
  ASSERT_TRUE(std::holds_alternative<Signaled>(result)) << processReasonName(reasonOf(result));
  EXPECT_EQ(std::get<Signaled>(result).signal, "SIGINT");
  EXPECT_EQ(ok(h.logs()).items.size(), 0u) << "the rest of the command ran after the interrupt";
  EXPECT_EQ(run(s, "echo still-here").stdout, "still-here\n");
}

TEST_F(SessionTest, KillIntInterruptsALoopOfTheShellItself) {
  auto s = create();
  (void)run(s, "export KEPT=yes");
  auto h = ok(s.start("while :; do :; done; echo not-reached"));
  std::this_thread::sleep_for(200ms);
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kInt}));
  auto result = ok(h.wait(30s));
  EXPECT_TRUE(std::holds_alternative<Signaled>(result)) << processReasonName(reasonOf(result));
  EXPECT_EQ(run(s, "echo $KEPT").stdout, "yes\n");
}

TEST_F(SessionTest, AnInterruptLeavesEveryShellFunctionOfTheCommandNotOnlyTheInnermost) {
  auto s = create();
  (void)run(s, "export KEPT=yes; set -u");  // nounset: the unwinding must not trip over unset names
  // The interrupt arrives while a function of the command waits for a program.
  auto h = ok(s.start("inner() { sleep 100; }; outer() { inner; echo after-inner; }; outer; echo not-reached"));
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kInt}));
  auto result = ok(h.wait(30s));
  ASSERT_TRUE(std::holds_alternative<Signaled>(result)) << processReasonName(reasonOf(result));
  EXPECT_EQ(std::get<Signaled>(result).signal, "SIGINT");
  EXPECT_EQ(ok(h.logs()).items.size(), 0u) << "the rest of the command ran after the interrupt";
  // A timeout while a function of the command loops in the shell itself.
  SessionRunOptions o;
  o.executionTimeout = 300ms;
  auto timedOut = ok(s.run("spin() { while :; do :; done; }; spin; echo not-reached; sleep 100", o, 60s));
  EXPECT_TRUE(std::holds_alternative<TimedOut>(timedOut.result)) << processReasonName(reasonOf(timedOut.result));
  EXPECT_EQ(timedOut.stdout, "") << "the rest of the command ran after its timeout";
  // The session survived both, and the next commands run whole (with functions of their own).
  EXPECT_EQ(ok(s.get()).state, ProcessState::kRunning);
  auto after = run(s, "f() { echo in-f; }; f; echo alive $KEPT");
  EXPECT_EQ(exitCode(after), 0);
  EXPECT_EQ(after.stdout, "in-f\nalive yes\n");
}

TEST_F(SessionTest, ACommandThatRedirectsTheShellsOwnStdioEndsAndLaterCommandsAreCapturedAgain) {
  for (const char* shell : {"bash", "sh"}) {
    SCOPED_TRACE(shell);
    CreateSessionOptions co;
    co.cwd = work_;
    co.shell = shell;
    auto s = ok(service().createSession(co));
    // exec with only redirections changes the shell's own descriptors.
    auto redirected = ok(s.run("exec >out.log 2>&1; echo into-log; echo err-into-log >&2", {}, 15s));
    EXPECT_EQ(exitCode(redirected), 0) << "the command's end was never seen";
    EXPECT_EQ(redirected.stdout + redirected.stderr, "");
    std::ifstream log(work_ + "/out.log");
    std::string logged((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(logged, "into-log\nerr-into-log\n");
    EXPECT_EQ(exitCode(ok(s.run("exec 1>&- 2>&-; true", {}, 30s))), 0);
    EXPECT_EQ(exitCode(ok(s.run("exec </dev/null; true", {}, 30s))), 0);
    auto after = run(s, "echo after; echo err-after >&2");
    EXPECT_EQ(after.stdout, "after\n");
    EXPECT_EQ(after.stderr, "err-after\n");
    ASSERT_FALSE(s.remove());
  }
}

TEST_F(SessionTest, ACommandStillRunningFiveSecondsAfterItsTimeoutEndsTheSession) {
  auto s = create();
  SessionRunOptions o;
  o.executionTimeout = 200ms;
  // Ignores INT in the shell itself and loops there: nothing stops it but ending the session.
  auto h = ok(s.start("trap '' INT; while :; do sleep 0.1; done", o));
  auto queued = ok(s.start("echo never"));
  auto result = ok(h.wait(30s));
  EXPECT_TRUE(std::holds_alternative<TimedOut>(result));
  EXPECT_TRUE(std::holds_alternative<Failed>(ok(queued.wait(30s)))) << "the queued command never ran";
  auto shell = ok(s.get());
  EXPECT_EQ(shell.state, ProcessState::kTerminal);
  EXPECT_EQ(errorOf(s.start("echo x")), ProcessErrorCode::kUnavailable);
}

TEST_F(SessionTest, DeletingASessionCommandThatWillNotStopIsRefusedAndDeletingTheSessionWorks) {
  auto s = create();
  auto h = ok(s.start("trap '' TERM INT; while :; do sleep 0.1; done"));
  std::this_thread::sleep_for(200ms);
  auto refused = h.remove();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, ProcessErrorCode::kUnsupported);
  EXPECT_NE(refused->message.find("delete its session"), std::string::npos) << refused->message;
  ASSERT_FALSE(s.remove());
  EXPECT_EQ(errorOf(h.get()), ProcessErrorCode::kNotFound);
  EXPECT_EQ(errorOf(s.get()), ProcessErrorCode::kNotFound);
}

TEST_F(SessionTest, DeletingAFinishedCommandForgetsItAndTheSessionGoesOn) {
  auto s = create();
  auto h = ok(s.start("echo done"));
  (void)ok(h.wait(30s));
  ASSERT_FALSE(h.remove());
  EXPECT_EQ(errorOf(h.get()), ProcessErrorCode::kNotFound);
  EXPECT_EQ(run(s, "echo on").stdout, "on\n");
}

TEST_F(SessionTest, StdinOpenIsRefusedForASessionCommandAndBadInputIsACallerBug) {
  auto s = create();
  SessionRunOptions o;
  o.stdin = StdinMode::kOpen;
  EXPECT_EQ(errorOf(s.start("cat", o)), ProcessErrorCode::kUnsupported);
  EXPECT_THROW((void)s.start("   "), std::invalid_argument);
  CreateSessionOptions badShell;
  badShell.shell = "python3";
  EXPECT_THROW((void)service().createSession(badShell), std::invalid_argument);
  EXPECT_EQ(errorOf(service().connectSession("sess-0000000000000000").get()), ProcessErrorCode::kNotFound);
}

TEST_F(SessionTest, SessionCommandsRunUnderTheSandboxPolicy) {
  auto s = create();
  EXPECT_EQ(run(s, "echo x > " + outside_ + "/f 2>/dev/null && echo WROTE || echo REFUSED").stdout, "REFUSED\n");
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/f"));
  EXPECT_EQ(run(s, "echo x > " + work_ + "/f && echo WROTE").stdout, "WROTE\n");
}

}  // namespace
}  // namespace stockade
