// PTY processes (seed 003's PtyService) with real programs: the child has a
// terminal that answers, sees its size and its changes, and an interactive
// bash gets job control.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/support/process_fixture.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::ok;
using testing::ProcessServiceTest;
using testing::take;

class PtyTest : public ProcessServiceTest {
 protected:
  // Reads the PTY's output until it contains `text` (or the process ends).
  static std::string readUntil(LogStream& stream, std::string& seen, const std::string& text) {
    while (seen.find(text) == std::string::npos) {
      auto event = stream.next();
      if (!event) break;
      if (auto* log = std::get_if<LogEvent>(&event->event)) {
        EXPECT_EQ(log->frame.channel, LogChannel::kPty);
        seen += log->frame.data;
      }
      if (std::holds_alternative<EofEvent>(event->event)) break;
    }
    return seen;
  }
};

TEST_F(PtyTest, TheChildHasATerminalOfTheGivenSize) {
  auto h = ok(service().pty().start("tty; stty size", inWork(), {.cols = 100, .rows = 40}));
  (void)ok(h.wait(30s));
  std::string out = channelText(h, LogChannel::kPty);
  EXPECT_NE(out.find("/dev/pts/"), std::string::npos) << out;
  EXPECT_EQ(out.find("not a tty"), std::string::npos) << out;
  EXPECT_NE(out.find("40 100"), std::string::npos) << out;
  auto dto = ok(h.get());
  EXPECT_EQ(dto.kind, ProcessKind::kPty);
  ASSERT_TRUE(dto.terminal.has_value());
  EXPECT_EQ(dto.terminal->cols, 100);
}

TEST_F(PtyTest, AResizeReachesTheChildAsSigwinchAndTheNewSize) {
  auto h = ok(service().pty().start("trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done", inWork(),
                                    {.cols = 80, .rows = 24}));
  auto stream = take(h.streamLogs());
  std::string seen;
  readUntil(stream, seen, "ready");
  ASSERT_FALSE(h.resize({.cols = 132, .rows = 50}));
  readUntil(stream, seen, "50 132");
  EXPECT_NE(seen.find("50 132"), std::string::npos) << seen;
  EXPECT_EQ(ok(h.get()).terminal->rows, 50);
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kKill}));
}

TEST_F(PtyTest, InputWrittenToThePtyReachesTheProgram) {
  auto h = ok(service().pty().start("read line; echo got-$line", inWork()));
  ASSERT_FALSE(h.stdin("hello\n"));
  (void)ok(h.wait(30s));
  EXPECT_NE(channelText(h, LogChannel::kPty).find("got-hello"), std::string::npos);
}

TEST_F(PtyTest, AnInteractiveBashHasJobControl) {
  ProcessStartOptions o = inWork();
  o.shell = "bash";
  o.env = {{"PS1", "$ "}};
  auto h = ok(service().pty().start(std::nullopt, o));
  auto stream = take(h.streamLogs());
  std::string seen;
  ASSERT_FALSE(h.stdin("sleep 100 &\njobs\n"));
  readUntil(stream, seen, "Running");
  EXPECT_NE(seen.find("[1]"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("no job control"), std::string::npos) << seen;
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kKill}));
  (void)ok(h.wait(30s));
}

// Reads `duplex` until its bytes contain `text`, or it ends.
std::string readDuplexUntil(PtyDuplex& duplex, std::string& seen, const std::string& text) {
  while (seen.find(text) == std::string::npos) {
    auto bytes = duplex.read();
    if (!bytes) break;
    seen += *bytes;
  }
  return seen;
}

TEST_F(PtyTest, AnAttachedDuplexSeesTheFirstBytesAndCarriesInputBothWays) {
  auto [h, duplex] = take(service().pty().attach("echo first-line; while read l; do echo got-$l; done", inWork()));
  std::string seen;
  readDuplexUntil(duplex, seen, "first-line");
  EXPECT_NE(seen.find("first-line"), std::string::npos) << seen;  // written before the caller could read
  ASSERT_FALSE(duplex.write("abc\n"));
  readDuplexUntil(duplex, seen, "got-abc");
  EXPECT_NE(seen.find("got-abc"), std::string::npos) << seen;
  EXPECT_FALSE(duplex.truncated());
  ASSERT_FALSE(h.kill({.signal = ProcessSignal::kKill}));
  // The end of the process ends the reading.
  while (duplex.read()) {
  }
  (void)ok(h.wait(30s));
}

TEST_F(PtyTest, ClosingADuplexDetachesWhileTheProcessRunsOn) {
  auto h = ok(service().pty().start("echo ready; read l; echo got-$l", inWork()));
  auto duplex = take(h.attach());
  std::string seen;
  readDuplexUntil(duplex, seen, "ready");
  // close() from another thread wakes a read() that waits for output.
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    duplex.close();
  });
  EXPECT_EQ(duplex.read(), std::nullopt);
  closer.join();
  auto refused = duplex.write("x\n");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, ProcessErrorCode::kUnsupported);
  EXPECT_EQ(ok(h.get()).state, ProcessState::kRunning);
  // A second attach replays what was retained and still reaches the program.
  auto again = take(h.attach());
  std::string replay;
  readDuplexUntil(again, replay, "ready");
  ASSERT_FALSE(again.write("more\n"));
  readDuplexUntil(again, replay, "got-more");
  EXPECT_NE(replay.find("got-more"), std::string::npos) << replay;
  (void)ok(h.wait(30s));
}

TEST_F(PtyTest, OnlyPtyProcessesAttach) {
  auto plain = startSh("sleep 5");
  auto refused = plain.attach();
  ASSERT_TRUE(std::holds_alternative<ProcessError>(refused));
  EXPECT_EQ(std::get<ProcessError>(refused).code, ProcessErrorCode::kUnsupported);
  ASSERT_FALSE(plain.kill({.signal = ProcessSignal::kKill}));
}

TEST_F(PtyTest, OnlyPtyProcessesResizeAndBadSizesAreCallerBugs) {
  auto plain = startSh("true");
  auto refused = plain.resize({.cols = 10, .rows = 10});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, ProcessErrorCode::kUnsupported);
  EXPECT_THROW((void)service().pty().start("true", inWork(), {.cols = 0, .rows = 10}), std::invalid_argument);
}

}  // namespace
}  // namespace stockade
