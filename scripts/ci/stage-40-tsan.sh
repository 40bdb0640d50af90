#!/usr/bin/env bash
# ThreadSanitizer: the manager, process-service, daemon-server and proxy
# tests (the threaded parts) on a build of their targets only (build-tsan/). Any report
# fails the test (halt_on_error). No suppressions.
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=(manager_tests process_service_tests daemon_server_tests proxy_integration_tests)
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOCKADE_WERROR=ON -DSTOCKADE_BENCH=OFF \
  -DSTOCKADE_SANITIZE=thread >/dev/null
cmake --build build-tsan -j"$(nproc)" --target "${targets[@]}"
echo "tsan: built in ${SECONDS}s"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
status=0
for t in "${targets[@]}"; do
  echo "tsan: $t"
  timeout 600 "build-tsan/tests/$t" --gtest_brief=1 || { echo "tsan: $t FAILED"; status=1; }
done
exit "$status"
