// The ledger against real SQLite files, and recovery against real process
// groups: each one a session of its own, reparented away from the test (as
// a crashed daemon's children are), so only its identity can reach it.
#include "src/ledger/ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "src/ledger/recovery.h"
#include "tests/support/orphan_group.h"
#include "tests/support/temp_dir.h"

namespace stockade::ledger {
namespace {

using testing::spawnOrphanGroup;
using testing::TempDir;

std::unique_ptr<Ledger> openLedger(const std::string& path) {
  auto r = Ledger::open(path);
  if (auto* e = std::get_if<std::string>(&r)) throw std::runtime_error(*e);
  return std::move(std::get<std::unique_ptr<Ledger>>(r));
}


bool alive(const platform::ProcessIdentity& id) {
  auto now = platform::identifyProcess(id.pid);
  return now && now->startTime == id.startTime;
}

bool eventuallyGone(const platform::ProcessIdentity& id) {
  for (int i = 0; i < 500 && alive(id); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return !alive(id);
}

SandboxRecord sandbox(const std::string& id) {
  SandboxRecord r;
  r.id = id;
  r.policyJson = R"({"filesystem":{"allowWrite":["."]}})";
  r.fingerprint = "f00d";
  r.workspace = "/srv/" + id;
  r.workspaceOwned = true;
  r.epoch = "ep_" + id;
  return r;
}

TEST(LedgerTest, SandboxesSurviveReopeningTheFileInWalMode) {
  TempDir dir;
  std::string path = dir / "ledger.db";
  {
    auto l = openLedger(path);
    l->insertSandbox(sandbox("sb_a"));
    l->insertSandbox(sandbox("sb_b"));
    l->updatePolicy("sb_b", R"({"env":{"allow":[]}})", "beef");
    l->setSandboxState("sb_a", SandboxState::kReleased);
    EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
  }
  auto l = openLedger(path);
  auto live = l->liveSandboxes();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].id, "sb_b");
  EXPECT_EQ(live[0].fingerprint, "beef");
  EXPECT_EQ(live[0].policyJson, R"({"env":{"allow":[]}})");
  EXPECT_EQ(live[0].workspace, "/srv/sb_b");
  EXPECT_TRUE(live[0].workspaceOwned);
  EXPECT_EQ(live[0].epoch, "ep_sb_b");
  EXPECT_FALSE(live[0].createdAt.empty());
  EXPECT_EQ(l->sandbox("sb_a")->state, SandboxState::kReleased);
  EXPECT_FALSE(l->sandbox("sb_c"));
  EXPECT_EQ(l->liveSandboxCount(), 1u);
}

TEST(LedgerTest, SnapshotsAreFoundByOperationKeyAcrossAReopen) {
  TempDir dir;
  const std::string path = dir.path() + "/ledger.db";
  {
    auto l = openLedger(path);
    LedgerSnapshots snapshots(*l);
    auto none = snapshots.find("op-1");
    ASSERT_TRUE(std::holds_alternative<std::optional<SnapshotRecord>>(none));
    EXPECT_FALSE(std::get<std::optional<SnapshotRecord>>(none).has_value());
    SnapshotRecord r{.operationKey = "op-1", .snapshotId = "snap_1", .sandboxId = "sb_1"};
    EXPECT_FALSE(snapshots.record(r));
    auto capturing = std::get<std::optional<SnapshotRecord>>(snapshots.find("op-1"));
    ASSERT_TRUE(capturing);
    EXPECT_EQ(capturing->state, SnapshotRecord::State::kCapturing);
    EXPECT_FALSE(capturing->info);
    r.state = SnapshotRecord::State::kComplete;
    r.info = SnapshotInfo{"snap_1", "sb_1", "op-1", std::string(64, 'a'), 10240, "2026-12-01T00:00:00.000Z", "sigstop", 2};
    EXPECT_FALSE(snapshots.record(r));
  }
  auto l = openLedger(path);
  auto found = l->findSnapshot("op-1");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->state, SnapshotRecord::State::kComplete);
  ASSERT_TRUE(found->info);
  EXPECT_EQ(found->info->size, 10240u);
  EXPECT_EQ(found->info->freezeMethod, "sigstop");
  EXPECT_EQ(found->info->frozenProcesses, 2u);
  EXPECT_FALSE(l->findSnapshot("op-2"));
}

TEST(LedgerTest, AStartIsRecordedBeforeDispatchAndUpdatedWhenItEnds) {
  TempDir dir;
  auto l = openLedger(dir / "ledger.db");
  l->insertSandbox(sandbox("sb_a"));
  ASSERT_TRUE(l->beginStart("key-1", "sb_a", "p_1"));
  EXPECT_FALSE(l->beginStart("key-1", "sb_a", "p_2")) << "a processKey names one process";
  EXPECT_EQ(l->process("key-1")->state, ProcessState::kDispatching);
  EXPECT_FALSE(l->process("key-1")->identity);
  platform::ProcessIdentity id{1234, 99, "boot"};
  l->markStarted("key-1", "", id, "/sys/fs/cgroup/x");
  auto r = l->process("key-1");
  EXPECT_EQ(r->state, ProcessState::kRunning);
  EXPECT_EQ(r->identity, id);
  EXPECT_EQ(r->cgroup, "/sys/fs/cgroup/x");
  EXPECT_EQ(l->unfinished().size(), 1u);
  EXPECT_EQ(l->unfinished("sb_other").size(), 0u);
  l->markEnded("key-1", ProcessState::kExited, 3, std::nullopt);
  r = l->process("key-1");
  EXPECT_EQ(r->state, ProcessState::kExited);
  EXPECT_EQ(r->exitCode, 3);
  EXPECT_FALSE(r->signal);
  EXPECT_FALSE(r->endedAt.empty());
  EXPECT_TRUE(l->unfinished().empty());
  std::int64_t e = l->beginEffect("key-1", "signal", "TERM");
  l->endEffect(e, true);
  auto effects = l->effectsOf("key-1");
  ASSERT_EQ(effects.size(), 1u);
  EXPECT_EQ(effects[0].op, "signal");
  EXPECT_EQ(effects[0].detail, "TERM");
  EXPECT_EQ(effects[0].state, "done");
}

TEST(LedgerTest, RecoveryKillsEveryRecordedGroupStillAliveAndMarksItLost) {
  TempDir dir;
  std::string path = dir / "ledger.db";
  std::vector<platform::ProcessIdentity> groups;
  {
    auto l = openLedger(path);
    l->insertSandbox(sandbox("sb_a"));
    for (int i = 0; i < 5; ++i) {
      std::string key = "key-" + std::to_string(i);
      ASSERT_TRUE(l->beginStart(key, "sb_a", "p_" + std::to_string(i)));
      pid_t pid = spawnOrphanGroup();
      auto id = platform::identifyProcess(pid);
      ASSERT_TRUE(id);
      l->markStarted(key, "", *id, "");
      groups.push_back(*id);
    }
    // One that exited before the crash, one the crash caught before its spawn.
    ASSERT_TRUE(l->beginStart("gone", "sb_a", "p_gone"));
    pid_t pid = spawnOrphanGroup();
    auto id = platform::identifyProcess(pid);
    l->markStarted("gone", "", *id, "");
    ::kill(pid, SIGKILL);
    ASSERT_TRUE(eventuallyGone(*id));
    ASSERT_TRUE(l->beginStart("undispatched", "sb_a", "p_u"));
  }  // the daemon "crashes": nothing else is written
  for (const auto& g : groups) ASSERT_TRUE(alive(g));
  auto l = openLedger(path);
  RecoveryReport report = recoverProcesses(*l);
  EXPECT_EQ(report.killed, 5);
  EXPECT_EQ(report.alreadyGone, 1);
  EXPECT_EQ(report.unconfirmed, 1);
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  for (const auto& g : groups) EXPECT_TRUE(eventuallyGone(g)) << g.pid;
  for (int i = 0; i < 5; ++i) {
    auto r = l->process("key-" + std::to_string(i));
    EXPECT_EQ(r->state, ProcessState::kLost);
    EXPECT_EQ(r->termination, Termination::kTerminated);
    EXPECT_EQ(terminateRecorded(*l, "sb_a", r->processKey), TerminateAnswer::kTerminated);
  }
  EXPECT_EQ(l->process("gone")->termination, Termination::kAlreadyExited);
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "gone"), TerminateAnswer::kAlreadyExited);
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "undispatched"), TerminateAnswer::kUnknown)
      << "nothing confirms what happened to a process recorded but never marked started";
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "never-used"), TerminateAnswer::kUnknown);
  EXPECT_EQ(terminateRecorded(*l, "sb_other", "key-0"), TerminateAnswer::kUnknown) << "another sandbox's key";
  EXPECT_TRUE(l->unfinished().empty());
}

TEST(LedgerTest, APidNowNamingAnotherProcessIsNeverSignalled) {
  TempDir dir;
  auto l = openLedger(dir / "ledger.db");
  l->insertSandbox(sandbox("sb_a"));
  // A live process whose record has another start time: the recorded one
  // is gone and its pid reused.
  pid_t pid = spawnOrphanGroup();
  auto real = platform::identifyProcess(pid);
  ASSERT_TRUE(real);
  platform::ProcessIdentity recorded = *real;
  recorded.startTime -= 1;
  ASSERT_TRUE(l->beginStart("reused", "sb_a", "p_r"));
  l->markStarted("reused", "", recorded, "");
  // And a record from an earlier boot.
  platform::ProcessIdentity oldBoot = *real;
  oldBoot.bootId = "00000000-0000-0000-0000-000000000000";
  ASSERT_TRUE(l->beginStart("old-boot", "sb_a", "p_o"));
  l->markStarted("old-boot", "", oldBoot, "");
  RecoveryReport report = recoverProcesses(*l);
  EXPECT_EQ(report.alreadyGone, 2);
  EXPECT_EQ(report.killed, 0);
  EXPECT_TRUE(alive(*real)) << "the process now holding the pid was signalled";
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "reused"), TerminateAnswer::kAlreadyExited);
  ::kill(pid, SIGKILL);
}

TEST(LedgerTest, TerminateKillsARecordedRunningGroupOnceAndAnswersTheSameAfter) {
  TempDir dir;
  auto l = openLedger(dir / "ledger.db");
  l->insertSandbox(sandbox("sb_a"));
  pid_t pid = spawnOrphanGroup();
  auto id = platform::identifyProcess(pid);
  ASSERT_TRUE(l->beginStart("k", "sb_a", "p"));
  l->markStarted("k", "", *id, "");
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "k"), TerminateAnswer::kTerminated);
  EXPECT_TRUE(eventuallyGone(*id));
  EXPECT_EQ(l->process("k")->state, ProcessState::kKilled);
  EXPECT_EQ(terminateRecorded(*l, "sb_a", "k"), TerminateAnswer::kTerminated);
  auto effects = l->effectsOf("k");
  ASSERT_EQ(effects.size(), 1u) << "the second terminate answers from the record";
  EXPECT_EQ(effects[0].op, "terminate");
  EXPECT_EQ(effects[0].state, "done");
}

TEST(LedgerTest, AFailedReleaseIsKeptAndRetriedUntilItSucceeds) {
  TempDir dir;
  std::string path = dir / "ledger.db";
  {
    auto l = openLedger(path);
    l->insertSandbox(sandbox("sb_a"));
    l->insertSandbox(sandbox("sb_b"));
    int calls = 0;
    auto failing = [&](const SandboxRecord&) -> std::optional<std::string> {
      ++calls;
      return "rmdir(\"/srv/sb_a\") failed: EBUSY";
    };
    EXPECT_EQ(releaseSandbox(*l, *l->sandbox("sb_a"), failing), "rmdir(\"/srv/sb_a\") failed: EBUSY");
    auto a = l->sandbox("sb_a");
    EXPECT_EQ(a->state, SandboxState::kReleaseFailed);
    EXPECT_EQ(a->releaseError, "rmdir(\"/srv/sb_a\") failed: EBUSY");
    EXPECT_EQ(a->releaseAttempts, 1);
    EXPECT_EQ(collectReleases(*l, failing), 0);
    EXPECT_EQ(l->sandbox("sb_a")->releaseAttempts, 2);
    EXPECT_EQ(calls, 2);
    // A daemon that died mid-close leaves `releasing`.
    l->setSandboxState("sb_b", SandboxState::kReleasing);
  }
  auto l = openLedger(path);
  std::vector<std::string> released;
  auto working = [&](const SandboxRecord& s) -> std::optional<std::string> {
    released.push_back(s.id);
    return std::nullopt;
  };
  EXPECT_EQ(collectReleases(*l, working), 2);
  EXPECT_EQ(released, (std::vector<std::string>{"sb_a", "sb_b"}));
  EXPECT_EQ(l->sandbox("sb_a")->state, SandboxState::kReleased);
  EXPECT_EQ(l->sandbox("sb_b")->state, SandboxState::kReleased);
  EXPECT_TRUE(l->liveSandboxes().empty());
  EXPECT_EQ(collectReleases(*l, working), 0);
}

TEST(LedgerTest, AFileFromANewerSchemaOrNotALedgerIsRefused) {
  TempDir dir;
  std::string junk = dir.file("junk.db", std::string(4096, 'x'));
  auto r = Ledger::open(junk);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("junk.db"), std::string::npos);
}

}  // namespace
}  // namespace stockade::ledger
