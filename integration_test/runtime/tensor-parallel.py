# Tensor parallelism trains what data parallelism trains. The same global
# step (braid.models, Megatron's layout) compiled for tensor-parallel 2 and
# for tensor-parallel 1 must train alike from the same initial values (braid-run
# initializes the global value and keeps each rank's piece) on the same data
# (synthesized per data-parallel replica, shared by a tensor-parallel group):
#
#   - a GPT (fused q/k/v, tied embedding, AdamW) at tp 2 on 2 ranks against
#     1 rank, with sequence parallelism (braid-compile's default) and
#     without, and at dp 2 x tp 2 on 4 ranks against dp 2 on 2 ranks;
#   - the same GPT with the vocabulary-parallel embedding and cross-entropy
#     (--vocab-parallel: the tied table split by rows) at tp 2, with and
#     without sequence parallelism, and at dp 2 x tp 2; a small Llama
#     (untied lm head) with both tables split by rows at tp 2;
#   - an MLP of three linear layers (column, row, replicated; SGD) at tp 2.
#
# Judged: the losses of every step within 1e-5 relative (the pieces sum in
# another order: float32 rounding, nothing more); what --save writes has
# the global names and shapes; the MLP's final parameters and momenta within
# 1e-5 (SGD is linear in the gradients) and the GPT's first AdamW moments
# (linear in the gradients) within 1e-4. The GPT's parameters are not
# compared elementwise: the key bias of attention has an exactly zero
# gradient (softmax ignores it), and AdamW turns its rounding into steps of
# the learning rate's size in any implementation (tensor-parallel-torch.py
# judges parameters against float64 PyTorch by that spread).
# Then a run saved at tp 2 resumes at tp 1 and continues the tp-1 run.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def build(out, name, model, dp, tp, *extra, flags=(), tiny=True):
    mlir = os.path.join(out, name + ".mlir")
    braidtest.run([sys.executable, "-m", "braid.models", model] + (["--tiny"] if tiny else []) +
                  ["--world-size", str(dp * tp), "--tp", str(tp), "-o", mlir] + list(extra))
    plan = os.path.join(out, name + ".plan")
    braidtest.compile_step(mlir, plan, *flags)
    return plan


def train(plan, ranks, save, steps=5, args=()):
    result = braidtest.braid_run(plan, ranks=ranks, args=[
        "--steps", str(steps), "--save", save] + list(args))
    return braidtest.losses(result.stdout)


def compare_losses(what, got, want):
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    check(len(got) == len(want) and worst <= 1e-5,
          "%s: %d losses within 1e-5 (worst %.2g): %s vs %s" % (what, len(got), worst, got, want))


def compare_state(what, got_path, want_path, bound, keep):
    got, want = np.load(got_path), np.load(want_path)
    check(sorted(got.files) == sorted(want.files), "%s: --save writes the same %d names" % (
        what, len(want.files)))
    shapes = [k for k in want.files if k in got.files and got[k].shape != want[k].shape]
    check(not shapes, "%s: every saved array has its global shape (%s differ)" % (
        what, ", ".join(shapes) or "none"))
    names = [k for k in want.files if keep(k) and k in got.files and not shapes]
    worst = max((braidtest.max_rel_diff(got[k], want[k]), k) for k in names)
    check(len(names) > 3 and worst[0] <= bound, "%s: %d arrays within %g (worst %.2g, %s)" % (
        what, len(names), bound, worst[0], worst[1]))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    path = lambda n: os.path.join(out, n)  # noqa: E731
    moments = lambda k: k.endswith(".exp_avg")  # noqa: E731

    gpt1 = build(out, "gpt-tp1", "gpt", 1, 1)
    gpt2 = build(out, "gpt-tp2", "gpt", 1, 2)
    want = train(gpt1, 1, path("gpt-tp1.npz"))
    got = train(gpt2, 2, path("gpt-tp2.npz"))
    compare_losses("gpt tp 2 vs 1", got, want)
    compare_state("gpt tp 2 vs 1", path("gpt-tp2.npz"), path("gpt-tp1.npz"), 1e-4, moments)
    gpt2n = build(out, "gpt-tp2-nosp", "gpt", 1, 2, flags=["--sequence-parallel=false"])
    got = train(gpt2n, 2, path("gpt-tp2-nosp.npz"))
    compare_losses("gpt tp 2 without sequence parallelism vs 1", got, want)

    # The vocabulary-parallel embedding and cross-entropy (the tied table
    # split by rows), with sequence parallelism and without.
    for name, flags in (("gpt-tp2-vocab", []),
                        ("gpt-tp2-vocab-nosp", ["--sequence-parallel=false"])):
        plan = build(out, name, "gpt", 1, 2, "--vocab-parallel", flags=flags)
        got = train(plan, 2, path(name + ".npz"))
        compare_losses(name + " vs tp 1", got, want)
        compare_state(name + " vs tp 1", path(name + ".npz"), path("gpt-tp1.npz"), 1e-4,
                      moments)

    # A Llama (untied lm head, gated MLP) with both its tables split by rows:
    # the embedding's gradient reaches AdamW through the data-parallel
    # all-reduce.
    small = ["--layers", "1", "--hidden", "64", "--heads", "4", "--seq", "16", "--vocab", "128",
             "--batch", "2"]
    llama1 = build(out, "llama-tp1", "llama2-7b", 1, 1, *small, tiny=False)
    llama2 = build(out, "llama-tp2-vocab", "llama2-7b", 1, 2, "--vocab-parallel", *small,
                   tiny=False)
    want_llama = train(llama1, 1, path("llama-tp1.npz"))
    got = train(llama2, 2, path("llama-tp2-vocab.npz"))
    compare_losses("llama tp 2 vocabulary-parallel vs 1", got, want_llama)
    # Its loss falls fast (5.0 to 1.5 in 5 steps): AdamW's lr-sized steps on
    # near-zero gradients part the two runs' later moments, so the moments
    # are compared after one step (the gradients, by 1 - beta1).
    train(llama1, 1, path("llama-tp1-1.npz"), steps=1)
    train(llama2, 2, path("llama-tp2-vocab-1.npz"), steps=1)
    compare_state("llama tp 2 vocabulary-parallel vs 1, step 1", path("llama-tp2-vocab-1.npz"),
                  path("llama-tp1-1.npz"), 1e-4, moments)

    gpt21 = build(out, "gpt-dp2", "gpt", 2, 1)
    gpt22 = build(out, "gpt-dp2-tp2", "gpt", 2, 2)
    want = train(gpt21, 2, path("gpt-dp2.npz"))
    got = train(gpt22, 4, path("gpt-dp2-tp2.npz"))
    compare_losses("gpt dp 2 x tp 2 vs dp 2", got, want)
    compare_state("gpt dp 2 x tp 2 vs dp 2", path("gpt-dp2-tp2.npz"), path("gpt-dp2.npz"), 1e-4,
                  moments)
    gpt22v = build(out, "gpt-dp2-tp2-vocab", "gpt", 2, 2, "--vocab-parallel")
    got = train(gpt22v, 4, path("gpt-dp2-tp2-vocab.npz"))
    compare_losses("gpt dp 2 x tp 2 vocabulary-parallel vs dp 2", got, want)
    compare_state("gpt dp 2 x tp 2 vocabulary-parallel vs dp 2", path("gpt-dp2-tp2-vocab.npz"),
                  path("gpt-dp2.npz"), 1e-4, moments)

    mlp1 = build(out, "mlp-tp1", "mlp", 1, 1, "--layers", "2")
    mlp2 = build(out, "mlp-tp2", "mlp", 1, 2, "--layers", "2")
    want = train(mlp1, 1, path("mlp-tp1.npz"))
    got = train(mlp2, 2, path("mlp-tp2.npz"))
    compare_losses("mlp tp 2 vs 1", got, want)
    compare_state("mlp tp 2 vs 1", path("mlp-tp2.npz"), path("mlp-tp1.npz"), 1e-5,
                  lambda k: k != "loss")

    # Saved at tp 2 after 2 steps, resumed at tp 1 for 3: the tp-1 run.
    train(gpt2, 2, path("half.npz"), steps=2)
    rest = train(gpt1, 1, path("resumed.npz"), steps=3, args=["--params", path("half.npz")])
    whole = braidtest.losses(braidtest.braid_run(gpt1, ranks=1, args=["--steps", "5"]).stdout)
    compare_losses("saved at tp 2, resumed at tp 1", rest, whole[2:])

    print("tensor-parallel: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
