# Collective matmul trains what the undecomposed step trains. Each
# tensor-parallel step of braid.models (Megatron's layout, sequence
# parallelism on) is compiled twice, with braid-compile
# --collective-matmul=on (every all-gather into a matmul and every matmul
# into a reduce-scatter cut into ring steps on braid.collective_permute)
# and without, and trained on CPU ranks from the same initial values and
# data:
#
#   - the GPT (fused q/k/v, tied embedding, AdamW) at tp 2 (2 ranks), tp 4
#     (4 ranks) and dp 2 x tp 2 (4 ranks);
#   - a Llama (gated MLP, untied lm head, both tables split by rows) at tp 2
#     and tp 4.
#
# Two of them also with --regather=false (the backward reads the forward's
# gathered layer-norm outputs instead of gathering them again: the same
# values).
#
# Judged: the plan has the rings (permutes, no tensor-parallel all-gather
# left before a matmul); every loss of 10 steps within 1e-5 relative; the
# gradients of step 1 (AdamW's first moment after one step is (1 - beta1)
# times the gradient; its second (1 - beta2) times the gradient squared)
# within 1e-5 by norm, |a - b| / |b| per array.
#
# The bound. The two steps compute the same sums in another order, and
# nothing else (a gathered piece's product is the gathered product's rows,
# bit for bit): a ring adds the t partial products of a reduce-scatter's
# block one rank after another, where MPI's reduce-scatter adds them in its
# own order. Two float32 orders of a sum of t terms differ by at most
# 2 (t - 1) u sum |terms| (u = 2^-24, Higham's gamma_{t-1} each): 3.6e-7 of
# sum |terms| at t = 4, and the partial products of random weights have
# mixed signs, so |sum| is below sum |terms| by about sqrt(t) = 2: 7e-7 of
# each changed activation. Those perturb what follows; the step's later
# layers, its loss and its backward are linear to first order in the
# perturbation, and these 1-layer models amplify it by a small factor
# (their layer norms' and softmax's Jacobians): 1e-5 allows 14x. The second
# moment (the gradient squared) doubles the relative error: 2e-5. Measured
# here: up to 7e-7. Losses: 1e-5 as tensor-parallel.py. Later parameters
# are not compared elementwise: AdamW turns a near-zero gradient's rounding
# into learning-rate-sized steps in any implementation
# (tensor-parallel-torch.py judges the trained parameters of the torch GPT
# with collective matmul against float64 PyTorch by that spread).
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

STEPS = 10
LLAMA = ["--layers", "1", "--hidden", "64", "--heads", "4", "--seq", "16", "--vocab", "128",
         "--batch", "2", "--vocab-parallel"]

check = braidtest.Checker()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # The last field: braid-compile flags of the decomposed step besides
    # --collective-matmul=on (--regather=false: the backward reads the
    # forward's gathered layer-norm outputs, the same values).
    keep = ["--regather=false"]
    cases = (("gpt tp 2", "gpt", 1, 2, ["--tiny"], []),
             ("gpt tp 4", "gpt", 1, 4, ["--tiny"], keep),
             ("gpt dp 2 x tp 2", "gpt", 2, 2, ["--tiny"], []),
             ("llama tp 2", "llama2-7b", 1, 2, LLAMA, keep),
             ("llama tp 4", "llama2-7b", 1, 4, LLAMA, []))
    for what, model, dp, tp, extra, flags in cases:
        what += " " + " ".join(flags) if flags else ""
        prefix = os.path.join(out, re.sub(r"[^\w]", "", what))
        mlir = prefix + ".mlir"
        braidtest.run([sys.executable, "-m", "braid.models", model, "--world-size",
                       str(dp * tp), "--tp", str(tp), "-o", mlir] + extra)
        ir = braidtest.run([braidtest.tool("braid-compile"), mlir, "--collective-matmul=on",
                            *flags, "--no-overlap", "--emit=mlir", "-o", "-"]).stdout
        # What is left gathered is read by no matmul along a row of its
        # product: the vocabulary-parallel loss's statistics, the residual
        # stream's gradient before the embeddings' backward, and the
        # backward's re-gathers of saved layer-norm outputs for the weight
        # gradients (the tokens contracted: t products would need t - 1
        # sums of the whole weight gradient; the overlap passes start them
        # early instead).
        gathered = re.findall(r"(%\w+) = braid.all_gather ", ir)
        fed = []
        for g in gathered:
            for line in re.findall(r"braid\.matmul [^\n]*", ir):
                operands = re.match(r"braid\.matmul (%\w+), (%\w+)", line).groups()
                contracted = operands == (operands[0], g) and "transpose_a" in line and \
                    "transpose_b" not in line
                if g in operands and not contracted:
                    fed.append(g)
        # What is left reduce-scattered is no matmul's product: a Llama's
        # vocabulary-parallel embedding, and the partial residual stream it
        # starts (the embedding's partial sum plus the attention's
        # row-parallel product, kept for the MLP's sum too: the pass
        # decomposes a product plus a partial sum only where nothing else
        # reads the sum).
        defs = dict(re.findall(r"(%\w+) = (braid\.\w+)", ir))
        scattered = [v for v in re.findall(r"braid\.reduce_scatter (%\w+)", ir)
                     if defs.get(v) == "braid.matmul"]
        permutes = ir.count("braid.collective_permute ")
        check(permutes >= 6 * (tp - 1) and not fed and not scattered and
              "braid.shard_concat" in ir,
              "%s: %d permutes, no all-gather into a matmul (%d left), no reduce-scatter of a "
              "product (%d left)" % (what, permutes, len(gathered),
                                     ir.count("braid.reduce_scatter ")))
        runs = {}
        for mode in ("off", "on"):
            plan = "%s-%s.plan" % (prefix, mode)
            braidtest.compile_step(mlir, plan, "--collective-matmul=" + mode,
                                   *(flags if mode == "on" else []))
            first = "%s-%s-1.npz" % (prefix, mode)
            braidtest.braid_run(plan, ranks=dp * tp, args=["--steps", "1", "--save", first])
            p = braidtest.braid_run(plan, ranks=dp * tp, args=["--steps", str(STEPS)])
            runs[mode] = (braidtest.losses(p.stdout), first)
        (off, off_first), (on, on_first) = runs["off"], runs["on"]
        worst = max(abs(a - b) / abs(b) for a, b in zip(on, off))
        check(len(on) == len(off) == STEPS and worst <= 1e-5,
              "%s: %d losses within 1e-5 of the undecomposed step (worst %.2g)" % (
                  what, len(on), worst))
        with np.load(on_first) as a, np.load(off_first) as b:
            braidtest.check_moments(check, what, a, b)
    check.finish("collective-matmul")


if __name__ == "__main__":
    main()
