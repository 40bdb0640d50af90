// The child's error record and the seccomp denial table, without spawning.
#include "platform/linux/child_error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "platform/linux/seccomp.h"
#include "platform/linux/seccomp_compile.h"

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

TEST(SeccompTableTest, EveryDenialHasAReasonAndTheIssuesCallsAreCovered) {
  auto table = seccompDenials({});
  for (const auto& d : table) EXPECT_FALSE(d.reason.empty()) << d.syscall;
  auto has = [&](const std::string& name) {
    return std::any_of(table.begin(), table.end(), [&](const SeccompDenialInfo& d) { return d.syscall == name; });
  };
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "keyctl",
                           "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter",
                           "io_uring_register", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                           "delete_module", "mount", "umount2", "pivot_root", "unshare", "setns", "clone", "clone3",
                           "open_by_handle_at", "name_to_handle_at", "ioctl", "socket"})
    EXPECT_TRUE(has(name)) << name;
}

TEST(SeccompTableTest, UnixSocketsAreDeniedOnlyWhenThePolicyAllowsNone) {
  auto count = [](const SeccompOptions& o) {
    auto t = seccompDenials(o);
    return std::count_if(t.begin(), t.end(), [](const SeccompDenialInfo& d) { return d.syscall == "socket"; });
  };
  EXPECT_EQ(count({false}), count({true}) + 1);
}

// The filter in the library was compiled at build time; it must be exactly
// what the table compiles to now, for every options value.
TEST(SeccompTableTest, TheBuiltInFilterIsTheTableCompiledNow) {
  for (bool allowUnix : {false, true}) {
    auto compiled = compileSeccompFilter({allowUnix});
    ASSERT_TRUE(std::holds_alternative<std::vector<sock_filter>>(compiled)) << std::get<std::string>(compiled);
    const auto& expected = std::get<std::vector<sock_filter>>(compiled);
    const auto builtIn = seccompProgram({allowUnix}).instructions;
    EXPECT_GT(builtIn.size(), 10u);
    ASSERT_EQ(builtIn.size(), expected.size()) << "allowUnixSockets=" << allowUnix;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(builtIn[i].code, expected[i].code) << i;
      EXPECT_EQ(builtIn[i].jt, expected[i].jt) << i;
      EXPECT_EQ(builtIn[i].jf, expected[i].jf) << i;
      EXPECT_EQ(builtIn[i].k, expected[i].k) << i;
    }
  }
}

TEST(SeccompTableTest, AllowingUnixSocketsGivesADifferentFilter) {
  const auto denied = seccompProgram({false}).instructions, allowed = seccompProgram({true}).instructions;
  EXPECT_TRUE(denied.size() != allowed.size() ||
              !std::equal(denied.begin(), denied.end(), allowed.begin(), [](const sock_filter& a, const sock_filter& b) {
                return a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k;
              }));
}

}  // namespace
}  // namespace stockade::platform
