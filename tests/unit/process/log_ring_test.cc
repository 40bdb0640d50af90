// The log ring alone: cursors, retention, the shared budget, encodings.
#include "src/process/log_ring.h"

#include <gtest/gtest.h>

namespace stockade::process {
namespace {

const auto kNow = std::chrono::system_clock::time_point{};

TEST(LogRingTest, CursorsAreStrictlyIncreasingAndCompareAsText) {
  LogRing ring(1 << 20, nullptr);
  for (int i = 0; i < 300; ++i) ring.append(LogChannel::kStdout, "x", kNow);
  auto page = ring.read(0, 1000);
  ASSERT_EQ(page.frames.size(), 300u);
  for (std::size_t i = 1; i < page.frames.size(); ++i) {
    EXPECT_GT(page.frames[i].sequence, page.frames[i - 1].sequence);
    EXPECT_GT(LogRing::cursorText(page.frames[i].sequence), LogRing::cursorText(page.frames[i - 1].sequence));
  }
  EXPECT_EQ(LogRing::parseCursor(LogRing::cursorText(255)), 255u);
  EXPECT_FALSE(LogRing::parseCursor("c12"));
  EXPECT_FALSE(LogRing::parseCursor("x000000000000000f"));
  EXPECT_FALSE(LogRing::parseCursor("c000000000000000G"));
}

TEST(LogRingTest, PagesFollowTheCursorWithoutRepeatOrGap) {
  LogRing ring(1 << 20, nullptr);
  for (int i = 1; i <= 10; ++i) ring.append(LogChannel::kStderr, std::to_string(i), kNow);
  auto first = ring.read(0, 4);
  ASSERT_EQ(first.frames.size(), 4u);
  EXPECT_TRUE(first.hasMore);
  auto second = ring.read(first.frames.back().sequence, 100);
  ASSERT_EQ(second.frames.size(), 6u);
  EXPECT_EQ(second.frames.front().bytes, "5");
  EXPECT_FALSE(second.hasMore);
  EXPECT_TRUE(ring.read(ring.lastSequence(), 10).frames.empty());
  EXPECT_FALSE(second.truncatedHead);
}

TEST(LogRingTest, RetentionDropsTheOldestCountsThemAndAReadFromBeforeSaysSo) {
  LogRing ring(10, nullptr);
  for (int i = 0; i < 5; ++i) ring.append(LogChannel::kStdout, "abcd", kNow);  // 20 bytes into 10
  EXPECT_EQ(ring.heldBytes(), 8u);
  EXPECT_EQ(ring.droppedBytes(), 12u);
  EXPECT_EQ(ring.droppedFrames(), 3u);
  EXPECT_TRUE(ring.truncatedHead());
  auto fromStart = ring.read(0, 10);
  EXPECT_TRUE(fromStart.truncatedHead);
  EXPECT_EQ(fromStart.firstAvailable, 4u);
  EXPECT_EQ(fromStart.frames.front().sequence, 4u);
  EXPECT_FALSE(ring.read(3, 10).truncatedHead) << "nothing after cursor 3 was dropped";
}

TEST(LogRingTest, TheNewestFrameIsKeptEvenWhenLargerThanTheRing) {
  LogRing ring(4, nullptr);
  ring.append(LogChannel::kStdout, "0123456789", kNow);
  EXPECT_EQ(ring.read(0, 10).frames.size(), 1u);
}

TEST(LogRingTest, ASharedBudgetCapsEveryRingTogether) {
  auto budget = std::make_shared<LogRing::Budget>(100);
  LogRing a(1000, budget), b(1000, budget);
  for (int i = 0; i < 10; ++i) a.append(LogChannel::kStdout, std::string(10, 'a'), kNow);
  EXPECT_EQ(budget->usedBytes.load(), 100u);
  for (int i = 0; i < 5; ++i) b.append(LogChannel::kStdout, std::string(10, 'b'), kNow);
  EXPECT_LE(budget->usedBytes.load(), 100u + 10u);
  EXPECT_GT(b.droppedFrames(), 0u) << "the ring that went over the budget paid for it";
  a.clear();
  b.clear();
  EXPECT_EQ(budget->usedBytes.load(), 0u);
}

TEST(LogRingTest, Utf8AndBase64) {
  EXPECT_TRUE(isUtf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(isUtf8("\xff"));
  EXPECT_FALSE(isUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(isUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(isUtf8("\xe2\x82"));          // cut
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64(std::string("\xff\x00\x10", 3)), "/wAQ");
}

}  // namespace
}  // namespace stockade::process
