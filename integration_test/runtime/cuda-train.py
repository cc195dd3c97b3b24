# Trains the tiny GPT and MLP for 20 steps on one GPU (cuda backend, one
# rank: NCCL needs a GPU per rank) with the overlapped and the naive plan,
# and compares with the cpu backend.
#
# REQUIRES: gpu, cuda-backend, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402


MODELS = ("mlp", "gpt")
VARIANTS = (("naive", ["--no-overlap"]), ("overlap", ["--comm-streams=2"]))


def compile_plans(out, model):
    """Generates `model` and compiles its plans; returns {variant: plan}."""
    mlir = os.path.join(out, model + ".mlir")
    braidtest.run([sys.executable, "-m", "braid.models", model, "--tiny",
                   "--world-size", "1", "-o", mlir])
    plans = {}
    for variant, flags in VARIANTS:
        plans[variant] = os.path.join(out, "%s-%s.plan" % (model, variant))
        braidtest.compile_step(mlir, plans[variant], *flags)
    return plans


def main():
    # --compile-only OUT: only the plans (utils/gpu-bundle.sh fills its plan
    # cache with them).
    compile_only = sys.argv[1] == "--compile-only"
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    failures = 0
    for model in MODELS:
        plans = compile_plans(out, model)
        if compile_only:
            continue
        finals = {}
        for variant, _ in VARIANTS:
            plan = plans[variant]
            for backend in ("cpu", "cuda"):
                save = plan.replace(".plan", "-%s.npz" % backend)
                p = braidtest.braid_run(plan, backend=backend,
                                        args=["--steps", "20", "--save", save])
                losses = braidtest.losses(p.stdout)
                ok = len(losses) == 20 and losses[-1] < 0.95 * losses[0]
                print("%s %s %s %s: loss %.4f -> %.4f" % (
                    "ok  " if ok else "FAIL", model, variant, backend, losses[0], losses[-1]))
                failures += not ok
                with np.load(save) as f:
                    finals[(variant, backend)] = {k: f[k] for k in f.files if k != "loss"}
        for variant, _ in VARIANTS:
            a, b = finals[(variant, "cuda")], finals[(variant, "cpu")]
            diff = max(braidtest.max_rel_diff(a[k], b[k]) for k in b)
            ok = diff <= 1e-3
            print("%s %s %s: cuda vs cpu parameters differ by %.2e" % (
                "ok  " if ok else "FAIL", model, variant, diff))
            failures += not ok
    if compile_only:
        return
    print("cuda-train: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
