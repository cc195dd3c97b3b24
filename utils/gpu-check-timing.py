#!/usr/bin/python3
"""utils/gpu-check.sh's timing: GPT-2 small's width (batch 8 x 512 tokens) on
one GPU, each timing variant on cuda for 20 steps with --profile (the time
line gives the first step against the median of the others; the profile,
each op's device time per step) and on cpu for 2 steps.

usage: gpu-check-timing.py OUT_DIR (from gpu-check.sh, whose environment
points at the bundle's braid-run and plan cache)"""

import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "integration_test", "runtime", "Inputs"))
sys.path.insert(0, os.path.join(ROOT, "utils"))
import braidtest  # noqa: E402

gb = importlib.import_module("gpu-bundle")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, args in gb.timing_models():
        mlir = os.path.join(out, name + ".mlir")
        braidtest.run([sys.executable, "-m", "braid.models"] + args + ["-o", mlir])
        for flags in gb.timing_variants():
            plan = os.path.join(out, name + flags[0] + ".plan")
            braidtest.compile_step(mlir, plan, *flags)
            for backend, steps in (("cuda", "20"), ("cpu", "2")):
                extra = ["--profile"] if backend == "cuda" else []
                p = braidtest.braid_run(plan, backend=backend,
                                        args=["--steps", steps] + extra)
                losses = braidtest.losses(p.stdout)
                t = [l for l in p.stdout.splitlines() if l.startswith("time:")]
                print("%s %s %s: loss %.4f -> %.4f; %s" % (
                    name, flags[0], backend, losses[0], losses[-1],
                    t[0] if t else "no time"))
                if backend == "cuda":
                    # The profile's header lines and its eight largest ops.
                    lines = p.stdout.splitlines()
                    prof = [l for l in lines if l.startswith("profile:")]
                    ops = [l for l in lines if l.startswith("  ") and "(outside" not in l]
                    print("\n".join(prof + ops[1:9]))


if __name__ == "__main__":
    main()
