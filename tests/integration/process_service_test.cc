// The process service (seed 003) with real sandboxed children: detached
// processes, logs with cursors, streams, wait, kill escalation, stdin,
// metrics, and the complaints users file against the hosted services
// (children left behind by kill, output lost on reconnect, a stream reporting
// completion while the process runs, stdout and stderr merged).
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "src/process/log_ring.h"
#include "tests/support/process_fixture.h"
#include "tests/support/sanitizer.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::ProcessServiceTest;
using testing::ok;
using testing::take;

TEST_F(ProcessServiceTest, StartReturnsARunningHandleAndWaitGivesTheExitCode) {
  auto h = startSh("echo hello; exit 3");
  auto result = ok(h.wait());
  ASSERT_TRUE(std::holds_alternative<Exited>(result));
  EXPECT_EQ(std::get<Exited>(result).exitCode, 3);
  auto dto = ok(h.get());
  EXPECT_EQ(dto.state, ProcessState::kTerminal);
  EXPECT_EQ(dto.reason, ProcessReason::kExited);
  EXPECT_EQ(dto.exitCode, 3);
  EXPECT_EQ(dto.kind, ProcessKind::kExec);
  EXPECT_EQ(dto.shellCommand, "echo hello; exit 3");
  EXPECT_TRUE(dto.resolvedShell.has_value());
  EXPECT_EQ(dto.cwd, work_);
  EXPECT_TRUE(dto.pid.has_value());
  EXPECT_TRUE(dto.startedAt && dto.exitedAt && *dto.exitedAt >= *dto.startedAt);
  EXPECT_EQ(channelText(h, LogChannel::kStdout), "hello\n");
  EXPECT_EQ(dto.metrics.stdoutBytes, 6u);
}

TEST_F(ProcessServiceTest, ArgvRunsWithoutAShell) {
  auto h = ok(service().start(ProcessCommand::exec({"/bin/echo", "$(id)", ";", "*"}), inWork()));
  ASSERT_TRUE(std::holds_alternative<Exited>(ok(h.wait())));
  EXPECT_EQ(channelText(h, LogChannel::kStdout), "$(id) ; *\n");
  EXPECT_FALSE(ok(h.get()).shellCommand.has_value());
}

TEST_F(ProcessServiceTest, RunCollectsStdoutAndStderrApartAndInterleavedInArrivalOrderPerChannel) {
  ProcessRunOptions o;
  o.start.cwd = work_;
  auto r = ok(service().run(ProcessCommand::shell("for i in $(seq 1 300); do echo out$i; echo err$i >&2; done"), o));
  std::string expectOut, expectErr;
  for (int i = 1; i <= 300; ++i) {
    expectOut += "out" + std::to_string(i) + "\n";
    expectErr += "err" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(r.stdout, expectOut);
  EXPECT_EQ(r.stderr, expectErr);
  EXPECT_EQ(r.output.size(), expectOut.size() + expectErr.size());
  // Within each channel the frames' cursors increase in the order the bytes came.
  std::string previous;
  for (const auto& f : r.logs) {
    EXPECT_GT(f.cursor, previous);
    previous = f.cursor;
  }
  EXPECT_TRUE(std::holds_alternative<Exited>(r.result));
}

TEST_F(ProcessServiceTest, NonUtf8OutputComesAsBase64AndIsNeverCorrupted) {
  auto h = startSh("printf 'ok\\n'; sleep 0.1; printf '\\377\\376\\000bin'");
  (void)ok(h.wait());
  auto page = ok(h.logs());
  std::string decoded;
  bool sawBase64 = false;
  for (const auto& f : page.items) {
    if (f.encoding == LogEncoding::kBase64) {
      sawBase64 = true;
      EXPECT_EQ(f.data, process::base64(std::string("\xff\xfe\0bin", 6)));
    } else {
      decoded += f.data;
    }
  }
  EXPECT_TRUE(sawBase64);
  EXPECT_EQ(decoded, "ok\n");
  auto all64 = ok(h.logs({.encoding = LogEncoding::kBase64}));
  for (const auto& f : all64.items) EXPECT_EQ(f.encoding, LogEncoding::kBase64);
}

TEST_F(ProcessServiceTest, HundredMegabytesThroughAOneMebibyteRingTruncateTheHeadAndKeepMemoryBounded) {
  const long before = testing::rssKiB();
  auto h = startSh("head -c 100000000 /dev/zero; echo; echo TAIL-MARKER");
  ASSERT_TRUE(std::holds_alternative<Exited>(ok(h.wait())));
  const long after = testing::rssKiB();
  auto dto = ok(h.get());
  EXPECT_EQ(dto.metrics.stdoutBytes, 100000000u + 1 + 12);
  EXPECT_TRUE(dto.truncatedHead);
  EXPECT_GE(dto.metrics.droppedLogBytes, 100000000u - (1u << 20));
  if (!testing::kSanitized) {  // tests/support/sanitizer.h: a sanitizer's own memory is in the RSS
    EXPECT_LT(after - before, 64 * 1024) << "the supervisor kept " << (after - before) << " KiB more";
  }
  // What is retained is the tail, and a page from the start says what was lost.
  auto page = ok(h.logs({.limit = 10000}));
  EXPECT_TRUE(page.truncatedHead);
  ASSERT_TRUE(page.firstAvailableCursor.has_value());
  EXPECT_EQ(page.items.front().cursor, *page.firstAvailableCursor);
  std::size_t held = 0;
  for (const auto& f : page.items) held += f.data.size();
  EXPECT_LE(held, (1u << 20) + 65536u);
  EXPECT_NE(channelText(h, LogChannel::kStdout).find("TAIL-MARKER"), std::string::npos);
}

TEST_F(ProcessServiceTest, PagingWithCursorsNeverRepeatsOrSkipsAFrame) {
  auto h = startSh("for i in $(seq 1 3000); do echo line$i; done");
  (void)ok(h.wait());
  std::string joined, expect;
  for (int i = 1; i <= 3000; ++i) expect += "line" + std::to_string(i) + "\n";
  std::optional<std::string> cursor;
  std::set<std::string> seen;
  for (int pages = 0; pages < 100000; ++pages) {
    auto page = ok(h.logs({.cursor = cursor, .limit = 7}));
    for (const auto& f : page.items) {
      EXPECT_TRUE(seen.insert(f.cursor).second) << "frame " << f.cursor << " repeated";
      if (cursor) {
        EXPECT_GT(f.cursor, *cursor);
      }
      joined += f.data;
    }
    cursor = page.nextCursor;
    if (!page.hasMore) break;
  }
  EXPECT_EQ(joined, expect);
  EXPECT_TRUE(ok(h.logs({.cursor = cursor})).items.empty()) << "nothing after the last cursor";
}

TEST_F(ProcessServiceTest, AStreamResumedFromTheLastCursorAfterACancelLosesAndRepeatsNothing) {
  ProcessStartOptions o = inWork();
  o.stdin = StdinMode::kOpen;
  // Writes a line per line of stdin, so the test controls when output comes.
  auto h = startSh("while read l; do echo got-$l; done; echo done", o);
  std::string joined;
  std::optional<std::string> last;
  {
    std::stop_source stop;
    auto stream = take(h.streamLogs({}, stop.get_token()));
    ASSERT_FALSE(h.stdin("a\n"));
    ASSERT_FALSE(h.stdin("b\n"));
    while (joined != "got-a\ngot-b\n") {
      auto event = stream.next();
      ASSERT_TRUE(event.has_value());
      ASSERT_TRUE(std::holds_alternative<LogEvent>(event->event)) << "no state before the process ends";
      joined += std::get<LogEvent>(event->event).frame.data;
      last = event->cursor;
    }
    // Cancelled while the process still runs and while nothing is pending.
    std::thread canceller([&] {
      std::this_thread::sleep_for(50ms);
      stop.request_stop();
    });
    EXPECT_FALSE(stream.next().has_value()) << "a cancelled stream ends";
    canceller.join();
  }
  ASSERT_FALSE(h.stdin("c\n"));
  ASSERT_FALSE(h.stdinEof());
  auto stream = take(h.streamLogs({.cursor = last}));
  bool sawState = false, sawEof = false;
  while (auto event = stream.next()) {
    if (auto* log = std::get_if<LogEvent>(&event->event)) {
      EXPECT_FALSE(sawState) << "a frame after the state";
      joined += log->frame.data;
    } else if (auto* state = std::get_if<StateEvent>(&event->event)) {
      sawState = true;
      EXPECT_TRUE(std::holds_alternative<Exited>(state->result));
      EXPECT_EQ(ok(h.get()).state, ProcessState::kTerminal) << "the state is reported once the process has ended";
    } else if (std::holds_alternative<EofEvent>(event->event)) {
      sawEof = true;
    }
  }
  EXPECT_EQ(joined, "got-a\ngot-b\ngot-c\ndone\n");
  EXPECT_TRUE(sawState);
  EXPECT_TRUE(sawEof);
}

TEST_F(ProcessServiceTest, AStreamFromACursorTheRingDroppedWarnsFirst) {
  auto h = startSh("head -c 3000000 /dev/zero");
  (void)ok(h.wait());
  auto stream = take(h.streamLogs({.cursor = process::LogRing::cursorText(0)}));
  auto first = stream.next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(std::holds_alternative<WarningEvent>(first->event));
  const auto& warning = std::get<WarningEvent>(first->event);
  ASSERT_TRUE(warning.firstAvailableCursor.has_value());
  auto second = stream.next();
  ASSERT_TRUE(second && std::holds_alternative<LogEvent>(second->event));
  EXPECT_EQ(std::get<LogEvent>(second->event).frame.cursor, *warning.firstAvailableCursor);
}

TEST_F(ProcessServiceTest, KillEscalatesAndLeavesNothingOfATermTrappingTreeWithASetsidDescendant) {
  // TERM is ignored by the shell and, inherited, by every descendant:
  // children, a grandchild, and one that left the session with setsid.
  auto h = startSh("trap '' TERM; sleep 1000 & (sleep 1000 &) ; setsid sleep 1000 & echo ready; wait");
  auto stream = take(h.streamLogs());
  auto ready = stream.next();
  ASSERT_TRUE(ready && std::holds_alternative<LogEvent>(ready->event));
  auto pid = ok(h.get()).pid;
  ASSERT_TRUE(pid.has_value());
  const std::string ns = testing::sandboxPidNamespace(*pid);
  ASSERT_FALSE(ns.empty());
  std::this_thread::sleep_for(100ms);  // the background sleeps exec
  ASSERT_GE(testing::processesInNamespace(ns).size(), 4u) << "the shell and three sleeps run in the sandbox";
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kTerm, .escalateAfter = 300ms}));
  EXPECT_EQ(errorOf(h.wait(150ms)), ProcessErrorCode::kTimeout) << "TERM is trapped: it still runs";
  auto result = ok(h.wait(30s));
  ASSERT_TRUE(std::holds_alternative<Signaled>(result));
  EXPECT_EQ(std::get<Signaled>(result).signal, "SIGKILL");
  EXPECT_TRUE(testing::processesInNamespace(ns).empty()) << "a process of the sandbox survived the kill";
}

TEST_F(ProcessServiceTest, KillSignalsEveryProcessOfTheSandboxNotOnlyTheLeader) {
  // Without a trap, TERM alone ends the shell and its setsid'd descendant.
  auto h = startSh("setsid sh -c 'sleep 1000; echo never' & echo ready; wait");
  auto stream = take(h.streamLogs());
  ASSERT_TRUE(stream.next().has_value());
  const std::string ns = testing::sandboxPidNamespace(*ok(h.get()).pid);
  ASSERT_FALSE(ns.empty());
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kTerm, .escalateAfter = 60000ms}));
  auto result = ok(h.wait(30s));
  ASSERT_TRUE(std::holds_alternative<Signaled>(result)) << "ended by TERM, long before the escalation";
  EXPECT_EQ(std::get<Signaled>(result).signal, "SIGTERM");
  EXPECT_TRUE(testing::processesInNamespace(ns).empty());
  EXPECT_EQ(channelText(h, LogChannel::kStdout), "ready\n");
}

TEST_F(ProcessServiceTest, StdinOpenEchoesAndClosedStdinIsRefused) {
  ProcessStartOptions o = inWork();
  o.stdin = StdinMode::kOpen;
  auto h = ok(service().start(ProcessCommand::exec({"/bin/cat"}), o));
  ASSERT_FALSE(h.stdin("hello "));
  ASSERT_FALSE(h.stdin(std::string("wor\0ld\n", 7), /*eof=*/true));
  ASSERT_TRUE(std::holds_alternative<Exited>(ok(h.wait(30s))));
  EXPECT_EQ(channelText(h, LogChannel::kStdout), std::string("hello wor\0ld\n", 13));
  auto afterEof = h.stdin("more");
  ASSERT_TRUE(afterEof.has_value());
  EXPECT_EQ(afterEof->code, ProcessErrorCode::kUnsupported);

  auto closed = ok(service().start(ProcessCommand::exec({"/bin/cat"}), inWork()));
  EXPECT_TRUE(std::holds_alternative<Exited>(ok(closed.wait(30s)))) << "closed stdin reads EOF at once";
  auto refused = closed.stdin("x");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, ProcessErrorCode::kUnsupported);
  EXPECT_NE(refused->message.find("stdin closed"), std::string::npos) << refused->message;
}

TEST_F(ProcessServiceTest, ExecutionTimeoutKillsTheProcessAndSaysSo) {
  ProcessStartOptions o = inWork();
  o.executionTimeout = 200ms;
  auto h = startSh("sleep 1000", o);
  auto result = ok(h.wait(30s));
  EXPECT_TRUE(std::holds_alternative<TimedOut>(result));
  EXPECT_EQ(ok(h.get()).reason, ProcessReason::kTimedOut);
}

TEST_F(ProcessServiceTest, AWaitThatRunsOutIsATimeoutValueAndTheProcessGoesOn) {
  auto h = startSh("sleep 1000");
  EXPECT_EQ(errorOf(h.wait(50ms)), ProcessErrorCode::kTimeout);
  EXPECT_EQ(ok(h.get()).state, ProcessState::kRunning);
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kKill}));
  EXPECT_TRUE(std::holds_alternative<Signaled>(ok(h.wait(30s))));
}

TEST_F(ProcessServiceTest, MetricsCountCpuTimeMemoryAndBytes) {
  auto h = startSh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done; echo e >&2");
  (void)ok(h.wait());
  auto m = ok(h.get()).metrics;
  EXPECT_GT(m.cpuTime.count(), 0);
  EXPECT_GT(m.peakMemoryBytes, 0);
  EXPECT_EQ(m.stdoutBytes, 5u);
  EXPECT_EQ(m.stderrBytes, 2u);
  EXPECT_EQ(m.droppedLogBytes, 0u);
}

TEST_F(ProcessServiceTest, ListFiltersByStateKindAndNameAndDeleteStopsAndForgets) {
  ProcessStartOptions named = inWork();
  named.name = "server";
  auto running = startSh("sleep 1000", named);
  auto done = startSh("true");
  (void)ok(done.wait());
  auto all = ok(service().list());
  EXPECT_EQ(all.size(), 2u);
  auto live = ok(service().list({.state = ProcessListOptions::States::kRunning}));
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live.front().id, running.id());
  EXPECT_EQ(ok(service().list({.name = "server"})).size(), 1u);
  EXPECT_EQ(ok(service().list({.kind = ProcessKind::kPty})).size(), 0u);
  EXPECT_EQ(ok(service().list({.pid = *ok(running.get()).pid})).size(), 1u);

  ASSERT_FALSE(running.remove());
  EXPECT_EQ(errorOf(running.get()), ProcessErrorCode::kNotFound);
  EXPECT_EQ(errorOf(service().get("proc-0000000000000000")), ProcessErrorCode::kNotFound);
  EXPECT_EQ(ok(service().list()).size(), 1u);
}

TEST_F(ProcessServiceTest, AProcessRunsUnderTheSandboxPolicy) {
  auto denied = startSh("echo x > " + outside_ + "/f && echo WROTE || echo REFUSED");
  (void)ok(denied.wait());
  EXPECT_EQ(channelText(denied, LogChannel::kStdout), "REFUSED\n");
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/f"));
  auto allowed = startSh("echo x > " + work_ + "/f && echo WROTE");
  (void)ok(allowed.wait());
  EXPECT_EQ(channelText(allowed, LogChannel::kStdout), "WROTE\n");
  EXPECT_TRUE(auditedWhere([&](const nlohmann::json& j) {
    return j["event"] == "spawn" && j["processId"] == allowed.id() && j["sandboxId"] == allowed.sandboxId();
  }));
  EXPECT_TRUE(auditedWhere([&](const nlohmann::json& j) { return j["event"] == "exit" && j["processId"] == allowed.id(); }));
}

TEST_F(ProcessServiceTest, AfterDisposeEveryCallIsStaleEpochAndRunningProcessesAreLost) {
  auto h = startSh("sleep 1000");
  ASSERT_TRUE(handle_->dispose());
  EXPECT_EQ(errorOf(h.get()), ProcessErrorCode::kStaleEpoch);
  EXPECT_EQ(errorOf(h.wait()), ProcessErrorCode::kStaleEpoch);
  EXPECT_EQ(errorOf(service().start(ProcessCommand::shell("true"), inWork())), ProcessErrorCode::kStaleEpoch);
  EXPECT_EQ(errorOf(service().list()), ProcessErrorCode::kStaleEpoch);
}

TEST_F(ProcessServiceTest, DisposeWhileStartsAreInFlightNeverHangs) {
  // A start() registered its record before its admission, so a dispose()
  // between the two waited for that record while the start waited for
  // dispose() to release the admission gate: both hung, from the first round.
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto handle = SandboxManager::instance().createSandbox(policy());
    auto processes = handle.processes();
    std::atomic<bool> stop{false};
    std::atomic<int> started{0};
    std::thread starter([&] {
      while (!stop) {
        auto r = processes.start(ProcessCommand::exec({"/bin/true"}), inWork());
        if (std::holds_alternative<ProcessError>(r)) return;  // stale_epoch: the sandbox is gone
        ++started;
      }
    });
    while (started == 0) std::this_thread::sleep_for(1ms);
    auto disposed = std::async(std::launch::async, [&] { return handle.dispose(); });
    if (disposed.wait_for(60s) != std::future_status::ready) {
      ADD_FAILURE() << "dispose() still waits 60 s later, with a start() in flight";
      std::_Exit(1);  // the hung threads would keep the test binary from ending
    }
    stop = true;
    starter.join();
  }
}

TEST_F(ProcessServiceTest, CallerBugsThrowInvalidArgumentNamingTheField) {
  auto expectThrowNaming = [](auto&& f, const std::string& field) {
    try {
      f();
      ADD_FAILURE() << "no std::invalid_argument for " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  auto s = service();
  expectThrowNaming([&] { (void)s.start(ProcessCommand::shell(""), inWork()); }, "command.cmd");
  expectThrowNaming([&] { (void)s.start(ProcessCommand{"true", std::vector<std::string>{"/bin/true"}}, inWork()); },
                    "both cmd and argv");
  expectThrowNaming([&] { (void)s.start(ProcessCommand::exec({}), inWork()); }, "command.argv");
  ProcessStartOptions badEnv = inWork();
  badEnv.env = {{"_tX", "1"}};
  expectThrowNaming([&] { (void)s.start(ProcessCommand::shell("true"), badEnv); }, "env");
  ProcessStartOptions badShell = inWork();
  badShell.shell = "fish";
  expectThrowNaming([&] { (void)s.start(ProcessCommand::shell("true"), badShell); }, "shell \"fish\"");
  ProcessStartOptions badTimeout = inWork();
  badTimeout.executionTimeout = -5ms;
  expectThrowNaming([&] { (void)s.start(ProcessCommand::shell("true"), badTimeout); }, "executionTimeout");
  ProcessStartOptions relative = inWork();
  relative.cwd = "work";
  expectThrowNaming([&] { (void)s.start(ProcessCommand::shell("true"), relative); }, "cwd");
  auto h = startSh("true");
  expectThrowNaming([&] { (void)h.logs({.cursor = "not-a-cursor"}); }, "cursor");
  expectThrowNaming([&] { (void)h.logs({.limit = 0}); }, "limit");
  expectThrowNaming([&] { (void)h.wait(-1ms); }, "timeout");
  EXPECT_TRUE(ok(service().list()).size() == 1u) << "no refused call left a record behind";
}

TEST_F(ProcessServiceTest, TwoHundredConcurrentProcessesLeakNoFdThreadOrZombie) {
  // Warm: the supervisor, spawner and a spare exist before counting.
  auto warm = startSh("true");
  (void)ok(warm.wait());
  ASSERT_FALSE(warm.remove());
  std::this_thread::sleep_for(200ms);
  const std::size_t fds = testing::countEntries("/proc/self/fd"), threads = testing::countEntries("/proc/self/task"),
                    children = testing::childrenOfThisProcess();
  std::vector<ProcessHandle> handles;
  for (int i = 0; i < 200; ++i) handles.push_back(startSh("echo $$; sleep 0.3"));
  EXPECT_EQ(testing::countEntries("/proc/self/task"), threads) << "a thread per child";
  for (auto& h : handles) EXPECT_TRUE(std::holds_alternative<Exited>(ok(h.wait(60s))));
  for (auto& h : handles) {
    EXPECT_EQ(channelText(h, LogChannel::kStdout), "2\n");
    ASSERT_FALSE(h.remove());
  }
  std::this_thread::sleep_for(200ms);  // the spare built after the last child
  // The spare built after the last child may be missing at the first count
  // and present now: its dozen descriptors, not 200 processes' worth.
  EXPECT_LE(testing::countEntries("/proc/self/fd"), fds + 16) << "descriptors of ended processes were kept";
  EXPECT_EQ(testing::countEntries("/proc/self/task"), threads);
  EXPECT_LE(testing::childrenOfThisProcess(), children + 1) << "the spare at most; no zombie";
  EXPECT_TRUE(ok(service().list()).empty());
}

// A child that writes a lot in its writable tree gets the listener's own
// thread (Linux 6.6+, supervisor.h), and it goes with the child; the test
// above shows children that write nothing get none.
TEST_F(ProcessServiceTest, AChildThatWritesGetsOneListenerThreadUntilItEnds) {
  auto warm = startSh("true");
  (void)ok(warm.wait());
  ASSERT_FALSE(warm.remove());
  std::this_thread::sleep_for(200ms);
  const std::size_t threads = testing::countEntries("/proc/self/task");
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(u.release, "%d.%d", &major, &minor), 2) << u.release;
  const std::size_t own = major > 6 || (major == 6 && minor >= 6) ? 1 : 0;
  auto h = startSh("for i in $(seq 1 100); do echo $i > written-$i; done && echo x > written && echo wrote && sleep 1");
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (channelText(h, LogChannel::kStdout) != "wrote\n" && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(channelText(h, LogChannel::kStdout), "wrote\n");
  EXPECT_EQ(testing::countEntries("/proc/self/task"), threads + own) << u.release;
  EXPECT_TRUE(std::holds_alternative<Exited>(ok(h.wait(60s))));
  ASSERT_FALSE(h.remove());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(testing::countEntries("/proc/self/task"), threads) << "the listener's thread outlived its child";
  std::ifstream in(work_ + "/written");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "x\n");
}

}  // namespace
}  // namespace stockade
