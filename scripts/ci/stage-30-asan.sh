#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer on a build of its own
# (build-asan/, no benchmarks): every ctest test as root but two, then the
# suites that attack the sandbox (security_tests, redteam_tests, spawn_tests)
# again as the unprivileged user. Left out, for the stage's time (CI's whole
# run stays under 30 minutes on 2 cores): InstalledPackage (installs and builds
# the example consumer: packaging, no code path the other tests do not run)
# and the unprivileged re-run of the other suites (run, manager, process
# service, proxy, CLI: the ctest stage runs them as stockade-test
# uninstrumented; their code runs under the sanitizers as root here). Any report fails the test that caused it (halt_on_error;
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
echo "asan: built in ${SECONDS}s"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=23"
status=0
ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -E '^(unprivileged_suites|InstalledPackage\..*)$' || status=1
STOCKADE_CLI="$PWD/build-asan/stockade" STOCKADE_PROBE="$PWD/build-asan/tests/sandbox_probe" \
  timeout 900 tests/run_unprivileged.sh build-asan/tests/security_tests build-asan/tests/redteam_tests \
  build-asan/tests/spawn_tests || { echo "asan: the unprivileged re-run FAILED"; status=1; }
exit "$status"
