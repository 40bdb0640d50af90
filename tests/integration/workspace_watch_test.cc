// watch(): real inotify events from real file operations.
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/support/workspace_fixture.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::codeOf;
using testing::WorkspaceFixture;

class WorkspaceWatchTest : public WorkspaceFixture {
 protected:
  // Events until `done` says enough, or 5 s pass.
  std::vector<WatchEvent> collect(Watch& w, const std::function<bool(const std::vector<WatchEvent>&)>& done) {
    std::vector<WatchEvent> all;
    auto until = std::chrono::steady_clock::now() + 5s;
    while (!done(all) && std::chrono::steady_clock::now() < until) {
      auto r = w.next(100ms);
      if (auto* e = std::get_if<WorkspaceError>(&r)) {
        all.push_back(WatchEvent{.type = WatchEvent::Type::kOverflow, .detail = "ERROR " + e->message});
        break;
      }
      auto& batch = std::get<std::vector<WatchEvent>>(r);
      all.insert(all.end(), batch.begin(), batch.end());
    }
    return all;
  }
  static bool has(const std::vector<WatchEvent>& events, WatchEvent::Type type, const std::string& path) {
    return std::any_of(events.begin(), events.end(), [&](auto& e) { return e.type == type && e.path == path; });
  }
  Watch watchOk(Workspace& w, const std::string& path, bool recursive) {
    auto r = w.watch(path, recursive);
    if (auto* e = std::get_if<WorkspaceError>(&r)) throw std::runtime_error(e->message);
    return std::get<Watch>(std::move(r));
  }
};

TEST_F(WorkspaceWatchTest, CreateModifyRenameAndDeleteAreReportedWithSandboxPaths) {
  Workspace ws = open();
  Watch w = watchOk(ws, "/workspace", false);
  t_.file("ws/a.txt", "1");
  { std::ofstream(ws_ + "/a.txt", std::ios::app) << "more"; }
  ::rename((ws_ + "/a.txt").c_str(), (ws_ + "/b.txt").c_str());
  ::unlink((ws_ + "/b.txt").c_str());
  auto events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kDelete, "/workspace/b.txt"); });
  EXPECT_TRUE(has(events, WatchEvent::Type::kCreate, "/workspace/a.txt"));
  EXPECT_TRUE(has(events, WatchEvent::Type::kModify, "/workspace/a.txt"));
  auto rename = std::find_if(events.begin(), events.end(), [](auto& e) { return e.type == WatchEvent::Type::kRename; });
  ASSERT_NE(rename, events.end());
  EXPECT_EQ(rename->oldPath, "/workspace/a.txt");
  EXPECT_EQ(rename->path, "/workspace/b.txt");
  EXPECT_TRUE(has(events, WatchEvent::Type::kDelete, "/workspace/b.txt"));
  EXPECT_EQ(watchEventTypeName(WatchEvent::Type::kRename), "rename");
}

TEST_F(WorkspaceWatchTest, ARecursiveWatchFollowsNewDirectoriesAndWhatTheyAlreadyHold) {
  Workspace ws = open();
  Watch w = watchOk(ws, "/workspace", true);
  // Made in one go: the file may exist before the new directory is watched.
  std::filesystem::create_directories(ws_ + "/new/deeper");
  t_.file("ws/new/deeper/f", "x");
  auto events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kCreate, "/workspace/new/deeper/f"); });
  EXPECT_TRUE(has(events, WatchEvent::Type::kCreate, "/workspace/new"));
  EXPECT_TRUE(has(events, WatchEvent::Type::kCreate, "/workspace/new/deeper/f"));
  // Later changes deep inside are seen too.
  t_.file("ws/new/deeper/g", "y");
  events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kCreate, "/workspace/new/deeper/g"); });
  EXPECT_TRUE(has(events, WatchEvent::Type::kCreate, "/workspace/new/deeper/g"));
}

TEST_F(WorkspaceWatchTest, ANonRecursiveWatchIgnoresSubdirectories) {
  t_.dir("ws/sub");
  Workspace ws = open();
  Watch w = watchOk(ws, "/workspace", false);
  t_.file("ws/sub/inner", "x");
  t_.file("ws/top", "x");
  auto events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kCreate, "/workspace/top"); });
  EXPECT_FALSE(has(events, WatchEvent::Type::kCreate, "/workspace/sub/inner"));
}

TEST_F(WorkspaceWatchTest, AFullQueueEndsInOneOverflowEventNeverAHiddenLoss) {
  Workspace ws = open(testing::kWorkspacePolicy, {.maxWatchEvents = 8});
  Watch w = watchOk(ws, "/workspace", false);
  for (int i = 0; i < 50; ++i) t_.file("ws/f" + std::to_string(i), "x");
  ::usleep(100'000);
  auto r = w.next(1s);
  ASSERT_EQ(codeOf(r), "ok");
  auto& events = std::get<std::vector<WatchEvent>>(r);
  ASSERT_FALSE(events.empty());
  EXPECT_LE(events.size(), 8u);
  EXPECT_EQ(events.back().type, WatchEvent::Type::kOverflow);
  EXPECT_NE(events.back().detail.find("dropped"), std::string::npos) << events.back().detail;
  EXPECT_EQ(std::count_if(events.begin(), events.end(), [](auto& e) { return e.type == WatchEvent::Type::kOverflow; }), 1);
  // The stream goes on afterwards.
  t_.file("ws/after", "x");
  auto later = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kCreate, "/workspace/after"); });
  EXPECT_TRUE(has(later, WatchEvent::Type::kCreate, "/workspace/after"));
}

TEST_F(WorkspaceWatchTest, ReadDeniedPathsAreNotReportedAndCannotBeWatched) {
  t_.dir("ws/.secret");
  Workspace ws = open();
  EXPECT_EQ(codeOf(ws.watch("/workspace/.secret", false)), "permission_denied");
  Watch w = watchOk(ws, "/workspace", true);
  t_.file("ws/.secret/key", "x");
  t_.file("ws/visible", "x");
  auto events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kCreate, "/workspace/visible"); });
  for (const auto& e : events) EXPECT_EQ(e.path.find(".secret"), std::string::npos) << e.path;
}

TEST_F(WorkspaceWatchTest, AWatchedDirectoryThatGoesEndsWithItsDeleteThenUnavailable) {
  t_.dir("ws/d");
  Workspace ws = open();
  Watch w = watchOk(ws, "/workspace/d", false);
  std::filesystem::remove(ws_ + "/d");
  auto events = collect(w, [](auto& all) { return has(all, WatchEvent::Type::kDelete, "/workspace/d"); });
  EXPECT_TRUE(has(events, WatchEvent::Type::kDelete, "/workspace/d"));
  auto r = w.next(100ms);
  EXPECT_EQ(codeOf(r), "unavailable");
  EXPECT_EQ(codeOf(ws.watch("/workspace/inner-missing", false)), "not_found");
}

}  // namespace
}  // namespace stockade
