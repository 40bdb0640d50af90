// persist()/restore() (seed 002) on real directories and a real state dir:
// the round trip, default excludes, the 25 MiB limit (and one byte over),
// a flipped byte in a stored checkpoint, conflicts, bad options.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "stockade/checkpoint.h"
#include "tests/support/workspace_fixture.h"

namespace stockade {
namespace {

using testing::codeOf;
using testing::messageOf;
using testing::WorkspaceFixture;

class WorkspacePersistTest : public WorkspaceFixture {
 protected:
  CheckpointStore store(std::uint64_t limit = std::uint64_t{25} << 20) {
    return std::get<CheckpointStore>(CheckpointStore::open({.stateDir = state_, .maxArchiveBytes = limit}));
  }
  Checkpoint persistOk(CheckpointStore& s, Workspace& w, PersistOptions o, std::string_view scope = "conv-1") {
    auto r = s.persist(w, scope, o);
    if (auto* e = std::get_if<WorkspaceError>(&r)) {
      ADD_FAILURE() << e->codeName() << ": " << e->message;
      return {};
    }
    return std::get<Checkpoint>(r);
  }
  std::string checkpointArchive(CheckpointStore& s, const std::string& path) {
    std::string dir = s.checkpointDir("conv-1", path);
    auto j = nlohmann::json::parse(testing::readAll(::open((dir + "/current.json").c_str(), O_RDONLY)));
    return dir + "/" + j.at("archive").get<std::string>();
  }
  std::string state_ = t_.dir("state");
};

TEST_F(WorkspacePersistTest, ARestoreReplacesTheTargetWithWhatWasPersisted) {
  t_.file("ws/app/src/index.js", "console.log(1)\n");
  t_.file("ws/app/package.json", "{}\n");
  t_.symlink("/usr/bin/env", "ws/app/env-link");  // as the sandbox made it: restored as it was
  t_.file("ws/app/node_modules/dep/index.js", "dependency");
  t_.file("ws/app/sub/.git/HEAD", "ref: x\n");
  t_.file("ws/app/sub/__pycache__/x.pyc", "bytecode");
  t_.file("ws/app/tmp/scratch", "scratch");
  Workspace w = open();
  CheckpointStore s = store();
  Checkpoint cp = persistOk(s, w, {.path = "/workspace/app", .exclude = {"tmp"}});
  EXPECT_EQ(cp.sha256.size(), 64u);
  EXPECT_GT(cp.size, 0u);
  EXPECT_EQ(cp.size % 512, 0u);
  EXPECT_EQ(cp.persistedAt.size(), 24u) << cp.persistedAt;  // 2025-01-02T03:04:05.678Z
  EXPECT_FALSE(cp.etag.empty());
  EXPECT_EQ(std::filesystem::file_size(checkpointArchive(s, "/workspace/app")), cp.size);

  // The project changes; restore puts back exactly what was persisted.
  t_.file("ws/app/src/index.js", "changed");
  t_.file("ws/app/new-file", "new");
  std::filesystem::remove(ws_ + "/app/package.json");
  auto r = s.restore(w, "conv-1", {.path = "app"});
  ASSERT_EQ(codeOf(r), "ok") << messageOf(r);
  ASSERT_TRUE(std::get<RestoreResult>(r).restored);
  EXPECT_EQ(*std::get<RestoreResult>(r).checkpoint, cp);
  auto after = testing::listTree(ws_ + "/app");
  EXPECT_EQ(after.count("new-file"), 0u);
  EXPECT_EQ(after.at("package.json").substr(0, 11), "file 0644 3");
  EXPECT_EQ(after.at("src/index.js"), "file 0644 15 " + testing::sha256Hex("console.log(1)\n"));
  EXPECT_EQ(after.at("env-link"), "symlink -> /usr/bin/env");
  // Default and given excludes stayed out, at any depth.
  EXPECT_EQ(after.count("node_modules"), 0u);
  EXPECT_EQ(after.count("sub/.git"), 0u);
  EXPECT_EQ(after.count("sub/__pycache__"), 0u);
  EXPECT_EQ(after.count("tmp"), 0u);
  EXPECT_EQ(after.count("sub"), 1u);
}

TEST_F(WorkspacePersistTest, ALaterSandboxOfTheSameScopeRestoresAndAnotherScopeFindsNothing) {
  t_.file("ws/app/a.txt", "A");
  Workspace w = open();
  CheckpointStore s = store();
  persistOk(s, w, {.path = "app"});
  // A new sandbox, a new empty workspace.
  std::string fresh = t_.dir("fresh");
  auto rules = std::make_shared<DerivedRules>(deriveRules(
      R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [")" + fresh + R"("], "denyWrite": []}})"));
  Workspace w2 = std::get<Workspace>(Workspace::open({.hostPath = fresh, .rules = [rules] { return *rules; }}));
  auto r = s.restore(w2, "conv-1", {.path = "/workspace/app"});
  ASSERT_EQ(codeOf(r), "ok") << messageOf(r);
  EXPECT_TRUE(std::get<RestoreResult>(r).restored);
  EXPECT_EQ(testing::listTree(fresh + "/app").count("a.txt"), 1u);
  auto none = s.restore(w2, "conv-2", {.path = "/workspace/app"});
  ASSERT_EQ(codeOf(none), "ok");
  EXPECT_FALSE(std::get<RestoreResult>(none).restored);
  EXPECT_EQ(std::get<RestoreResult>(none).reason, "not_found");
}

TEST_F(WorkspacePersistTest, AProjectOf25MiBAndOneByteIsOverTheDefaultLimitAndNothingIsStored) {
  t_.file("ws/app/blob", std::string((25u << 20) + 1, 'x'));
  Workspace w = open();
  CheckpointStore s = store();
  auto r = s.persist(w, "conv-1", {.path = "/workspace/app"});
  EXPECT_EQ(codeOf(r), "SANDBOX_LIMIT_EXCEEDED");
  EXPECT_NE(messageOf(r).find("26214400"), std::string::npos) << messageOf(r);
  std::string dir = s.checkpointDir("conv-1", "/workspace/app");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "lock") << "left behind: " << e.path();
  auto none = s.restore(w, "conv-1", {.path = "app"});
  ASSERT_EQ(codeOf(none), "ok");
  EXPECT_FALSE(std::get<RestoreResult>(none).restored);
}

TEST_F(WorkspacePersistTest, AnArchiveOfExactlyTheLimitIsStoredAndOneByteLessIsNot) {
  t_.file("ws/app/f", std::string(100000, 'f'));
  Workspace w = open();
  CheckpointStore probe = store();
  Checkpoint cp = persistOk(probe, w, {.path = "app"}, "probe");
  CheckpointStore exact = store(cp.size);
  EXPECT_EQ(codeOf(exact.persist(w, "conv-1", {.path = "app"})), "ok");
  CheckpointStore under = store(cp.size - 1);
  EXPECT_EQ(codeOf(under.persist(w, "conv-2", {.path = "app"})), "SANDBOX_LIMIT_EXCEEDED");
}

TEST_F(WorkspacePersistTest, AFlippedByteInAStoredCheckpointIsDataCorruptedAndTheTargetIsUntouched) {
  t_.file("ws/app/data.txt", std::string(5000, 'd'));
  t_.file("ws/app/other.txt", "other");
  Workspace w = open();
  CheckpointStore s = store();
  persistOk(s, w, {.path = "app"});
  t_.file("ws/app/data.txt", "the target as it is now");
  const std::string archive = checkpointArchive(s, "/workspace/app");
  std::string original = testing::readAll(::open(archive.c_str(), O_RDONLY));
  auto corruptAt = [&](std::size_t offset) {
    std::string bytes = original;
    bytes[offset] ^= 0x01;
    std::ofstream(archive, std::ios::binary | std::ios::trunc) << bytes;
  };
  const auto before = workspaceListing();
  // A byte of file data (the archive still parses), then a byte of a header
  // (it no longer does): both corrupted, neither touches the target.
  std::size_t data = original.find(std::string(5000, 'd'));
  ASSERT_NE(data, std::string::npos);
  for (std::size_t offset : {data + 1234, std::size_t{10}}) {
    SCOPED_TRACE(offset);
    corruptAt(offset);
    auto r = s.restore(w, "conv-1", {.path = "app"});
    EXPECT_EQ(codeOf(r), "SANDBOX_DATA_CORRUPTED") << messageOf(r);
    EXPECT_EQ(workspaceListing(), before);
  }
  // Truncated: the size is wrong before anything is read.
  std::ofstream(archive, std::ios::binary | std::ios::trunc) << original.substr(0, original.size() - 512);
  EXPECT_EQ(codeOf(s.restore(w, "conv-1", {.path = "app"})), "SANDBOX_DATA_CORRUPTED");
  // Missing, or a record that is not JSON.
  std::filesystem::remove(archive);
  EXPECT_EQ(codeOf(s.restore(w, "conv-1", {.path = "app"})), "SANDBOX_DATA_CORRUPTED");
  std::ofstream(s.checkpointDir("conv-1", "app") + "/current.json", std::ios::trunc) << "{not json";
  EXPECT_EQ(codeOf(s.restore(w, "conv-1", {.path = "app"})), "SANDBOX_DATA_CORRUPTED");
  EXPECT_EQ(workspaceListing(), before);
  // And the intact original restores.
  std::ofstream(archive, std::ios::binary | std::ios::trunc) << original;
  persistOk(s, w, {.path = "app"});
  EXPECT_EQ(codeOf(s.restore(w, "conv-1", {.path = "app"})), "ok");
}

TEST_F(WorkspacePersistTest, AnotherProcessHoldingTheCheckpointIsAConflict) {
  t_.file("ws/app/a", "a");
  Workspace w = open();
  CheckpointStore s = store();
  persistOk(s, w, {.path = "app"});
  // Its own open file description, as another process would have.
  int fd = ::open((s.checkpointDir("conv-1", "app") + "/lock").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto p = s.persist(w, "conv-1", {.path = "app"});
  EXPECT_EQ(codeOf(p), "SANDBOX_CONFLICT") << messageOf(p);
  EXPECT_EQ(codeOf(s.restore(w, "conv-1", {.path = "app"})), "SANDBOX_CONFLICT");
  ::close(fd);
  EXPECT_EQ(codeOf(s.persist(w, "conv-1", {.path = "app"})), "ok");
}

TEST_F(WorkspacePersistTest, ASecondPersistWhileOneRunsForTheSameSandboxIsAConflict) {
  t_.file("ws/app/big", std::string(20 << 20, 'b'));
  t_.file("ws/other/small", "s");
  Workspace w = open();
  CheckpointStore s = store();
  std::atomic<bool> done{false};
  std::atomic<int> conflicts{0}, oks{0}, otherErrors{0};
  auto count = [&](const WorkspaceResult<Checkpoint>& r) {
    if (codeOf(r) == "SANDBOX_CONFLICT") ++conflicts;
    else if (codeOf(r) == "ok") ++oks;
    else ++otherErrors;
  };
  std::thread first([&] {
    for (int i = 0; i < 5; ++i) count(s.persist(w, "conv-1", {.path = "app"}));
    done = true;
  });
  while (!done) count(s.persist(w, "conv-1", {.path = "other"}));
  first.join();
  EXPECT_GT(conflicts.load(), 0);  // one ran while the other was refused, whichever came first
  EXPECT_GT(oks.load(), 0);
  EXPECT_EQ(otherErrors.load(), 0);
}

TEST_F(WorkspacePersistTest, BadOptionsAndPathsAreRefusedNamingTheField) {
  t_.file("ws/app/a", "a");
  Workspace w = open();
  CheckpointStore s = store();
  for (long t : {0L, -1L}) {
    try {
      (void)s.persist(w, "c", {.path = "app", .timeout = std::chrono::seconds(t)});
      ADD_FAILURE() << "timeout " << t << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("timeout: ")) << e.what();
    }
  }
  EXPECT_THROW((void)s.restore(w, "c", {.path = "app", .timeout = std::chrono::seconds(0)}), std::invalid_argument);
  for (std::string bad : {"a/b", "..", "", "."}) {
    try {
      (void)s.persist(w, "c", {.path = "app", .exclude = {"ok", bad}});
      ADD_FAILURE() << "exclude " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("exclude[1]: ")) << e.what();
    }
  }
  EXPECT_EQ(codeOf(s.persist(w, "c", {.path = "/workspace"})), "invalid_path");
  EXPECT_EQ(codeOf(s.persist(w, "c", {.path = ""})), "invalid_path");
  EXPECT_EQ(codeOf(s.persist(w, "c", {.path = "../outside"})), "invalid_path");
  EXPECT_EQ(codeOf(s.persist(w, "c", {.path = "missing"})), "not_found");
  EXPECT_EQ(codeOf(s.restore(w, "c", {.path = "/workspace"})), "invalid_path");
  // A restore replaces the directory at the name: a symlink there is not one,
  // and what it names stays as it is.
  t_.file("ws/proj/p", "p");
  persistOk(s, w, {.path = "proj"}, "c");
  std::filesystem::remove_all(ws_ + "/proj");
  t_.symlink("app", "ws/proj");
  const auto before = workspaceListing();
  EXPECT_EQ(codeOf(s.restore(w, "c", {.path = "proj"})), "not_directory");
  EXPECT_EQ(workspaceListing(), before);
  EXPECT_EQ(defaultPersistExcludes().size(), 15u);
}

}  // namespace
}  // namespace stockade
