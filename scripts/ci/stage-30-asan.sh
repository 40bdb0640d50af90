#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: the WHOLE test suite (root,
# and the unprivileged re-run) on a build of its own (build-asan/, no
# benchmarks). Any report fails the test that caused it (halt_on_error;
# UBSan does not recover). LeakSanitizer runs at the exit of every test
# process and of the stockade CLI; the sandbox's init never runs it -- it
# leaves by exec or by the raw exit_group(2) (platform/linux/raw_syscall.h),
# never through exit handlers. sandbox_probe, the program the security tests
# run inside the sandbox, is not instrumented (tests/CMakeLists.txt): it is
# the attacker, and LeakSanitizer's ptrace would be refused by the filter.
# No suppressions.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOCKADE_WERROR=ON -DSTOCKADE_BENCH=OFF \
  -DSTOCKADE_SANITIZE="address,undefined" >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=23"
ctest --test-dir build-asan --output-on-failure -j2 --timeout 900
