# Trains the MLP and tiny GPT steps with braid-run --backend=cpu on 1, 2 and 4
# ranks and checks that
#  - the loss falls over 20 steps;
#  - the plans of braid-compile with comm-streams 1 and 2 (and with small
#    buckets, several per step) end at the same parameters as the --no-overlap plan, within 1e-6 relative;
#  - 2 ranks with half batches each end at the same parameters as 1 rank
#    with the whole batch, within 1e-5 relative;
#  - the MLP's training on the whole batch (1 and 2 ranks) equals an
#    independent float64 numpy implementation of the same step (linear,
#    ReLU, linear, mean cross-entropy, SGD with momentum 0.9, lr 0.01): the
#    loss of every step and the final parameters and momentum buffers.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

STEPS = 20


def generate(out, model, world, batch=None):
    """The MLP at the shapes of examples/mlp.mlir (784-1024-10, batch 64 per
    rank); the GPT in its --tiny configuration (GPT-2 small's step is 2.3
    TFLOP, too much for CPU tests)."""
    path = os.path.join(out, "%s-w%d-b%s.mlir" % (model, world, batch))
    cmd = [sys.executable, "-m", "braid.models", model,
           "--world-size", str(world), "-o", path]
    if model == "gpt":
        cmd.append("--tiny")
    if batch:
        cmd += ["--batch", str(batch)]
    braidtest.run(cmd)
    return path


def train(plan, ranks, save, data=None):
    # --check-memory: every read is checked against the memory plan.
    args = ["--steps", str(STEPS), "--save", save, "--timeout", "120", "--check-memory"]
    if data:
        args += ["--data", data]
    p = braidtest.braid_run(plan, ranks=ranks, args=args)
    return braidtest.losses(p.stdout)


def params(path):
    """Parameters and optimizer state (--save also holds rank 0's loss)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files if k != "loss"}


def compare(a, b):
    return max(braidtest.max_rel_diff(a[k], b[k]) for k in b)


def numpy_mlp(init, data, steps, lr=0.01, momentum=0.9):
    """The MLP step of braid.models.mlp in float64 numpy, written from the
    maths (not from braid): returns the loss of every step and the final
    parameters and momentum buffers, named as braid-run --save names them."""
    p = {k: init[k].astype(np.float64) for k in init if not k.endswith(".momentum")}
    buf = {k: np.zeros_like(v) for k, v in p.items()}
    x, labels = data["x"].astype(np.float64), data["labels"]
    n = len(labels)
    losses = []
    for _ in range(steps):
        h = x @ p["fc1.weight"].T + p["fc1.bias"]
        a = np.maximum(h, 0)
        o = a @ p["fc2.weight"].T + p["fc2.bias"]
        z = o - o.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        losses.append(-logp[np.arange(n), labels].mean())
        d = np.exp(logp)
        d[np.arange(n), labels] -= 1
        d /= n
        g = {"fc2.weight": d.T @ a, "fc2.bias": d.sum(0)}
        dh = (d @ p["fc2.weight"]) * (h > 0)
        g["fc1.weight"], g["fc1.bias"] = dh.T @ x, dh.sum(0)
        for k in p:
            buf[k] = momentum * buf[k] + g[k]
            p[k] = p[k] - lr * buf[k]
    state = dict(p)
    state.update({k + ".momentum": v for k, v in buf.items()})
    return losses, state


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures = []

    def check(ok, message):
        print(("ok   " if ok else "FAIL ") + message)
        if not ok:
            failures.append(message)

    for model in ("mlp", "gpt"):
        for ranks in (1, 2, 4):
            mlir = generate(out, model, ranks)
            finals = {}
            for variant, flags in (("naive", ["--no-overlap"]),
                                   ("overlap1", ["--comm-streams=1"]),
                                   ("overlap2", ["--comm-streams=2"]),
                                   # Several buckets (the tiny models fit in one).
                                   ("buckets", ["--comm-streams=2", "--bucket-cap-mb=0.02",
                                                "--first-bucket-cap-mb=0.005"])):
                plan = mlir.replace(".mlir", "-%s.plan" % variant)
                braidtest.compile_step(mlir, plan, *flags)
                save = plan.replace(".plan", ".npz")
                losses = train(plan, ranks, save)
                check(len(losses) == STEPS and losses[-1] < 0.95 * losses[0] and
                      all(np.isfinite(losses)),
                      "%s on %d ranks (%s): loss %.4f -> %.4f" % (
                          model, ranks, variant, losses[0], losses[-1]))
                finals[variant] = params(save)
            for variant in ("overlap1", "overlap2", "buckets"):
                diff = compare(finals[variant], finals["naive"])
                check(diff <= 1e-6, "%s on %d ranks: %s vs naive parameters differ by %.2e" % (
                    model, ranks, variant, diff))

        # One rank with the whole batch against two with half each.
        half = 2 if model == "gpt" else 32
        one, two = generate(out, model, 1, 2 * half), generate(out, model, 2, half)
        rng = np.random.default_rng(7)
        if model == "gpt":
            data = {"tokens": rng.integers(0, 64, (2 * half, 32)),
                    "labels": rng.integers(0, 64, (2 * half, 32))}
        else:
            data = {"x": rng.standard_normal((2 * half, 784)).astype(np.float32),
                    "labels": rng.integers(0, 10, 2 * half)}
        dpath = os.path.join(out, "%s-global.npz" % model)
        np.savez(dpath, **data)
        results = {}
        for mlir, ranks in ((one, 1), (two, 2)):
            plan = mlir.replace(".mlir", ".plan")
            braidtest.compile_step(mlir, plan)
            save = plan.replace(".plan", "-global.npz")
            results[ranks] = (train(plan, ranks, save, dpath), params(save))
        if model == "gpt":
            # The attention key bias has a true gradient of exactly zero
            # (softmax ignores a constant added to a row of scores); AdamW
            # turns the rounding noise of its gradient into lr-sized steps,
            # so any two summation orders differ there (PyTorch's too).
            # Compare the rest; the key bias must stay at noise level:
            # AdamW moves an element by at most lr a step (|m_hat /
            # sqrt(v_hat)| <= 1 as 1 - beta1 = 0.1 <= sqrt(1 - beta2) =
            # 0.224; docs/Testing.md), and lr is 3e-4, so lr x STEPS
            # bounds it exactly.
            for _, p in results.values():
                key = p["h0.attn.c_attn.bias"][64:128]
                check(np.abs(key).max() < 3e-4 * STEPS,
                      "gpt: the key bias only drifts (max %.2e)" % np.abs(key).max())
                key[:] = 0
        diff = compare(results[2][1], results[1][1])
        # Two summation orders of float32 gradients (rank-local sums, then
        # the all-reduce). SGD passes a gradient's rounding (~1e-7 relative)
        # through linearly: 1e-5 over 20 steps. AdamW divides each update by
        # sqrt(v), so a zero-initialised bias whose gradient is small moves
        # by lr-sized steps whose rounding is relative to that small
        # gradient, and the moments carry it on. Measured: 6e-5 (on
        # h0.attn.c_attn.bias) with OpenBLAS's AVX-512 SkylakeX kernels,
        # 1.65e-4 (on h0.mlp.c_fc.weight.exp_avg, a dozen arrays above
        # 8e-5) with its AVX2 Zen kernels on an AMD EPYC: the BLAS kernels'
        # own summation orders. 5e-4 is 3x the larger; a wrong gradient
        # term moves arrays by 1e-2 or more.
        tol = 1e-5 if model == "mlp" else 5e-4
        check(diff <= tol, "%s: 2 ranks x half batch vs 1 rank x whole batch: "
              "parameters differ by %.2e (at most %.0e)" % (model, diff, tol))
        if model == "mlp":
            # float32 against float64: 784-term dot products and 64-row sums
            # round to about 1e-7 relative per step; 20 SGD steps with
            # momentum 0.9 accumulate up to ~10x that per step of history.
            # 1e-4 is 50x above the ~2e-6 measured, and far below what any
            # wrong term (a missing 1/n, a wrong ReLU mask, a momentum not
            # applied) changes, which is O(1) relative.
            init = os.path.join(out, "mlp-global-init.npz")
            braidtest.braid_run(one.replace(".mlir", ".plan"), ranks=1,
                                args=["--steps", "0", "--save", init])
            ref_losses, ref = numpy_mlp(params(init), data, STEPS)
            for ranks in (1, 2):
                got_losses, got = results[ranks]
                check(sorted(got) == sorted(ref), "mlp on %d ranks: the arrays numpy has" % ranks)
                worst = max(braidtest.max_rel_diff(got[k], ref[k]) for k in ref)
                check(worst <= 1e-4, "mlp on %d ranks vs float64 numpy: final parameters and "
                      "momentum differ by %.2e" % (ranks, worst))
                lworst = braidtest.max_rel_diff(got_losses, ref_losses)
                check(lworst <= 1e-5, "mlp on %d ranks vs float64 numpy: losses of the %d steps "
                      "differ by %.2e" % (ranks, STEPS, lworst))
        loss_diff = max(abs(a - b) / abs(b) for a, b in zip(results[2][0], results[1][0]))
        check(loss_diff <= 1e-5, "%s: losses of 1 and 2 ranks differ by %.2e" % (model, loss_diff))

    # --params and --data convert float64 to float32 and int32 to int64.
    mlir = generate(out, "gpt", 2)
    plan = mlir.replace(".mlir", "-convert.plan")
    braidtest.compile_step(mlir, plan)
    init = os.path.join(out, "init.npz")
    braidtest.braid_run(plan, ranks=2, args=["--steps", "0", "--save", init])
    rng = np.random.default_rng(3)
    data = {"tokens": rng.integers(0, 64, (4, 32)), "labels": rng.integers(0, 64, (4, 32))}
    runs = []
    for suffix, ptype, itype in (("same", np.float32, np.int64), ("wide", np.float64, np.int32)):
        ppath, dpath = os.path.join(out, "p-%s.npz" % suffix), os.path.join(out, "d-%s.npz" % suffix)
        np.savez(ppath, **{k: v.astype(ptype) for k, v in params(init).items()})
        np.savez(dpath, **{k: v.astype(itype) for k, v in data.items()})
        p = braidtest.braid_run(plan, ranks=2, args=["--steps", "3", "--params", ppath,
                                                     "--data", dpath])
        runs.append(braidtest.losses(p.stdout))
    check(runs[0] == runs[1] and len(runs[0]) == 3,
          "float64 parameters and int32 data give the same losses: %s" % runs[1])

    print("train: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
