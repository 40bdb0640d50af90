#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds and runs the example
# consumer against it with find_package(stockade).
set -euo pipefail
build="$(realpath "$1")"; src="$(realpath "$2")"
prefix="$build/install-test"; out="$build/consumer-test"
rm -rf "$prefix" "$out"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/examples/consumer" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out" -j2 >/dev/null
"$out/consumer"
