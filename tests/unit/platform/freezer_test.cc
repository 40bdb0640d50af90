#include "platform/linux/freezer.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace stockade::platform {
namespace {

TEST(ProcStatTest, FieldsAreCountedAfterTheLastParenthesis) {
  auto s = parseProcStat(
      "4242 (a (weird) name) T 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1234 56 1844");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->ppid, 17);
  EXPECT_EQ(s->starttime, 987654u);
  EXPECT_FALSE(parseProcStat("12 (x) R"));
  EXPECT_FALSE(parseProcStat("garbage"));
}

TEST(ProcStatTest, OurOwnStatParses) {
  auto all = listProcesses();
  auto self = std::find_if(all.begin(), all.end(), [](auto& p) { return p.pid == ::getpid(); });
  ASSERT_NE(self, all.end());
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_GT(self->starttime, 0u);
}

TEST(DescendantsTest, WholeTreesFromTheRootsAndNothingElse) {
  std::vector<ProcStat> all = {{1, 0, 'S', 1}, {10, 1, 'S', 2}, {11, 10, 'S', 3}, {12, 11, 'T', 4},
                               {20, 1, 'S', 5}, {21, 20, 'S', 6}, {30, 12, 'Z', 7}};
  auto got = descendantsOf(all, {10});
  std::vector<pid_t> pids;
  for (auto& p : got) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<pid_t>{10, 11, 12, 30}));
  EXPECT_TRUE(descendantsOf(all, {99}).empty());
  EXPECT_EQ(descendantsOf(all, {10, 11}).size(), 4u);  // overlapping roots: once each
}

}  // namespace
}  // namespace stockade::platform
