// Snapshots (seed 000) with real processes writing into the workspace:
// freezing (the cgroup freezer and SIGSTOP), a consistent capture, thawing,
// the ledger under the operation key, timeouts, restoring into a new
// workspace and a corrupted snapshot.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "platform/linux/freezer.h"
#include "stockade/snapshot.h"
#include "tests/support/workspace_fixture.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::codeOf;
using testing::messageOf;
using testing::WorkspaceFixture;

// A shell loop in its own process group, killed with it at the end.
class Writer {
 public:
  explicit Writer(const std::string& script) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~Writer() {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGCONT);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

long lastNumber(const std::string& lines) {
  auto end = lines.find_last_not_of('\n');
  if (end == std::string::npos) return 0;
  auto start = lines.rfind('\n', end);
  return std::stol(lines.substr(start == std::string::npos ? 0 : start + 1, end + 1));
}

// The loop's invariant: `n` holds i, then `log` gets i; each log line is one
// more than the last. A capture taken while the loop runs unfrozen reads `n`
// and `log` at different moments; a frozen one sees at most one step apart.
const char* kCounterLoop =
    "i=0; while :; do i=$((i+1)); printf '%s\\n' \"$i\" > n.tmp; mv n.tmp n; printf '%s\\n' \"$i\" >> log; done";

class WorkspaceSnapshotTest : public WorkspaceFixture, public ::testing::WithParamInterface<SnapshotFreezing> {
 protected:
  SnapshotStore store() {
    // A process in uninterruptible sleep (disk I/O on a loaded machine) stops
    // only when it leaves it: a generous quiesce time.
    return std::get<SnapshotStore>(
        SnapshotStore::open({.stateDir = state_, .quiesceTimeout = std::chrono::seconds(60), .freezing = GetParam()}));
  }
  std::string state_ = t_.dir("state");
};

TEST_P(WorkspaceSnapshotTest, ASnapshotWhileAProcessWritesRestoresAConsistentTreeAndThaws) {
  // Time for the loop to run on while the tree is read, were it not frozen
  // (without the freeze, this test sees n and log ten or more steps apart).
  t_.file("ws/pad/a", std::string(30 << 20, 'x'));
  Workspace w = open();
  Writer writer("cd " + ws_ + " && " + kCounterLoop);
  std::this_thread::sleep_for(300ms);
  SnapshotStore s = store();
  auto r = s.snapshot(w, {.sandboxId = "sb-1", .operationKey = "op-1", .processRoots = [&] {
                            return std::vector<int>{writer.pid()};
                          }});
  ASSERT_EQ(codeOf(r), "ok") << messageOf(r);
  const SnapshotInfo info = std::get<SnapshotInfo>(r);
  EXPECT_GE(info.frozenProcesses, 1u);
  if (GetParam() == SnapshotFreezing::kSigstopOnly) {
    EXPECT_EQ(info.freezeMethod, "sigstop");
  } else if (::geteuid() == 0 && std::filesystem::exists("/sys/fs/cgroup/freezer/cgroup.procs")) {
    EXPECT_EQ(info.freezeMethod, "cgroup-v1-freezer");
  }
  EXPECT_EQ(info.id.size(), 37u);
  EXPECT_EQ(testing::sha256Hex(readFile(state_ + "/snapshots/" + info.id + ".tar")), info.sha256);

  // Thawed: the loop goes on.
  long atSnapshot = lastNumber(readFile(ws_ + "/log"));
  std::this_thread::sleep_for(200ms);
  EXPECT_GT(lastNumber(readFile(ws_ + "/log")), atSnapshot);

  // Restored into a new workspace: n and log agree.
  std::string fresh = t_.dir("fresh");
  auto rules = std::make_shared<DerivedRules>(deriveRules(
      R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [")" + fresh + R"("], "denyWrite": []}})"));
  Workspace w2 = std::get<Workspace>(Workspace::open({.hostPath = fresh, .rules = [rules] { return *rules; }}));
  auto restored = s.restoreInto(info.id, w2);
  ASSERT_FALSE(restored) << restored->message;
  std::string log = readFile(fresh + "/log");
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), '\n');  // no half-written line
  long n = std::stol(readFile(fresh + "/n"));
  long last = lastNumber(log);
  EXPECT_TRUE(last == n || last == n - 1) << "n=" << n << " last log line=" << last;
  // Every line is one more than the one before.
  std::istringstream lines(log);
  long expect = 1, v = 0;
  while (lines >> v) ASSERT_EQ(v, expect++);
  // No freezer cgroup is left behind.
  for (const auto& e : std::filesystem::directory_iterator("/sys/fs/cgroup/freezer", std::filesystem::directory_options::skip_permission_denied))
    EXPECT_FALSE(e.path().filename().string().starts_with("stockade-freeze-" + std::to_string(::getpid()) + "-"))
        << e.path();
}

TEST_P(WorkspaceSnapshotTest, TheOperationKeyFindsTheSnapshotAndASecondCallReturnsIt) {
  t_.file("ws/a", "a");
  Workspace w = open();
  SnapshotStore s = store();
  auto first = s.snapshot(w, {.sandboxId = "sb-1", .operationKey = "op-key"});
  ASSERT_EQ(codeOf(first), "ok") << messageOf(first);
  auto again = s.snapshot(w, {.sandboxId = "sb-1", .operationKey = "op-key"});
  ASSERT_EQ(codeOf(again), "ok");
  EXPECT_EQ(std::get<SnapshotInfo>(again), std::get<SnapshotInfo>(first));
  auto found = s.lookup("op-key");
  ASSERT_EQ(codeOf(found), "ok");
  EXPECT_EQ(std::get<SnapshotInfo>(found), std::get<SnapshotInfo>(first));
  EXPECT_EQ(std::get<SnapshotInfo>(s.get(std::get<SnapshotInfo>(first).id)), std::get<SnapshotInfo>(first));
  // One archive: the second call captured nothing.
  int tars = 0;
  for (const auto& e : std::filesystem::directory_iterator(state_ + "/snapshots")) tars += e.path().extension() == ".tar";
  EXPECT_EQ(tars, 1);
  EXPECT_EQ(codeOf(s.lookup("never-used")), "not_found");
  EXPECT_EQ(codeOf(s.get("snap_../../etc")), "not_found");
  // A new store over the same state directory (a restarted daemon) finds it too.
  SnapshotStore reopened = store();
  EXPECT_EQ(codeOf(reopened.lookup("op-key")), "ok");
}

TEST_P(WorkspaceSnapshotTest, ATimeoutUndoesEverythingAndThawsTheProcesses) {
  Workspace w = open();
  t_.file("ws/big", std::string(8 << 20, 'b'));
  Writer writer("cd " + ws_ + " && " + kCounterLoop);
  std::this_thread::sleep_for(100ms);
  SnapshotStore s = store();
  auto r = s.snapshot(w, {.sandboxId = "sb-1",
                          .operationKey = "op-timeout",
                          .processRoots = [&] { return std::vector<int>{writer.pid()}; },
                          .timeout = 1ms});
  EXPECT_EQ(codeOf(r), "timeout") << messageOf(r);
  auto found = s.lookup("op-timeout");
  EXPECT_EQ(codeOf(found), "not_found");
  EXPECT_NE(messageOf(found).find("did not complete"), std::string::npos) << messageOf(found);
  for (const auto& e : std::filesystem::directory_iterator(state_ + "/snapshots"))
    EXPECT_NE(e.path().extension(), ".tar") << e.path();
  long before = lastNumber(readFile(ws_ + "/log"));
  std::this_thread::sleep_for(200ms);
  EXPECT_GT(lastNumber(readFile(ws_ + "/log")), before);  // running, not left frozen
}

TEST_P(WorkspaceSnapshotTest, ACorruptedSnapshotIsRefusedAndNothingIsPlaced) {
  t_.file("ws/data", std::string(4000, 'd'));
  Workspace w = open();
  SnapshotStore s = store();
  auto r = s.snapshot(w, {.sandboxId = "sb-1", .operationKey = "op-c"});
  ASSERT_EQ(codeOf(r), "ok");
  std::string tar = state_ + "/snapshots/" + std::get<SnapshotInfo>(r).id + ".tar";
  std::string bytes = readFile(tar);
  bytes[bytes.find(std::string(4000, 'd')) + 100] ^= 1;
  std::ofstream(tar, std::ios::binary | std::ios::trunc) << bytes;
  std::string fresh = t_.dir("fresh");
  auto rules = std::make_shared<DerivedRules>(deriveRules(
      R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [")" + fresh + R"("], "denyWrite": []}})"));
  Workspace w2 = std::get<Workspace>(Workspace::open({.hostPath = fresh, .rules = [rules] { return *rules; }}));
  auto e = s.restoreInto(std::get<SnapshotInfo>(r).id, w2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->codeName(), "SANDBOX_DATA_CORRUPTED") << e->message;
  EXPECT_TRUE(testing::listTree(fresh).empty());
}

TEST_P(WorkspaceSnapshotTest, BadRequestsThrowNamingTheField) {
  Workspace w = open();
  SnapshotStore s = store();
  EXPECT_THROW((void)s.snapshot(w, {.sandboxId = "sb", .operationKey = ""}), std::invalid_argument);
  EXPECT_THROW((void)s.snapshot(w, {.sandboxId = "sb", .operationKey = std::string(257, 'k')}), std::invalid_argument);
  EXPECT_THROW((void)s.snapshot(w, {.sandboxId = "sb", .operationKey = "k", .timeout = 0ms}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Freezing, WorkspaceSnapshotTest,
                         ::testing::Values(SnapshotFreezing::kBest, SnapshotFreezing::kSigstopOnly),
                         [](const auto& p) { return p.param == SnapshotFreezing::kBest ? "Best" : "SigstopOnly"; });

// The freeze itself: a busy process makes no progress while frozen, and
// resumes after the thaw -- by each mechanism.
class FreezeTest : public WorkspaceFixture, public ::testing::WithParamInterface<platform::FreezePreference> {};

TEST_P(FreezeTest, AFrozenTreeMakesNoProgressUntilThawed) {
  Writer writer("cd " + ws_ + " && " + kCounterLoop);
  std::this_thread::sleep_for(100ms);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  auto frozen = platform::freezeProcessTrees([&] { return std::vector<pid_t>{writer.pid()}; }, GetParam(), deadline,
                                             deadline);
  ASSERT_TRUE(std::holds_alternative<platform::FrozenProcesses>(frozen))
      << std::get<platform::FreezeFailure>(frozen).message;
  auto& f = std::get<platform::FrozenProcesses>(frozen);
  long during = lastNumber(readFile(ws_ + "/log"));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(lastNumber(readFile(ws_ + "/log")), during);
  if (f.method() == platform::FreezeMethod::kSigstop) {
    // Stopped, or a vfork() parent (the shell starting mv) held in D by its
    // stopped child.
    auto tree = platform::descendantsOf(platform::listProcesses(), {writer.pid()});
    for (const auto& p : tree) {
      bool heldByChild = p.state == 'D' && std::any_of(tree.begin(), tree.end(), [&](const platform::ProcStat& c) {
                           return c.ppid == p.pid && c.state == 'T';
                         });
      EXPECT_TRUE(p.state == 'T' || p.state == 'Z' || heldByChild) << p.pid << " in state " << p.state;
    }
  }
  ASSERT_FALSE(f.thaw());
  std::this_thread::sleep_for(200ms);
  EXPECT_GT(lastNumber(readFile(ws_ + "/log")), during);
}

// SIGSTOP's thaw sends SIGCONT only to what it stopped itself.
class SigstopFreezeTest : public WorkspaceFixture {};

TEST_F(SigstopFreezeTest, AProcessStoppedBeforeTheFreezeStaysStoppedAfterIt) {
  Writer writer("sleep 100");
  std::this_thread::sleep_for(50ms);
  ::kill(writer.pid(), SIGSTOP);
  std::this_thread::sleep_for(50ms);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  {
    auto frozen = platform::freezeProcessTrees([&] { return std::vector<pid_t>{writer.pid()}; },
                                               platform::FreezePreference::kSigstopOnly, deadline, deadline);
    ASSERT_TRUE(std::holds_alternative<platform::FrozenProcesses>(frozen));
  }  // thawed here
  std::this_thread::sleep_for(50ms);
  auto all = platform::listProcesses();
  auto me = platform::descendantsOf(all, {writer.pid()});
  ASSERT_FALSE(me.empty());
  EXPECT_EQ(me.front().state, 'T');
}

// A vfork() parent whose child stopped before its exec sleeps in D and
// cannot stop itself: it counts as frozen (it runs nothing until the child
// goes on), and the thaw leaves no stop pending on it.
TEST_F(SigstopFreezeTest, AVforkParentHeldByItsStoppedChildCountsAsFrozen) {
  pid_t parent = ::fork();
  if (parent == 0) {
    ::setpgid(0, 0);
    pid_t child = ::vfork();
    if (child == 0) {
      ::kill(::getpid(), SIGSTOP);  // stopped between vfork() and exec, as a SIGSTOP freeze can leave it
      ::_exit(0);
    }
    int status = 0;
    ::_exit(child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) ? 0 : 1);
  }
  ASSERT_GT(parent, 0);
  ::setpgid(parent, parent);
  struct Reap {  // both, however the test ends
    pid_t pid;
    bool reaped = false;
    ~Reap() {
      if (reaped) return;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{parent};
  std::vector<platform::ProcStat> tree;
  for (int i = 0; i < 2000; ++i) {  // until the child has stopped and the parent waits for it
    tree = platform::descendantsOf(platform::listProcesses(), {parent});
    if (tree.size() == 2 && tree[0].state == 'D' && tree[1].state == 'T') break;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(tree.size(), 2u);
  ASSERT_EQ(tree[0].state, 'D');
  ASSERT_EQ(tree[1].state, 'T');
  auto deadline = std::chrono::steady_clock::now() + 2s;
  {
    auto frozen = platform::freezeProcessTrees([&] { return std::vector<pid_t>{parent}; },
                                               platform::FreezePreference::kSigstopOnly, deadline, deadline);
    ASSERT_TRUE(std::holds_alternative<platform::FrozenProcesses>(frozen))
        << std::get<platform::FreezeFailure>(frozen).message;
    EXPECT_EQ(std::get<platform::FrozenProcesses>(frozen).count(), 2u);
  }  // thawed: the child was stopped before, so it stays stopped
  ::kill(tree[1].pid, SIGCONT);
  // The parent goes on once the child exits: it must neither stay stopped
  // (a SIGSTOP left pending) nor fail.
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 5000 && got == 0; ++i) {
    got = ::waitpid(parent, &status, WNOHANG | WUNTRACED);
    if (got == 0) std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(got, parent) << "the vfork parent did not go on after the thaw";
  ASSERT_FALSE(WIFSTOPPED(status)) << "the vfork parent stopped after the thaw (a SIGSTOP left pending)";
  reap.reaped = true;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, FreezeTest,
                         ::testing::Values(platform::FreezePreference::kBest, platform::FreezePreference::kSigstopOnly),
                         [](const auto& p) { return p.param == platform::FreezePreference::kBest ? "Best" : "SigstopOnly"; });

}  // namespace
}  // namespace stockade
