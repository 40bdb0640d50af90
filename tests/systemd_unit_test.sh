#!/usr/bin/env bash
# packaging/stockaded.service passes `systemd-analyze verify`, with its
# ExecStart pointed at the stockaded just built (the unit names the
# installed path). Usage: systemd_unit_test.sh SOURCE_DIR STOCKADED
set -euo pipefail
src="$1"; stockaded="$2"
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed"; exit 0
fi
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
sed "s|/usr/bin/stockaded|$stockaded|" "$src/packaging/stockaded.service" > "$work/stockaded.service"
out="$(systemd-analyze verify --man=no "$work/stockaded.service" 2>&1 || true)"
if [ -n "$out" ]; then echo "$out"; echo "FAIL: systemd-analyze verify reported problems"; exit 1; fi
grep -q -- "--listen unix:/run/stockade/stockaded.sock" "$work/stockaded.service"
echo "unit verified"
