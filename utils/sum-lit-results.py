#!/usr/bin/env python3
"""Sums lit's xunit result files into one line: `N passed, N failed, N skipped`.

A missing or unreadable result file counts as one failure, so a suite that
did not run cannot look green. Exits 1 if anything failed."""

import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            cases = ET.parse(path).getroot().iter("testcase")
        except (OSError, ET.ParseError) as e:
            print("sum-lit-results: cannot read %s: %s" % (path, e), file=sys.stderr)
            failed += 1
            continue
        for case in cases:
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if passed + failed == 0:
        print("sum-lit-results: no test ran", file=sys.stderr)
        failed += 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
