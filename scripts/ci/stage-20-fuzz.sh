#!/usr/bin/env bash
# Each parser fuzzer for its budget over its committed corpus (scripts/fuzz).
# CI gives each target a share of its local budget (STOCKADE_FUZZ_SHARE percent,
# 50 here): the corpora are committed grown, so a CI run mostly replays them
# and checks the invariants; the full budgets are for a local `scripts/fuzz`.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${STOCKADE_FUZZ_SECONDS:-}" ]; then
  exec scripts/fuzz --seconds "$STOCKADE_FUZZ_SECONDS"
fi
exec scripts/fuzz --share "${STOCKADE_FUZZ_SHARE:-50}"
