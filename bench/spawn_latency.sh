#!/bin/sh
# Builds and runs the spawn-latency comparison (bare /bin/true, bubblewrap,
# stockade run, platform::spawn). Usage: bench/spawn_latency.sh [RUNS]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${STOCKADE_BUILD_DIR:-$root/build}
cmake --build "$build" -j2 --target spawn_latency stockade_cli >/dev/null
exec "$build/bench/spawn_latency" "${1:-200}"
