#!/bin/sh
# A production build has no mutation switch (platform/mutation.h,
# scripts/mutate): neither the variable's name nor a layer's name is in the
# CLI or the libraries, and STOCKADE_MUTATE naming a layer changes nothing --
# a read-denied file stays hidden while its neighbour is read, and a write
# outside the writable tree fails while one inside works.
# Usage: production_has_no_mutation_switch.sh STOCKADE_CLI LIBRARY...
set -eu
cli="$1"
for f in "$@"; do
  if strings -a "$f" | grep -E 'STOCKADE_MUTATE|mutation testing|brokered-read-only|landlock-scopes'; then
    echo "FAIL: $f holds the mutation switch (configure without -DSTOCKADE_MUTATION_TESTING)"
    exit 1
  fi
done

# Not under /tmp (the sandbox's /tmp is its own), nor under the build tree,
# which may lie there (a fresh clone in /tmp).
dir=$(mktemp -d /var/tmp/stockade-mutation-switch-XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
mkdir "$dir/work"
echo SECRET >"$dir/secret"
echo NEIGHBOUR >"$dir/neighbour"
cat >"$dir/policy.json" <<EOF
{"filesystem": {"denyRead": ["$dir/secret"], "allowRead": [], "allowWrite": ["$dir/work"], "denyWrite": []}}
EOF
status=0
for layer in read-masks landlock-fs brokered-read-only read-only-root; do
  out=$(STOCKADE_MUTATE=$layer "$cli" run --policy "$dir/policy.json" --cwd "$dir" -- /bin/sh -c \
    'cat neighbour; cat secret; echo inside >work/file && echo WROTE-INSIDE; echo outside >escaped && echo WROTE-OUTSIDE' 2>&1 || true)
  case "$out" in
    *NEIGHBOUR*WROTE-INSIDE*) ;;
    *) echo "FAIL: STOCKADE_MUTATE=$layer: the program did not run as usual: $out"; status=1 ;;
  esac
  case "$out" in
    *SECRET* | *WROTE-OUTSIDE*) echo "FAIL: STOCKADE_MUTATE=$layer weakened a production build: $out"; status=1 ;;
  esac
  [ -e "$dir/escaped" ] && { echo "FAIL: STOCKADE_MUTATE=$layer: a file was written outside the writable tree"; status=1; }
done
[ "$status" -eq 0 ] && echo "no mutation switch: the names are absent and STOCKADE_MUTATE changes nothing"
exit "$status"
