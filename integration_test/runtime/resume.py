# Resuming a run: what `braid-run --save` writes loads back with --params
# (the saved loss included), and training resumed from it continues the run
# exactly. 4 steps in one go against 2 steps, --save, then 2 more from the
# saved file: the losses of steps 3 and 4 and every final parameter and
# optimizer-state array (AdamW's moments and its step count, which sets the
# bias correction) must be identical bit for bit. The same plan, data and
# ranks run the same float operations, so nothing but equality is right.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlir = os.path.join(out, "gpt.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--tiny", "--world-size", "2",
                   "-o", mlir])
    plan = os.path.join(out, "gpt.plan")
    braidtest.compile_step(mlir, plan)
    full, half, resumed = (os.path.join(out, n + ".npz") for n in ("full", "half", "resumed"))
    whole = braidtest.losses(braidtest.braid_run(plan, ranks=2, args=[
        "--steps", "4", "--save", full]).stdout)
    first = braidtest.losses(braidtest.braid_run(plan, ranks=2, args=[
        "--steps", "2", "--save", half]).stdout)
    with np.load(half) as f:
        assert "loss" in f.files, "--save writes the loss"
        step = float(f["step"]) if "step" in f.files else None
    rest = braidtest.losses(braidtest.braid_run(plan, ranks=2, args=[
        "--steps", "2", "--params", half, "--save", resumed]).stdout)
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    check(step == 2.0, "the saved AdamW step count is 2 (got %s)" % step)
    check(first + rest == whole, "losses: %s + %s resumed, %s in one run" % (first, rest, whole))
    a, b = np.load(full), np.load(resumed)
    state = [k for k in a.files if k != "loss"]
    same = [k for k in state if k in b.files and a[k].dtype == b[k].dtype and
            a[k].shape == b[k].shape and np.array_equal(a[k], b[k])]
    check(len(state) > 10 and same == state,
          "%d of %d final arrays identical (%s differ)" % (
              len(same), len(state), ", ".join(sorted(set(state) - set(same))) or "none"))
    print("resume: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
