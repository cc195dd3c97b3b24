# Trains the tiny GPT and MLP for 20 steps on one GPU (cuda backend, one
# rank: NCCL needs a GPU per rank) with the overlapped and the naive plan,
# and compares with the cpu backend by train.py's rules: step 1's loss
# within 1e-6 relative; final parameters within 1e-5 relative (MLP, SGD) and
# 1e-4 (GPT, AdamW), except the attention key bias, whose true gradient is
# exactly zero (softmax ignores a constant added to a row of scores): AdamW
# turns its rounding noise into lr-sized steps in any two summation orders
# (cuBLAS's and OpenBLAS's), so it is only checked to stay at noise level.
# On cuda, where no kernel adds floats with atomics, the naive and the
# overlapped plan end at the same bits, and the overlapped plan run twice
# does too (a race between streams or events would show as a difference).
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
STEPS = 20
# The key third of the first block's fused q/k/v bias (the tiny GPT's width
# is 64).
KEY_BIAS = ("h0.attn.c_attn.bias", slice(64, 128))


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
        finals, first_losses = {}, {}
        for variant, _ in VARIANTS:
            plan = plans[variant]
            for backend in ("cpu", "cuda"):
                save = plan.replace(".plan", "-%s.npz" % backend)
                p = braidtest.braid_run(plan, backend=backend,
                                        args=["--steps", str(STEPS), "--save", save])
                losses = braidtest.losses(p.stdout)
                ok = len(losses) == STEPS and losses[-1] < 0.95 * losses[0]
                first_losses[(variant, backend)] = losses[0] if losses else float("nan")
                print("%s %s %s %s: loss %.4f -> %.4f" % (
                    "ok  " if ok else "FAIL", model, variant, backend, losses[0], losses[-1]))
                failures += not ok
                with np.load(save) as f:
                    finals[(variant, backend)] = {k: f[k] for k in f.files if k != "loss"}
        # The overlapped plan again on cuda: bit for bit.
        again = plans["overlap"].replace(".plan", "-cuda-again.npz")
        braidtest.braid_run(plans["overlap"], backend="cuda",
                            args=["--steps", str(STEPS), "--save", again])
        with np.load(again) as f:
            rerun = {k: f[k] for k in f.files if k != "loss"}
        for what, a, b in (
                ("the overlapped plan run twice", rerun, finals[("overlap", "cuda")]),
                ("the naive and the overlapped plan", finals[("naive", "cuda")],
                 finals[("overlap", "cuda")])):
            differ = [k for k in b if k not in a or not np.array_equal(a[k], b[k])]
            ok = not differ and set(a) == set(b)
            print("%s %s cuda: %s end at the same bits%s" % (
                "ok  " if ok else "FAIL", model, what,
                "" if ok else " (%d of %d arrays differ, e.g. %s: %.2e)" % (
                    len(differ), len(b), differ[0] if differ else "?",
                    braidtest.max_rel_diff(a[differ[0]], b[differ[0]])
                    if differ and differ[0] in a else float("nan"))))
            failures += not ok
        for variant, _ in VARIANTS:
            la, lb = first_losses[(variant, "cuda")], first_losses[(variant, "cpu")]
            ldiff = abs(la - lb) / abs(lb)
            ok = ldiff <= 1e-6
            print("%s %s %s: step 1 losses differ by %.2e (at most 1e-06)" % (
                "ok  " if ok else "FAIL", model, variant, ldiff))
            failures += not ok
            a, b = finals[(variant, "cuda")], finals[(variant, "cpu")]
            if model == "gpt":
                name, part = KEY_BIAS
                for params in (a, b):
                    key = params[name][part]
                    drift = np.abs(key).max()
                    ok = drift < 3e-4 * STEPS
                    print("%s gpt %s: the key bias only drifts (max %.2e)" % (
                        "ok  " if ok else "FAIL", variant, drift))
                    failures += not ok
                    params[name] = params[name].copy()
                    params[name][part] = 0
            tol = 1e-5 if model == "mlp" else 1e-4
            diff = max(braidtest.max_rel_diff(a[k], b[k]) for k in b)
            ok = diff <= tol
            print("%s %s %s: cuda vs cpu parameters differ by %.2e (at most %.0e)" % (
                "ok  " if ok else "FAIL", model, variant, diff, tol))
            failures += not ok
    if compile_only:
        return
    print("cuda-train: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
