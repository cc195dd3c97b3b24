# docs/Benchmarks.md says what the simulated benchmarks print: every table
# row of utils/bench-overlap.py, bench-pipeline.py, bench-recipe.py,
# bench-cost-models.py and bench-tensor-parallel.py (with --variants and
# --sites) stands in it to the letter, and so does every row of
# utils/bench-zero.py in docs/ShardedDataParallel.md. A change that moves a figure
# regenerates the table with it (the benchmarks are simulations: their
# figures are the same on any machine), instead of leaving the docs to
# drift; the failure names each row that is missing and the command.
#
# RUN: env BRAID_BIN=%braid_bin %python %s

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# (the page, the command)
BENCHES = [
    ("Benchmarks.md", ["bench-overlap.py"]),
    ("Benchmarks.md", ["bench-pipeline.py"]),
    ("Benchmarks.md", ["bench-recipe.py"]),
    ("Benchmarks.md", ["bench-cost-models.py"]),
    ("Benchmarks.md", ["bench-tensor-parallel.py", "--variants", "--sites"]),
    ("ShardedDataParallel.md", ["bench-zero.py"]),
]


def main():
    failures = 0
    for page, bench in BENCHES:
        with open(os.path.join(ROOT, "docs", page)) as f:
            docs = set(f.read().splitlines())
        command = [sys.executable, os.path.join(ROOT, "utils", bench[0]), *bench[1:]]
        p = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        rows = [line for line in p.stdout.splitlines() if line.startswith("|")]
        missing = [row for row in rows if row not in docs]
        ok = p.returncode == 0 and rows and not missing
        print("%s utils/%s: %d table rows, %d not in docs/%s" % (
            "ok  " if ok else "FAIL", " ".join(bench), len(rows), len(missing), page))
        if p.returncode:
            print(p.stderr)
        for row in missing:
            print("     missing: " + row)
        failures += not ok
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
