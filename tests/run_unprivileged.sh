#!/bin/sh
# Runs the sandbox test binaries given as arguments as the unprivileged user
# `stockade-test` (created when missing), with a HOME it owns. Must start as
# root; as any other user it runs the binaries directly.
#
# For the setuid test it prepares, as root, a root-owned setuid copy of
# sandbox_probe and passes its path in STOCKADE_TEST_SETUID_PROBE.
set -eu

if [ "$#" -eq 0 ]; then
  echo "usage: $0 TEST_BINARY..." >&2
  exit 2
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "$0: not root; running the tests as $(id -un) directly" >&2
  for t in "$@"; do "$t"; done
  exit 0
fi

user=stockade-test
if ! id "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh "$user"
fi
home=$(getent passwd "$user" | cut -d: -f6)
mkdir -p "$home"
chown "$user:" "$home"

# The build tree may not be reachable by other users (a clone under /root):
# stage the test binaries, the CLI and the probe where the user can run them,
# and point the tests at the copies (STOCKADE_CLI, STOCKADE_PROBE).
cli="${STOCKADE_CLI:?set STOCKADE_CLI to the stockade binary}"
probe="${STOCKADE_PROBE:?set STOCKADE_PROBE to sandbox_probe}"
stage=$(mktemp -d /var/tmp/stockade-unprivileged-XXXXXX)
trap 'rm -rf "$stage"' EXIT INT TERM
chmod 0755 "$stage"
cp "$cli" "$stage/stockade"
cp "$probe" "$stage/sandbox_probe"
# The daemon, for the suites that start one (STOCKADED, optional).
daemon_env=""
if [ -n "${STOCKADED:-}" ]; then
  cp "$STOCKADED" "$stage/stockaded"
  daemon_env="STOCKADED=$stage/stockaded"
fi
# The red-team suite's uninstrumented case program (STOCKADE_REDTEAM_CASES, optional).
redteam_env=""
if [ -n "${STOCKADE_REDTEAM_CASES:-}" ]; then
  cp "$STOCKADE_REDTEAM_CASES" "$stage/redteam-cases"
  redteam_env="STOCKADE_REDTEAM_CASES=$stage/redteam-cases"
fi
# A root-owned setuid copy of the probe, for the setuid test.
cp "$probe" "$stage/probe-suid"
chown root:root "$stage/probe-suid"
chmod 4755 "$stage/probe-suid"

# What the caller set for the test processes themselves passes through the
# clean environment: gtest's filter, the mutation switch (scripts/mutate) and
# the sanitizers' options (scripts/ci/stage-*.sh).
pass=""
for v in GTEST_FILTER GTEST_FAIL_FAST STOCKADE_MUTATE ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
  eval "value=\${$v:-}"
  [ -n "$value" ] && pass="$pass $v=$value"
done
set -f  # $pass is split into words below, and holds patterns (GTEST_FILTER=*), not file names

status=0
for t in "$@"; do
  cp "$t" "$stage/"
  copy="$stage/$(basename "$t")"
  echo "== $t as $user" >&2
  (cd "$home" && setpriv --reuid="$user" --regid="$user" --init-groups \
     env -i HOME="$home" USER="$user" PATH=/usr/local/bin:/usr/bin:/bin \
     STOCKADE_CLI="$stage/stockade" STOCKADE_PROBE="$stage/sandbox_probe" \
     STOCKADE_TEST_SETUID_PROBE="$stage/probe-suid" STOCKADE_REDTEAM_REPORT="${STOCKADE_REDTEAM_REPORT:-}" \
     $daemon_env $redteam_env $pass "$copy") || status=1
done
exit "$status"
