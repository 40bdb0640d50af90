// The audit schema, its escaping, the aggregation of repeated decisions, the
// per-sandbox cap, and the audit file's refusals.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "src/audit/event.h"
#include "src/audit/file_sink.h"
#include "src/audit/log.h"
#include "src/audit/proxy_event.h"
#include "tests/support/private_mounts.h"
#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"

namespace stockade::audit {
namespace {

TEST(AuditEventTest, TimeIsIso8601UtcWithMilliseconds) {
  auto when = Clock::time_point(std::chrono::milliseconds(1700000000123));
  EXPECT_EQ(timestamp(when), "2023-11-14T22:13:20.123Z");
  auto j = nlohmann::json::parse(line("spawn", {{"pid", 7}}, when));
  EXPECT_EQ(j["time"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["event"], "spawn");
  EXPECT_EQ(j["pid"], 7);
}

TEST(AuditEventTest, EveryControlAndNonAsciiCharacterIsEscapedAndTheValueSurvives) {
  std::string hostile = "$(touch /tmp/x);`id`\"'\n\r\t\x1b[31m\x7f\x01 \xe2\x80\xa8 \xc2\x9b end";
  std::string text = line("proxy", {{"host", hostile}}, Clock::now());
  for (unsigned char c : text) {
    EXPECT_GE(c, 0x20) << "a control byte is written raw: " << text;
    EXPECT_LT(c, 0x7f) << "a byte outside printable ASCII is written raw: " << text;
  }
  EXPECT_EQ(nlohmann::json::parse(text)["host"], hostile) << "escaping changed the value";
}

TEST(AuditEventTest, InvalidUtf8IsReplacedNotWrittenRaw) {
  std::string text = line("proxy", {{"host", std::string("a\xff\xfe" "b")}}, Clock::now());
  for (unsigned char c : text) EXPECT_LT(c, 0x7f);
  EXPECT_EQ(nlohmann::json::parse(text)["host"], "a\xef\xbf\xbd\xef\xbf\xbd" "b");
}

TEST(AuditEventTest, PrintableEscapesEverythingButPrintableAscii) {
  EXPECT_EQ(printable("ok.example"), "\"ok.example\"");
  EXPECT_EQ(printable("a\"b\\\n\x1b\xff"), "\"a\\x22b\\x5c\\x0a\\x1b\\xff\"");
}

struct Collected {
  std::vector<nlohmann::json> events;
  Sink sink() {
    return [this](const std::string& text) { events.push_back(nlohmann::json::parse(text)); };
  }
  std::size_t count(const std::string& event) const {
    std::size_t n = 0;
    for (const auto& e : events) n += e["event"] == event;
    return n;
  }
};

TEST(AuditLogTest, RepeatedIdenticalDecisionsAreWrittenOnceThenCountedAtTheFlush) {
  Collected c;
  Log log;
  log.setSink(c.sink());
  for (int i = 0; i < 1000; ++i)
    log.decision("proxy", {{"sandboxId", "s1"}, {"runId", "r1"}, {"host", "denied.test"}, {"verdict", "denied"},
                           {"durationUs", i}},
                 {"host", "verdict"});
  log.decision("proxy", {{"sandboxId", "s1"}, {"runId", "r1"}, {"host", "other.test"}, {"verdict", "denied"}},
               {"host", "verdict"});
  ASSERT_EQ(c.events.size(), 2u) << "only the first of each decision is written at once";
  EXPECT_EQ(c.events[0]["host"], "denied.test");
  EXPECT_EQ(c.events[1]["host"], "other.test");
  log.flush();
  ASSERT_EQ(c.events.size(), 3u);
  const auto& summary = c.events[2];
  EXPECT_EQ(summary["event"], "proxy");
  EXPECT_EQ(summary["host"], "denied.test");
  EXPECT_EQ(summary["count"], 999);
  EXPECT_TRUE(summary["repeated"].get<bool>());
  EXPECT_LE(summary["firstTime"].get<std::string>(), summary["lastTime"].get<std::string>());
  EXPECT_FALSE(summary.contains("durationUs")) << "not a summed field of this decision";
  log.flush();
  EXPECT_EQ(c.events.size(), 3u) << "nothing new, nothing written";
}

TEST(AuditLogTest, RepeatedProxyDecisionsCarryTheTotalsOfWhatTheirRepeatsMoved) {
  // One allowed host, many uploads: folded into one line, the volume must still show.
  Collected c;
  Log log;
  log.setSink(c.sink());
  proxy::ProxyEvent e;
  e.sandboxId = "s1";
  e.runId = "r1";
  e.protocol = proxy::Protocol::kConnect;
  e.host = "allowed.test";
  e.port = 443;
  e.verdict = proxy::EventVerdict::kAllowed;
  e.rule = "allowedDomains[0]";
  e.bytesUp = 100;
  writeProxyEvent(log, e);
  for (int i = 0; i < 10; ++i) {
    e.bytesUp = 10'000'000;
    e.bytesDown = 7;
    e.duration = std::chrono::microseconds(3);
    writeProxyEvent(log, e);
  }
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0]["bytesUp"], 100);
  log.flush();
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[1]["count"], 10);
  EXPECT_EQ(c.events[1]["bytesUp"], 100'000'000) << c.events[1].dump();
  EXPECT_EQ(c.events[1]["bytesDown"], 70);
  EXPECT_EQ(c.events[1]["durationUs"], 30);
  // The next flush period starts its totals afresh.
  writeProxyEvent(log, e);
  log.flush();
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[2]["bytesUp"], 10'000'000);
}

TEST(AuditLogTest, ADecisionOfAnotherProcessIsNotFoldedIntoThisOnesCount) {
  Collected c;
  Log log;
  log.setSink(c.sink());
  log.decision("denial", {{"sandboxId", "s1"}, {"runId", "r1"}, {"syscall", "ptrace"}}, {"syscall"});
  log.decision("denial", {{"sandboxId", "s1"}, {"runId", "r2"}, {"syscall", "ptrace"}}, {"syscall"});
  EXPECT_EQ(c.events.size(), 2u);
}

TEST(AuditLogTest, TheEndOfASandboxFlushesItsCountsAndLaterOnesAreWrittenAtOnceAgain) {
  Collected c;
  Log log;
  log.setSink(c.sink());
  for (int i = 0; i < 3; ++i) log.decision("denial", {{"sandboxId", "s1"}, {"syscall", "ptrace"}}, {"syscall"});
  log.closeSandbox("s1");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[1]["count"], 2);
  log.decision("denial", {{"sandboxId", "s1"}, {"syscall", "ptrace"}}, {"syscall"});
  EXPECT_EQ(c.events.size(), 3u);
}

TEST(AuditLogTest, ASandboxPastItsCapIsCountedAndAFinalEventSaysHowManyWereDropped) {
  Collected c;
  Log log({.maxEventsPerSandbox = 5});
  log.setSink(c.sink());
  for (int i = 0; i < 50; ++i) log.decision("denial", {{"sandboxId", "noisy"}, {"args", i}}, {"args"});
  for (int i = 0; i < 3; ++i) log.decision("denial", {{"sandboxId", "quiet"}, {"args", i}}, {"args"});
  EXPECT_EQ(c.count("denial"), 8u) << "5 of the noisy sandbox, 3 of the quiet one: one sandbox's flood is its own";
  EXPECT_EQ(c.count("audit_capped"), 1u);
  // The host's own events of the capped sandbox still go in: its exit says how it ended.
  log.write("exit", {{"sandboxId", "noisy"}, {"denials", 50}});
  EXPECT_EQ(c.count("exit"), 1u) << "a child's flood kept its own exit out of the log";
  log.closeSandbox("noisy");
  ASSERT_EQ(c.count("audit_dropped"), 1u);
  EXPECT_EQ(c.events.back()["event"], "audit_dropped");
  EXPECT_EQ(c.events.back()["sandboxId"], "noisy");
  EXPECT_EQ(c.events.back()["dropped"], 45);
  log.closeSandbox("quiet");
  EXPECT_EQ(c.count("audit_dropped"), 1u) << "nothing dropped, nothing said";
}

class AuditFileTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_ + "/bashrc") << "ORIGINAL-BASHRC\n"; }
  testing::TempDir tmp_;
  std::string dir_ = tmp_.path();
};

TEST_F(AuditFileTest, AppendsOneLinePerEvent) {
  auto opened = FileSink::open(dir_ + "/audit.jsonl", {});
  ASSERT_TRUE(std::holds_alternative<FileSink>(opened)) << std::get<std::string>(opened);
  auto& sink = std::get<FileSink>(opened);
  sink.write(line("spawn", {}, Clock::now()));
  sink.write(line("exit", {}, Clock::now()));
  std::string text = testing::readWholeFile(dir_ + "/audit.jsonl");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/audit.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(AuditFileTest, ASymlinkAtTheAuditPathIsRefusedAndItsTargetUntouched) {
  std::filesystem::create_symlink(dir_ + "/bashrc", dir_ + "/audit.jsonl");
  auto opened = FileSink::open(dir_ + "/audit.jsonl", {});
  ASSERT_TRUE(std::holds_alternative<std::string>(opened));
  EXPECT_NE(std::get<std::string>(opened).find("is a symlink"), std::string::npos) << std::get<std::string>(opened);
  EXPECT_EQ(testing::readWholeFile(dir_ + "/bashrc"), "ORIGINAL-BASHRC\n");
}

TEST_F(AuditFileTest, AParentThatIsASymlinkIsRefused) {
  std::filesystem::create_directories(dir_ + "/real");
  std::filesystem::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  auto opened = FileSink::open(dir_ + "/link/audit.jsonl", {});
  ASSERT_TRUE(std::holds_alternative<std::string>(opened));
  EXPECT_NE(std::get<std::string>(opened).find("is not a real directory"), std::string::npos)
      << std::get<std::string>(opened);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/real/audit.jsonl"));
  EXPECT_TRUE(std::holds_alternative<FileSink>(FileSink::open(dir_ + "/real/audit.jsonl", {})))
      << "the same file by its real path is accepted";
}

TEST_F(AuditFileTest, APathInsideAWritableTreeIsRefusedNamingTheTree) {
  std::filesystem::create_directories(dir_ + "/ws/logs");
  auto opened = FileSink::open(dir_ + "/ws/logs/audit.jsonl", {"/opt/other", dir_ + "/ws"});
  ASSERT_TRUE(std::holds_alternative<std::string>(opened));
  const auto& message = std::get<std::string>(opened);
  EXPECT_NE(message.find("writable tree \"" + dir_ + "/ws\""), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ws/logs/audit.jsonl"));
  EXPECT_TRUE(std::holds_alternative<FileSink>(FileSink::open(dir_ + "/audit.jsonl", {dir_ + "/ws"})))
      << "the neighbour outside the tree is accepted";
}

// FileSink::open()'s answer for `auditPath`, asked in a child process with a
// mount namespace of its own in which `bindSource` is bind-mounted at
// `bindTarget` (a user namespace too when not root, so that the mount is
// allowed). "" when it was accepted; "SETUP: ..." when the child could not
// be set up.
std::string openUnderBind(const std::string& bindSource, const std::string& bindTarget, const std::string& auditPath,
                          const std::vector<std::string>& trees) {
  return stockade::testing::inPrivateMounts([&]() -> std::string {
    if (::mount(bindSource.c_str(), bindTarget.c_str(), nullptr, MS_BIND, nullptr) != 0) return "SETUP: bind";
    auto opened = FileSink::open(auditPath, trees);
    return std::holds_alternative<std::string>(opened) ? std::get<std::string>(opened) : "";
  });
}

TEST_F(AuditFileTest, AWritableTreeReachedThroughABindMountIsRefusedToo) {
  // The sandboxed program writes the tree by its own path, so the audit file
  // is its to rewrite however the operator's path reaches it.
  std::filesystem::create_directories(dir_ + "/ws/sub");
  std::filesystem::create_directories(dir_ + "/view");
  std::filesystem::create_directories(dir_ + "/subview");
  std::filesystem::create_directories(dir_ + "/elsewhere");
  const std::vector<std::string> trees = {dir_ + "/ws"};
  std::string whole = openUnderBind(dir_ + "/ws", dir_ + "/view", dir_ + "/view/audit.jsonl", trees);
  if (whole.starts_with("SETUP:")) GTEST_SKIP() << "no mount namespace for the bind (" << whole << ")";
  EXPECT_NE(whole.find("writable tree \"" + dir_ + "/ws\""), std::string::npos) << whole;
  EXPECT_NE(whole.find("bind mount"), std::string::npos) << whole;
  std::string below = openUnderBind(dir_ + "/ws/sub", dir_ + "/subview", dir_ + "/subview/audit.jsonl", trees);
  EXPECT_NE(below.find("writable tree \"" + dir_ + "/ws\""), std::string::npos) << "a bind of a directory inside the tree: " << below;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ws/audit.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ws/sub/audit.jsonl"));
  // The neighbour: a bind of a directory outside every tree is accepted.
  EXPECT_EQ(openUnderBind(dir_ + "/elsewhere", dir_ + "/view", dir_ + "/view/audit.jsonl", trees), "");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/elsewhere/audit.jsonl"));
}

TEST_F(AuditFileTest, AFileWithAnotherHardLinkIsRefused) {
  std::filesystem::create_directories(dir_ + "/ws");
  std::ofstream(dir_ + "/ws/planted") << "";
  ASSERT_EQ(::link((dir_ + "/ws/planted").c_str(), (dir_ + "/audit.jsonl").c_str()), 0);
  auto opened = FileSink::open(dir_ + "/audit.jsonl", {dir_ + "/ws"});
  ASSERT_TRUE(std::holds_alternative<std::string>(opened));
  EXPECT_NE(std::get<std::string>(opened).find("hard links"), std::string::npos) << std::get<std::string>(opened);
  EXPECT_TRUE(std::holds_alternative<FileSink>(FileSink::open(dir_ + "/own.jsonl", {dir_ + "/ws"})))
      << "a file of its own beside it is accepted";
}

TEST_F(AuditFileTest, AFifoIsRefused) {
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  auto opened = FileSink::open(dir_ + "/fifo", {});
  ASSERT_TRUE(std::holds_alternative<std::string>(opened));
  EXPECT_NE(std::get<std::string>(opened).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace stockade::audit
