#pragma once

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

}  // namespace stockade::testing
