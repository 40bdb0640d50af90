#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer over the WHOLE suite, on a
# build of its own (build-asan/, no benchmarks). This stage is the suite's
# run: there is no plain ctest stage besides it (CI's whole run stays under
# 30 minutes on 2 cores that way). Every ctest test runs as root under the
# sanitizers, and the unprivileged re-run (every binary of ctest's
# unprivileged_suites, as stockade-test) runs on the instrumented binaries
# too, beside the others. One test runs uninstrumented, on scripts/bootstrap's build/:
# InstalledPackage (it packages the build and compiles the example consumer
# against the unpacked library, which an ASan library cannot link without the
# sanitizer's runtime: packaging, no code path the other tests do not run).
# Any report fails the test that caused it (halt_on_error; UBSan does not
# recover); a report of a process a test only started -- a sandbox's init,
# which reports to its supervisor's stderr through a descriptor it keeps in
# sanitizer builds (platform/linux/spawn.cc), the CLI, a daemon (whose log
# tests/support/sanitizer.h forwards) -- fails the run by the check of
# ctest's log at the end (scripts/ci/sanitizer_reports.py), naming the test.
# LeakSanitizer runs at the exit of every test process and of the
# stockade CLI; the sandbox's init never runs it -- it leaves by exec or by
# the raw exit_group(2) (platform/linux/raw_syscall.h), never through exit
# handlers. sandbox_probe, the program the security tests run inside the
# sandbox, is not instrumented (tests/CMakeLists.txt): it is the attacker, and
# LeakSanitizer's ptrace would be refused by the filter; the red-team suite's
# case program likewise comes from build/ (STOCKADE_REDTEAM_CASES). No suppressions.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOCKADE_WERROR=ON -DSTOCKADE_BENCH=OFF \
  -DSTOCKADE_SANITIZE="address,undefined" >/dev/null
cmake --build build-asan -j"$(nproc)"
echo "asan: built in ${SECONDS}s"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=23"
# The red-team suite's inside runs bootstrap's uninstrumented build of it
# (tests/security/redteam/runner.cc, caseProgram()).
export STOCKADE_REDTEAM_CASES="$PWD/build/tests/redteam_tests"
status=0
# Every test, unprivileged_suites among them (started first: tests/CMakeLists.txt).
ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -E '^InstalledPackage\.' || status=1
ctest --test-dir build --output-on-failure --timeout 600 -R '^InstalledPackage\.' || status=1
# A report in a process a test only started (a sandbox's init, the CLI, a
# daemon) fails the run too, naming the test whose output holds it.
python3 scripts/ci/sanitizer_reports.py build-asan/Testing/Temporary/LastTest.log || status=1
exit "$status"
