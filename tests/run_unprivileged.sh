#!/bin/sh
# Runs the sandbox test binaries given as arguments as the unprivileged user
# `stockade-test` (created when missing), with a HOME it owns. Must start as
# root; as any other user it runs the binaries directly.
#
# For the setuid test it prepares, as root, a root-owned setuid copy of
# sandbox_probe (next to the first binary) and passes its path in
# STOCKADE_TEST_SETUID_PROBE.
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

probe="$(dirname "$(realpath "$1")")/sandbox_probe"
suid_dir=$(mktemp -d /var/tmp/stockade-suid-XXXXXX)
trap 'rm -rf "$suid_dir"' EXIT INT TERM
chmod 0755 "$suid_dir"
cp "$probe" "$suid_dir/probe-suid"
chown root:root "$suid_dir/probe-suid"
chmod 4755 "$suid_dir/probe-suid"

status=0
for t in "$@"; do
  t=$(realpath "$t")
  echo "== $t as $user" >&2
  (cd "$home" && setpriv --reuid="$user" --regid="$user" --init-groups \
     env -i HOME="$home" USER="$user" PATH=/usr/local/bin:/usr/bin:/bin \
     STOCKADE_TEST_SETUID_PROBE="$suid_dir/probe-suid" "$t") || status=1
done
exit "$status"
