#!/bin/sh
# scripts/ci/sanitizer_reports.py, the asan stage's last check: a ctest log
# with a sanitizer report in any test's output (here a sandbox init's, in a
# test that passed) fails, naming that test and its gtest case; a clean log
# passes.
set -eu
check="${1:?usage: $0 SANITIZER_REPORTS_PY}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
cat >"$dir/report.log" <<'LOG'
1/2 Testing: ManagerTest.Clean
1/2 Test: ManagerTest.Clean
Output:
----------------------------------------------------------
[ RUN      ] ManagerTest.Clean
[       OK ] ManagerTest.Clean (3 ms)
<end of output>
Test Passed.
2/2 Testing: unprivileged_suites
2/2 Test: unprivileged_suites
Output:
----------------------------------------------------------
[ RUN      ] SpawnTest.APreparedSandboxRunsTheProgramItIsSentLater
==1==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7ffdba399d58
[       OK ] SpawnTest.APreparedSandboxRunsTheProgramItIsSentLater (28 ms)
<end of output>
Test Passed.
LOG
head -8 "$dir/report.log" >"$dir/clean.log"
if out=$(python3 "$check" "$dir/report.log" 2>&1); then
  echo "FAIL: a log with a report passed: $out"
  exit 1
fi
case "$out" in
  *"test unprivileged_suites (case SpawnTest.APreparedSandboxRunsTheProgramItIsSentLater): ==1==ERROR: AddressSanitizer"*) ;;
  *) echo "FAIL: the report was not named by its test and case: $out"; exit 1 ;;
esac
case "$out" in
  *ManagerTest.Clean*) echo "FAIL: the clean test was named: $out"; exit 1 ;;
esac
python3 "$check" "$dir/clean.log" || { echo "FAIL: a clean log failed"; exit 1; }
echo "ok"
