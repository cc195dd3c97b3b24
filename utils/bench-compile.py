#!/usr/bin/python3
"""Compile-time benchmark: GPT training steps of 1k to 1M ops through
braid-compile, end to end (parse, the default pipeline, the plan file).

The steps are python/braid/models.py's GPT at small widths (hidden 64, 4
heads, sequence 16, batch 2, vocabulary 64) with as many blocks as it takes
(about 86 ops a block): the op count is what costs, not the tensor sizes.
For each size it prints the wall time of braid-compile (median of
--repeat runs), the time of each phase from --mlir-timing, ops per second,
and the scaling exponent against the previous size (1.0 is linear, 2.0
quadratic). Then it checks the claims of docs/Benchmarks.md: the 100k-op
step compiles in under 2 s, and from 10k to 1M ops the time grows no faster
than n log n; it exits 1 if one fails.

usage: /usr/bin/python3 utils/bench-compile.py [--ops N ...] [--repeat R] [--quick]
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BRAID_BIN") or os.path.join(ROOT, "build", "bin")
sys.path.insert(0, os.path.join(ROOT, "python"))

from braid.models import gpt  # noqa: E402

PHASES = ["Parser", "BucketGradients", "AsyncCollectives", "Schedule", "AssignStreams",
          "PlanMemory", "VerifySchedule", "Output"]
SHORT = {"Parser": "parse", "BucketGradients": "bucket", "AsyncCollectives": "async",
         "Schedule": "schedule", "AssignStreams": "streams", "PlanMemory": "memory",
         "VerifySchedule": "verify", "Output": "plan"}


def count_ops(text):
    """braid ops: lines `%x = braid.op ...` or `braid.op ...`."""
    op = re.compile(r"^\s*(%[^=]+= )?braid\.[a-z_]+ ")
    return sum(1 for line in text.splitlines() if op.match(line))


def step(layers):
    return gpt(batch=2, seq=16, hidden=64, heads=4, vocab=64, world_size=8, layers=layers).text()


def compile_once(path):
    start = time.perf_counter()
    p = subprocess.run([os.path.join(BIN, "braid-compile"), path, "-o", os.devnull,
                        "--mlir-timing", "--mlir-timing-display=list"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit("bench-compile: braid-compile failed:\n" + p.stderr)
    phases = {}
    for line in p.stderr.splitlines():
        m = re.match(r"\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\S+)$", line)
        if m and m.group(2) in PHASES:
            phases[m.group(2)] = float(m.group(1))
    return wall, phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, nargs="+", default=[1000, 10000, 100000, 1000000],
                        help="target op counts (default 1k 10k 100k 1M)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the median counts")
    parser.add_argument("--quick", action="store_true", help="1k and 10k ops, one run (tests)")
    args = parser.parse_args()
    if args.quick:
        args.ops, args.repeat = [1000, 10000], 1
    per_layer = count_ops(step(2)) - count_ops(step(1))
    base = count_ops(step(1)) - per_layer
    print("| ops | blocks | seconds | %s | ops/s | exponent |" % " | ".join(SHORT[p] for p in PHASES))
    print("|---:|---:|---:|%s---:|---:|" % ("---:|" * len(PHASES)))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for target in args.ops:
            layers = max(1, round((target - base) / per_layer))
            text = step(layers)
            ops = count_ops(text)
            path = os.path.join(work, "step.mlir")
            with open(path, "w") as f:
                f.write(text)
            del text
            runs = sorted((compile_once(path) for _ in range(args.repeat)), key=lambda r: r[0])
            wall, phases = runs[len(runs) // 2]
            exponent = ""
            if rows:
                prev_ops, prev_s = rows[-1]
                exponent = "%.2f" % (math.log(wall / prev_s) / math.log(ops / prev_ops))
            rows.append((ops, wall))
            print("| %d | %d | %.3f | %s | %.0f | %s |" % (
                ops, layers, wall, " | ".join("%.3f" % phases.get(p, 0) for p in PHASES),
                ops / wall, exponent))
            sys.stdout.flush()
    failures = []
    for ops, wall in rows:
        if 90000 <= ops <= 110000 and wall >= 2.0:
            failures.append("the %d-op step took %.2f s, not under 2 s" % (ops, wall))
    small = [r for r in rows if 9000 <= r[0] <= 11000]
    large = [r for r in rows if r[0] >= 900000]
    if small and large:
        (n0, t0), (n1, t1) = small[0], large[-1]
        allowed = (n1 * math.log(n1)) / (n0 * math.log(n0))
        print("\nfrom %d to %d ops: time x%.1f, n log n allows x%.1f, n x%.1f" % (
            n0, n1, t1 / t0, allowed, n1 / n0))
        if t1 / t0 > allowed:
            failures.append("time grew x%.1f from %d to %d ops, faster than n log n (x%.1f)" % (
                t1 / t0, n0, n1, allowed))
    print("claims (100k ops under 2 s; n log n from 10k to 1M): %s" % (
        "FAIL" if failures else "hold" if (small and large) else "hold (not all sizes run)"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
