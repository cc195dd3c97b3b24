#!/usr/bin/env python3
"""Checks integration_test/numerics-tests.txt (the numerics pass's list,
docs/Testing.md): every `run` or `skip` path exists, none is named twice,
and every integration test that compares numbers (it uses braid.compare's
max_rel_diff or against_pytorch, numpy's allclose or testing, or speaks of
a relative difference) is named, so that a new comparing test cannot miss
the pass unnoticed. Prints `N tests run in the numerics pass, M skipped`,
or each problem and exits 1.

Usage: check-numerics-list.py INTEGRATION_TEST_DIR"""

import os
import re
import sys

COMPARES = re.compile(r"max_rel_diff|against_pytorch|allclose|np\.testing|relative")
SUFFIXES = (".py", ".test")


def main(root):
    listed, problems = {}, []
    with open(os.path.join(root, "numerics-tests.txt")) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, _, rest = line.partition(" ")
            path = rest.split(":", 1)[0].strip()
            if kind not in ("run", "skip") or not path or (kind == "skip" and ":" not in rest):
                problems.append("line %d: expected `run PATH` or `skip PATH: WHY`, not %r"
                                % (number, line))
                continue
            if path in listed:
                problems.append("line %d: %s is named twice" % (number, path))
            if not os.path.isfile(os.path.join(root, path)):
                problems.append("line %d: %s does not exist" % (number, path))
            listed[path] = kind
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("Inputs", "Output"))
        for name in sorted(filenames):
            if not name.endswith(SUFFIXES) or name == "lit.cfg.py":
                continue
            path = os.path.relpath(os.path.join(dirpath, name), root)
            with open(os.path.join(dirpath, name), errors="replace") as f:
                text = f.read()
            if COMPARES.search(text) and path not in listed:
                problems.append("%s compares numbers but numerics-tests.txt does not name it "
                                "(run or skip)" % path)
    for p in problems:
        print("check-numerics-list: " + p)
    runs = sum(1 for k in listed.values() if k == "run")
    print("%d tests run in the numerics pass, %d skipped" % (runs, len(listed) - runs))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
