#!/usr/bin/env python3
"""The runtime's benchmark: the cpu executor's overhead per instruction and
the memory plan's arena against the live-bytes bound, for the examples.

Usage: python3 utils/bench-runtime.py [--instrs N] [--reps N]

Targets (issue 4): <= 1 us per same-stream instruction, <= 25 us per
cross-stream synchronization, arena <= 1.15 x the live-bytes bound.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")


def remarks(mlir, flags):
    p = subprocess.run([os.path.join(BIN, "braid-compile"), mlir, "--report",
                        "-o", os.devnull, *flags],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit(p.stderr)
    return p.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instrs", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()

    bench = os.path.join(BIN, "braid-executor-bench")
    subprocess.run([bench, str(args.instrs), str(args.reps)], check=True)

    print("\nmemory plan (braid-compile --report): arena against the live-bytes bound")
    print("%-28s %-14s %14s %14s %7s %14s %7s" % (
        "step", "schedule", "arena bytes", "bound bytes", "ratio",
        "sched. peak", "ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        steps = [("examples/mlp.mlir", os.path.join(ROOT, "examples", "mlp.mlir")),
                 ("examples/gpt.mlir", os.path.join(ROOT, "examples", "gpt.mlir"))]
        for model in ("mlp", "gpt"):
            path = os.path.join(tmp, model + "-tiny.mlir")
            subprocess.run([sys.executable, "-m", "braid.models", model, "--tiny",
                            "--world-size", "2", "-o", path], check=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
            steps.append(("%s --tiny (2 ranks)" % model, path))
        # Over 4096 allocations: the sweep packing alone.
        path = os.path.join(tmp, "deep.mlp.mlir")
        subprocess.run([sys.executable, "-m", "braid.models", "mlp", "--tiny", "--layers", "2000",
                        "-o", path], check=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        steps.append(("mlp --tiny --layers 2000", path))
        worst = 0.0
        for name, path in steps:
            for schedule, flags in (("naive", ["--no-overlap"]),
                                    ("overlap", []),
                                    ("overlap, 2 comm", ["--comm-streams=2"])):
                text = remarks(path, flags)
                m = re.search(r"arena (\d+) bytes, buffers (\d+) bytes, live-bytes bound (\d+)", text)
                arena, bound = int(m.group(1)), int(m.group(3))
                s = re.search(r"peak live bytes of @\w+: \d+ before, (\d+) after", text)
                peak = int(s.group(1)) if s else None
                worst = max(worst, arena / bound)
                print("%-28s %-14s %14d %14d %7.3f %14s %7s" % (
                    name, schedule, arena, bound, arena / bound,
                    peak if peak else "-", "%.3f" % (arena / peak) if peak else "-"))
    print("\nworst arena/bound: %.3f (target <= 1.15)" % worst)
    print("bound: the most bytes live at once when a value stays live until "
          "its last use and, if a collective reads or writes it, until that "
          "collective's wait. sched. peak: braid-schedule's count, which "
          "frees a collective's input at its start.")


if __name__ == "__main__":
    main()
