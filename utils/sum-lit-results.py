#!/usr/bin/env python3
"""Sums lit's JSON result files (lit -o FILE) into one line:
`N passed, N failed, N skipped`.

PASS counts as passed; FAIL, XPASS, UNRESOLVED and TIMEOUT as failed;
UNSUPPORTED (a missing GPU) as skipped. An XFAIL (a test expected to fail
that failed) is neither: it is reported on a line of its own before the
summary, so that a known failure never reads as a pass. A missing or
unreadable result file counts as one failure, so a suite that did not run
cannot look green. Exits 1 if anything failed.

`--sanitized=FILE` marks a result file whose every test ran under
sanitizers, and `--sanitized-test=NAME` one test (by the end of its lit
name) that runs its program under them: the summary line then says how
many of the passed tests ran under sanitizers, on the line before the
summary (which keeps its fixed form). A marked file is read once, whether
or not it is also given as a plain argument.

`--machine=FILE` marks the result file of the numerics pass (the numerics
tests again as a machine without AVX-512, docs/Testing.md): a line before
the summary says how many of the passed tests ran there."""

import json
import sys

PASSED = {"PASS", "FLAKYPASS"}
SKIPPED = {"UNSUPPORTED"}
XFAILED = {"XFAIL"}


def main(args):
    passed = failed = skipped = sanitized = 0
    xfailed = []
    paths, sanitized_files, sanitized_tests, machine_files = [], set(), [], set()
    machine = 0
    for a in args:
        if a.startswith("--machine="):
            machine_files.add(a.split("=", 1)[1])
        elif a.startswith("--sanitized="):
            sanitized_files.add(a.split("=", 1)[1])
        elif a.startswith("--sanitized-test="):
            sanitized_tests.append(a.split("=", 1)[1])
        else:
            paths.append(a)
    paths += sorted(f for f in sanitized_files | machine_files if f not in paths)
    for path in paths:
        try:
            with open(path) as f:
                tests = json.load(f)["tests"]
        except (OSError, ValueError, KeyError) as e:
            print("sum-lit-results: cannot read %s (did the suite run?): %s" % (path, e),
                  file=sys.stderr)
            failed += 1
            continue
        for test in tests:
            code = test.get("code", "")
            if code in PASSED:
                passed += 1
                name = test.get("name", "")
                if path in sanitized_files or any(name.endswith(t) for t in sanitized_tests):
                    sanitized += 1
                if path in machine_files:
                    machine += 1
            elif code in SKIPPED:
                skipped += 1
            elif code in XFAILED:
                xfailed.append(test.get("name", "?"))
            else:
                failed += 1
    if passed + failed == 0:
        print("sum-lit-results: no test ran", file=sys.stderr)
        failed += 1
    if xfailed:
        print("%d expected to fail (XFAIL, counted neither passed nor failed): %s" % (
            len(xfailed), ", ".join(xfailed)))
    if sanitized_files or sanitized_tests:
        # On its own line: the summary line keeps its fixed form.
        print("%d of the passed tests ran under sanitizers" % sanitized)
    if machine_files:
        print("%d of the passed tests ran again as a machine without AVX-512 "
              "(OPENBLAS_CORETYPE=Haswell BRAID_CPU_MATH=avx2)" % machine)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
