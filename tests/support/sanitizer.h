#pragma once

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string_view>

// Whether this test binary (and so the stockade binaries of its build tree)
// is built with a sanitizer: scripts/ci/stage-30-asan.sh and stage-40-tsan.sh.
// Their runtimes change what a test may measure of memory: ASan's quarantine
// holds freed memory back and its shadow is resident memory the program never
// asked for; TSan's shadow and history grow with the run. A bound on resident
// memory is checked only where kSanitized is false; descriptor, thread and
// child counts, and every byte's content, are checked under both.
namespace stockade::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif

// The sanitizer reports in `output` -- what a process this test started wrote
// to its stderr (the stockade CLI's, a daemon's log: the supervisors whose
// sandbox inits report there, platform/linux/spawn.cc) -- copied to this
// test's own stderr, so that ctest's log holds them beside the test's name
// (scripts/ci/stage-30-asan.sh fails a run with any report in it). Nothing
// when there is none.
inline void forwardSanitizerReports(std::string_view output, std::string_view source) {
  std::size_t first = std::string_view::npos;
  for (std::string_view marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                                  "ERROR: ThreadSanitizer", ": runtime error: "})
    first = std::min(first, output.find(marker));
  if (first == std::string_view::npos) return;
  const std::size_t start = output.rfind('\n', first) == std::string_view::npos ? 0 : output.rfind('\n', first) + 1;
  const std::string_view report = output.substr(start, 64 * 1024);
  std::fprintf(stderr, "==== sanitizer report from %.*s ====\n%.*s\n==== end of the report ====\n",
               static_cast<int>(source.size()), source.data(), static_cast<int>(report.size()), report.data());
}

}  // namespace stockade::testing
