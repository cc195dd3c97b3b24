#!/usr/bin/env python3
"""Compile-time benchmark of the overlap pipeline.

Generates deep MLP training steps (python/braid/models.py, `layers` hidden
layers, about 16 ops a layer) of growing size, runs
`braid-opt --braid-overlap` on each, and prints ops, seconds, ops per second
and the scaling exponent between consecutive sizes (1.0 is linear, 2.0
quadratic). The times include parsing and printing.

Usage: utils/bench-compile.py [--braid-opt PATH] [--layers N ...] [--repeat R]
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from braid.models import mlp  # noqa: E402


def count_ops(text):
    return sum(1 for line in text.splitlines() if "braid." in line and "= " in line
               or line.strip().startswith("braid."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--braid-opt", default=os.path.join(ROOT, "build", "bin", "braid-opt"))
    parser.add_argument("--layers", type=int, nargs="+", default=[64, 640, 6400, 64000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the median counts")
    args = parser.parse_args()

    rows = []
    print("| layers | ops | seconds (median of %d) | ops/s | exponent vs previous |" % args.repeat)
    print("|---:|---:|---:|---:|---:|")
    for layers in args.layers:
        text = mlp(batch=8, features=16, hidden=16, classes=4, layers=layers).text()
        ops = count_ops(text)
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
            f.write(text)
            f.flush()
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                subprocess.run([args.braid_opt, "--braid-overlap", f.name, "-o", os.devnull],
                               check=True)
                times.append(time.perf_counter() - start)
        seconds = sorted(times)[len(times) // 2]
        exponent = ""
        if rows:
            prev_ops, prev_s = rows[-1]
            exponent = "%.2f" % (math.log(seconds / prev_s) / math.log(ops / prev_ops))
        rows.append((ops, seconds))
        print("| %d | %d | %.3f | %.0f | %s |" % (layers, ops, seconds, ops / seconds, exponent))
        sys.stdout.flush()
    if len(rows) > 1:
        (o0, s0), (o1, s1) = rows[0], rows[-1]
        print("\nscaling exponent from %d to %d ops: %.2f" % (o0, o1, math.log(s1 / s0) / math.log(o1 / o0)))


if __name__ == "__main__":
    main()
