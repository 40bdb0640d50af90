// The splice pipe pool (proxy/pipe_pool.h), with real pipes.
#include "proxy/pipe_pool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace stockade::proxy {
namespace {

TEST(PipePoolTest, APipeIsOnLoanOnlyWithinTheBudgetAndComesBackForReuse) {
  PipePool pool(4 * PipePool::kMinPipeBytes);
  std::vector<PipeLease> leases;
  for (int i = 0; i < 4; ++i) {
    leases.push_back(pool.acquire());
    ASSERT_TRUE(leases.back()) << i;
    EXPECT_GE(leases.back().capacity(), PipePool::kMinPipeBytes);
  }
  EXPECT_FALSE(pool.acquire()) << "the budget is spent: the caller copies";
  EXPECT_EQ(pool.pipesOpen(), 4u);
  int reused = leases.back().writeFd();
  leases.pop_back();
  EXPECT_EQ(pool.idle(), 1u);
  PipeLease again = pool.acquire();
  ASSERT_TRUE(again);
  EXPECT_EQ(again.writeFd(), reused) << "an idle pipe is lent again before a new one is made";
  EXPECT_EQ(pool.pipesOpen(), 4u);
}

TEST(PipePoolTest, APipeReturnedWithBytesInItIsClosedNotLentAgain) {
  PipePool pool(PipePool::kMinPipeBytes * 2);
  PipeLease lease = pool.acquire();
  ASSERT_TRUE(lease);
  ASSERT_EQ(::write(lease.writeFd(), "stale", 5), 5);
  lease.held = 5;
  lease.reset();
  EXPECT_EQ(pool.pipesOpen(), 0u);
  EXPECT_EQ(pool.idle(), 0u);
  EXPECT_EQ(pool.bytesOpen(), 0u);
  PipeLease fresh = pool.acquire();
  ASSERT_TRUE(fresh);
  char c;
  EXPECT_EQ(::read(fresh.readFd(), &c, 1), -1) << "a fresh pipe holds nothing of the failed message";
}

TEST(PipePoolTest, GrowingStaysWithinTheBudget) {
  PipePool small(PipePool::kMinPipeBytes * 2);
  PipeLease a = small.acquire();
  ASSERT_TRUE(a);
  std::size_t before = a.capacity();
  a.grow();
  EXPECT_EQ(a.capacity(), before) << "1 MiB does not fit a 128 KiB budget";

  PipePool big(4 * PipePool::kGrownPipeBytes);
  PipeLease b = big.acquire();
  ASSERT_TRUE(b);
  b.grow();
  if (b.capacity() < PipePool::kGrownPipeBytes)
    GTEST_SKIP() << "the kernel refused F_SETPIPE_SZ to 1 MiB (pipe-max-size or this user's quota)";
  EXPECT_EQ(big.bytesOpen(), b.capacity());
  EXPECT_EQ(::fcntl(b.writeFd(), F_GETPIPE_SZ), static_cast<int>(b.capacity()));
}

TEST(PipePoolTest, OnlyAFewIdlePipesAreKept) {
  PipePool pool(64 * PipePool::kMinPipeBytes);
  {
    std::vector<PipeLease> leases;
    for (std::size_t i = 0; i < PipePool::kMaxIdle + 5; ++i) leases.push_back(pool.acquire());
  }
  EXPECT_EQ(pool.idle(), PipePool::kMaxIdle);
  EXPECT_EQ(pool.pipesOpen(), PipePool::kMaxIdle) << "the rest went back to the kernel";
}

}  // namespace
}  // namespace stockade::proxy
