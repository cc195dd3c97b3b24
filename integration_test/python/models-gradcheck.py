# The hand-written backward passes of braid.models' transformers (GPT-2,
# Llama with grouped-query attention and a gated MLP, BERT; fused attention,
# and Llama's attention also unfused) against central
# finite differences of the loss, on the cpu backend. AdamW with lr = eps =
# 1e4 and no weight decay makes the first update -g * eps / (|g| + eps), which
# is the gradient to 1e-5 relative for the small gradients here: the step's
# own gradient is read off the updated parameters.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402
from braid.models import transformer  # noqa: E402

EPS = 1e4
CASES = {
    "gpt2": dict(kind="gpt2", layers=2, hidden=32, heads=4, vocab=48, seq=8, batch=2),
    "llama-gqa": dict(kind="llama", layers=2, hidden=32, heads=4, kv_heads=2, ffn=48, vocab=48,
                      seq=8, batch=2),
    "bert": dict(kind="bert", layers=1, hidden=32, heads=4, vocab=48, seq=8, batch=2),
    # The scores, mask and softmax written out instead of braid.attention.
    "llama-gqa-unfused": dict(kind="llama", layers=2, hidden=32, heads=4, kv_heads=2, ffn=48,
                              vocab=48, seq=8, batch=2, attention="unfused"),
}


def loss_of(plan, params, data, out):
    np.savez(out, **params)
    p = braidtest.braid_run(plan, args=["--steps", "1", "--params", out, "--data", data])
    return braidtest.losses(p.stdout)[0]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    failures = 0
    for name, shape in CASES.items():
        step = transformer(world_size=1, lr=EPS, eps=EPS, weight_decay=0.0, **shape)
        mlir = os.path.join(out, name + ".mlir")
        with open(mlir, "w") as f:
            f.write(step.text())
        plan = os.path.join(out, name + ".plan")
        braidtest.compile_step(mlir, plan, "--no-overlap")
        data = os.path.join(out, name + "-data.npz")
        b, s, v = shape["batch"], shape["seq"], shape["vocab"]
        np.savez(data, tokens=rng.integers(0, v, (b, s)), labels=rng.integers(0, v, (b, s)))
        # The seeded initial parameters, and the parameters after one step.
        init, after = os.path.join(out, name + "-init.npz"), os.path.join(out, name + "-1.npz")
        braidtest.braid_run(plan, args=["--steps", "0", "--data", data, "--save", init])
        with np.load(init) as f:
            params = {k: f[k].astype(np.float64) for k in f.files
                      if not k.endswith((".exp_avg", ".exp_avg_sq")) and k not in ("step", "loss")}
        start = os.path.join(out, name + "-start.npz")
        np.savez(start, **{k: v.astype(np.float32) for k, v in params.items()})
        braidtest.braid_run(plan, args=["--steps", "1", "--data", data, "--params", start,
                                        "--save", after])
        with np.load(after) as f:
            grads = {k: params[k] - f[k] for k in params}
        # One coordinate of every parameter (its largest gradient, so that
        # finite differences in f32 resolve them).
        checked = bad = 0
        for key in sorted(params):
            g = grads[key].ravel()
            for index in np.argsort(-np.abs(g))[:1]:
                if abs(g[index]) < 2e-3:
                    continue
                h = 2e-2
                plus, minus = dict(params), dict(params)
                plus[key] = params[key].copy().ravel()
                minus[key] = params[key].copy().ravel()
                plus[key][index] += h
                minus[key][index] -= h
                plus[key] = plus[key].reshape(params[key].shape)
                minus[key] = minus[key].reshape(params[key].shape)
                fd = (loss_of(plan, plus, data, os.path.join(out, "p.npz")) -
                      loss_of(plan, minus, data, os.path.join(out, "m.npz"))) / (2 * h)
                checked += 1
                if abs(fd - g[index]) > 0.05 * abs(g[index]) + 2e-4:
                    bad += 1
                    print("FAIL %s %s[%d]: backward %.6f, finite difference %.6f" % (
                        name, key, index, g[index], fd))
        ok = bad == 0 and checked >= len(params)
        print("%s %s: %d coordinates of %d parameters, %d off" % (
            "ok  " if ok else "FAIL", name, checked, len(params), bad))
        failures += not ok
    # Gradient accumulation: the gpt2 step over 2 micro-batches of 1 sequence
    # equals the step over the batch of 2 (a mean loss): the same loss and
    # the same gradients (the first update, with lr = eps as above), from
    # the same parameters and data.
    shape = dict(CASES["gpt2"], batch=1)
    data = os.path.join(out, "accumulate-data.npz")
    np.savez(data, tokens=rng.integers(0, shape["vocab"], (2, shape["seq"])),
             labels=rng.integers(0, shape["vocab"], (2, shape["seq"])))
    results, start = {}, None
    for micro in (1, 2):
        kw = dict(shape, batch=2) if micro == 1 else dict(shape, micro_batches=2)
        step = transformer(world_size=1, lr=EPS, eps=EPS, weight_decay=0.0, **kw)
        mlir = os.path.join(out, "accumulate%d.mlir" % micro)
        with open(mlir, "w") as f:
            f.write(step.text())
        plan = os.path.join(out, "accumulate%d.plan" % micro)
        braidtest.compile_step(mlir, plan, "--no-overlap")
        if start is None:  # the seeded initial state of the one-batch step, for both
            start = os.path.join(out, "accumulate-start.npz")
            braidtest.braid_run(plan, args=["--steps", "0", "--data", data, "--save", start])
        save = os.path.join(out, "accumulate%d.npz" % micro)
        p = braidtest.braid_run(plan, args=["--steps", "1", "--data", data, "--params", start,
                                            "--save", save])
        with np.load(start) as f0, np.load(save) as f:
            results[micro] = (braidtest.losses(p.stdout)[0],
                              {k: f0[k].astype(np.float64) - f[k] for k in f.files
                               if not k.endswith((".exp_avg", ".exp_avg_sq"))
                               and k not in ("step", "loss")})
    loss_diff = abs(results[2][0] - results[1][0]) / abs(results[1][0])
    state_diff = max(braidtest.max_rel_diff(results[2][1][k], v)
                     for k, v in results[1][1].items())
    # The gradient read off p - p' in float32 resolves a gradient of 1e-3
    # next to parameters of about 1 to about 1e-4; a missing 1/k or a lost
    # micro-batch is a difference of 0.5 and more.
    ok = loss_diff <= 1e-6 and state_diff <= 1e-3
    print("%s accumulation: 2 micro-batches of 1 vs a batch of 2: loss %.2e, gradients "
          "%.2e relative" % ("ok  " if ok else "FAIL", loss_diff, state_diff))
    failures += not ok
    print("models-gradcheck: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
