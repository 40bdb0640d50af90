#!/usr/bin/env python3
"""The supervisors are linked with full RELRO: bound at start-up, GOT read-only.

A sandbox's init is a clone of the CLI, the daemon or the host application
(through libstockade.so) that never execs. Bound lazily, each first call of a
libc function in it ran the loader's resolver in the child and wrote the GOT.
Every object given must carry BIND_NOW (DT_FLAGS, or NOW in DT_FLAGS_1) and a
GNU_RELRO segment.

Usage: bind_now.py ELF...
"""
import re
import subprocess
import sys


def problems(path):
    dynamic = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
    segments = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    found = []
    if not re.search(r"\(FLAGS\)\s+.*\bBIND_NOW\b", dynamic) and not re.search(r"\(FLAGS_1\)\s+Flags:.*\bNOW\b", dynamic):
        found.append("not BIND_NOW (link with -Wl,-z,now)")
    if "GNU_RELRO" not in segments:
        found.append("no GNU_RELRO segment (link with -Wl,-z,relro)")
    return found


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        for p in problems(path):
            print(f"{path}: {p}")
            failed = True
        if not problems(path):
            print(f"{path}: BIND_NOW, GNU_RELRO")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
