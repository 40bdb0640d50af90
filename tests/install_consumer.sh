#!/usr/bin/env bash
# The Debian package as a user gets it: builds it with CPack, unpacks it into
# a fresh root (dpkg -x), checks what it puts in place, then builds the
# example consumer against the unpacked libstockade alone -- CMake may only
# look inside that root, so a dependency the package does not carry (OpenSSL,
# nlohmann_json, Boost, libseccomp development files) fails the build -- and
# runs it. Exits non-zero, naming the check, when any step fails.
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$(realpath "$1")"; src="$(realpath "$2")"
work="$build/package-test"; root="$work/root"; out="$work/consumer"
rm -rf "$work"; mkdir -p "$root"
fail() { echo "install_consumer: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { tail -20 "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/packages/stockade_*_amd64.deb); dbg=$(ls "$work"/packages/stockade-dbgsym_*_amd64.deb)
dpkg -x "$deb" "$root"

# What the package puts in place.
for f in usr/bin/stockade usr/lib/libstockade.so usr/include/stockade/stockade.h \
         usr/lib/cmake/stockade/stockadeConfig.cmake usr/share/man/man1/stockade.1.gz \
         usr/share/bash-completion/completions/stockade; do
  [ -e "$root/$f" ] || fail "the package lacks /$f"
done
soname=$(readelf -d "$root/usr/lib/libstockade.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libstockade.so.0.1 ] || fail "SONAME is '$soname', expected libstockade.so.0.1"
[ -e "$root/usr/lib/$soname" ] || fail "no /usr/lib/$soname link"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
case "$depends" in *-dev*|*libssl*|*libseccomp*|*boost*|*nlohmann*) fail "the package depends on $depends" ;; esac
for bin in usr/bin/stockade "usr/lib/$(readlink -f "$root/usr/lib/libstockade.so" | xargs basename)"; do
  readelf -S "$root/$bin" | grep -q '\.debug_info' && fail "/$bin still carries debug info"
  link=$(readelf --string-dump=.gnu_debuglink "$root/$bin" | sed -n 's/.*\] *\(.*\.debug\)$/\1/p')
  [ "$link" = "$(basename "$bin").debug" ] || fail "/$bin has debuglink '$link'"
done
dpkg -x "$dbg" "$work/dbg"
readelf -S "$work/dbg/usr/lib/debug/usr/bin/stockade.debug" | grep -q '\.debug_info' || fail "stockade.debug holds no debug info"
"$root/usr/bin/stockade" --version | grep -q '^stockade 0\.' || fail "the packaged CLI does not start"
[ "$("$root/usr/bin/stockade" run -- /bin/echo packaged)" = packaged ] || fail "the packaged CLI does not run a program"
bash -c "source '$root/usr/share/bash-completion/completions/stockade' && complete -p stockade" >/dev/null ||
  fail "the bash completion does not load"
if command -v man >/dev/null; then
  man -l "$root/usr/share/man/man1/stockade.1.gz" 2>/dev/null | grep -q 'POLICY FORMAT' || fail "the man page does not render"
fi

# The consumer, against the unpacked root only.
cmake -S "$src/examples/consumer" -B "$out" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/usr \
  -DCMAKE_FIND_ROOT_PATH="$root" -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
  -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY >"$work/consumer-cmake.log" 2>&1 ||
  { cat "$work/consumer-cmake.log"; fail "find_package(stockade) against the package alone failed"; }
cmake --build "$out" -j2 >"$work/consumer-build.log" 2>&1 || { cat "$work/consumer-build.log"; fail "the consumer did not build"; }
needed=$(readelf -d "$out/consumer" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "consumer: $(stat -c %s "$out/consumer") bytes; NEEDED: $needed"
case "$needed" in *libstockade.so.0.1*) ;; *) fail "the consumer does not link libstockade.so.0.1" ;; esac
case "$needed" in *crypto*|*seccomp*|*boost*) fail "the consumer links $needed" ;; esac
output=$(LD_LIBRARY_PATH="$root/usr/lib" "$out/consumer") || fail "the consumer exited $?: $output"
echo "$output"
case "$output" in *"output: hi"*) ;; *) fail "the consumer printed: $output" ;; esac
echo "install_consumer: ok"
