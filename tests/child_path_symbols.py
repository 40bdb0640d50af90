#!/usr/bin/env python3
"""The code between clone and exec links no function a sanitizer intercepts.

The cloned child is a copy of a possibly multi-threaded supervisor: a libc
function that ThreadSanitizer (or ASan, UBSan) intercepts may wait for a lock
another thread held at clone time, and hang the child forever. So the child
path calls only raw system calls (platform/linux/raw_syscall.h).

This check follows the calls from the child's entry point, childMain() in
platform/linux/spawn.cc, through the object files of stockade::platform
(compiled with -ffunction-sections -fdata-sections, so each function and
datum is a section of its own and the parent's code beside it is not
followed): every relocation of a reached section leads to a section of the
same or another object, or to a symbol no object defines. Each such external
symbol must be on the allow-list below, and no sanitizer runtime found on
this machine may define (intercept) it.

Usage: child_path_symbols.py OBJECT...   (or one argument, a ;-separated list: CMake's)
"""
import glob
import re
import subprocess
import sys

ENTRY = re.compile(r"_GLOBAL__N_\d+9childMainE")

# External symbols the child path may use, and why each is safe there.
ALLOWED = {
    "syscall": "glibc's syscall(3): a trampoline into the kernel that sets errno; no sanitizer intercepts it",
    "__errno_location": "errno's address in the calling thread (the child's copy of it); no lock, not intercepted",
    "in6addr_loopback": "data (::1), not a function",
    "_GLOBAL_OFFSET_TABLE_": "the linker's table, not a function",
}

# Sanitizer runtimes whose exported functions are the interceptors.
RUNTIMES = glob.glob("/usr/lib/x86_64-linux-gnu/libtsan.so.*") + glob.glob("/usr/lib/x86_64-linux-gnu/libasan.so.*") + \
    glob.glob("/usr/lib/x86_64-linux-gnu/libubsan.so.*")


def readelf(flag, path):
    return subprocess.run(["readelf", "-W", flag, path], check=True, capture_output=True, text=True).stdout


def sections(path):
    """Section index -> name."""
    out = {}
    for line in readelf("-S", path).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def symbols(path, names):
    """(local name -> section name, global name -> section name) of the symbols defined here."""
    local, defined = {}, {}
    for line in readelf("-s", path).splitlines():
        cols = line.split()
        if len(cols) < 8 or not cols[0].endswith(":") or not cols[6].isdigit():
            continue
        section = names.get(int(cols[6]))
        (local if cols[4] == "LOCAL" else defined)[cols[7]] = section
    return local, defined


def relocations(path):
    """Section name -> names of the symbols its relocations refer to."""
    out, current = {}, None
    for line in readelf("-r", path).splitlines():
        m = re.match(r"Relocation section '\.rela?(\S*)'", line)
        if m:
            current = out.setdefault(m.group(1), set())
            continue
        cols = line.split()
        if current is not None and len(cols) >= 5 and re.fullmatch(r"[0-9a-f]{16}", cols[0]):
            current.add(cols[4])
    return out


def main(objects):
    objs = {}
    defined = {}  # global symbol -> (object, section)
    for path in objects:
        names = sections(path)
        local, glob_ = symbols(path, names)
        objs[path] = (set(names.values()), local, relocations(path))
        for name, section in glob_.items():
            defined.setdefault(name, (path, section))

    roots = [(p, sec) for p, (_, local, _) in objs.items() for name, sec in local.items() if ENTRY.search(name)]
    roots = sorted({r for r in roots if r[1] and r[1].startswith(".text")})
    if len(roots) != 1:
        print(f"child_path_symbols: expected one childMain() in its own section, found {roots}")
        return 1

    seen, todo, external = set(), list(roots), {}
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        path, section = node
        section_names, local, relocs = objs[path]
        for sym in relocs.get(section, ()):
            if sym in section_names:
                todo.append((path, sym))
            elif sym in local:
                todo.append((path, local[sym]))
            elif sym in defined:
                todo.append(defined[sym])
            else:
                external.setdefault(sym, section)

    intercepted = {}
    for runtime in RUNTIMES:
        out = subprocess.run(["nm", "-D", "--defined-only", runtime], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            cols = line.split()
            if len(cols) == 3 and cols[1] in "TWiV":
                intercepted.setdefault(cols[2], runtime)

    failures = []
    for sym, where in sorted(external.items()):
        if sym not in ALLOWED:
            failures.append(f"  {sym} (from {where}) is not on the allow-list")
        elif sym in intercepted:
            failures.append(f"  {sym} (from {where}) is intercepted by {intercepted[sym]}")
    code = sum(1 for _, s in seen if s.startswith(".text"))
    print(f"child_path_symbols: {code} functions reached from childMain(); external symbols: "
          f"{', '.join(sorted(external)) or 'none'}; sanitizer runtimes checked: {len(RUNTIMES)}")
    if failures:
        print("child_path_symbols: the child path (between clone and exec) uses:")
        print("\n".join(failures))
        print("Call the raw system call (platform/linux/raw_syscall.h) instead.")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main([o for a in sys.argv[1:] for o in a.split(";") if o]))
