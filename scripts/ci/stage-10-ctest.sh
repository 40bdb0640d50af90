#!/usr/bin/env bash
# The unit, integration and security suites through ctest, on the build
# scripts/bootstrap made (build/); the suites that spawn sandboxes again as
# the unprivileged user (ctest's unprivileged_suites).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Its summary ("100% tests passed, 0 tests failed out of N") closes the stage.
ctest --test-dir build --output-on-failure -j2 --timeout 600
