// The child's error record, without spawning.
#include "platform/linux/child_error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace stockade::platform {
namespace {

TEST(SetupStepTest, EveryStepHasADistinctName) {
  std::set<std::string> names;
  for (int s = static_cast<int>(SetupStep::kNone); s <= static_cast<int>(SetupStep::kExec); ++s) {
    std::string name = setupStepName(static_cast<SetupStep>(s));
    EXPECT_NE(name, "unknown") << s;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
}

TEST(ChildErrorTest, FormatsCallsWithQuotedStringsNumbersAndHex) {
  ChildError e;
  e.add("mount(").quoted("tmpfs").add(", ").number(-42).add(", ").hex(0x1000).add(")");
  EXPECT_STREQ(e.call, "mount(\"tmpfs\", -42, 0x1000)");
}

TEST(ChildErrorTest, TruncatesInsteadOfOverflowing) {
  ChildError e;
  std::string longText(5000, 'x');
  e.add(longText.c_str()).add("tail");
  EXPECT_EQ(std::string(e.call).size(), sizeof(e.call) - 1);
}

}  // namespace
}  // namespace stockade::platform
