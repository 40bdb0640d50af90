#!/usr/bin/env python3
"""Fails when a sanitizer report appears anywhere in a ctest log.

A report in a test's own process fails that test already (halt_on_error).
One in a process the test only started -- a sandbox's init, which reports to
its supervisor's stderr (platform/linux/spawn.cc), the stockade CLI, a daemon
(tests/support/sanitizer.h forwards what they wrote) -- need not: the test
may expect that process to fail. So every report in the log counts, named
by the ctest test whose output holds it and the gtest case running then.

Usage: sanitizer_reports.py CTEST_LOG...   (build-asan/Testing/Temporary/LastTest.log)
"""
import re
import sys

MARKERS = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|(?:WARNING|ERROR): ThreadSanitizer|"
                     r": runtime error: ")
TEST = re.compile(r"^\d+/\d+ Test: (.+)$")
CASE = re.compile(r"^\[ RUN      \] (\S+)")


def main(paths):
    found = []
    for path in paths:
        test, case = "(before any test)", ""
        with open(path, errors="replace") as log:
            for number, line in enumerate(log, 1):
                line = line.rstrip("\n")
                m = TEST.match(line)
                if m:
                    test, case = m.group(1), ""
                    continue
                m = CASE.match(line)
                if m:
                    case = m.group(1)
                    continue
                if MARKERS.search(line):
                    found.append(f"{path}:{number}: test {test}" + (f" (case {case})" if case and case != test else "") +
                                 f": {line.strip()[:200]}")
    for f in found:
        print("sanitizer report: " + f)
    if found:
        print(f"{len(found)} sanitizer report line(s) in the log: the run fails", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: sanitizer_reports.py CTEST_LOG...")
    sys.exit(main(sys.argv[1:]))
