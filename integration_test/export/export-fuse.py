# braid-fuse-kernels on a model from PyTorch: the bundled GPT (explicit
# attention: scores scaled, causally masked and normalized; head transposes
# around batched matmuls) is exported for 2 ranks and compiled with and
# without the pass (--fuse=false). The fused step has no braid.scale,
# braid.causal_mask or braid.transpose left, every softmax and
# softmax_backward carries the folded scale and mask, the MLP's first bias
# is added by its gelu and gelu_backward, attention's matmuls read and
# write through permutations, and its buffers add up to fewer bytes
# (the arena is no larger: its peak is elsewhere). Trained 10 steps on 2
# cpu ranks (with --check-memory): the elementwise folds alone (braid-opt
# --braid-fuse-kernels=transposes=false) give
# the same loss at every step and the same final parameters and optimizer
# state, bit for bit; with the transposes folded too, BLAS reads permuted
# operands by another path, and the losses stay within 1e-6 relative and
# every final array within 1e-5 of its largest entry. The slices of the
# fused q/k/v projection fold into the attention matmuls that read them
# (`lhs_slice`/`rhs_slice`: no copy of q, k or v) and change no bit: the
# step folded without them (--braid-fuse-kernels=slices=false) trains to
# the same losses and arrays, with more buffer bytes. The exporter writes
# every aten `t` as a braid.transpose and leaves it to MLIR: after
# braid-compile's canonicalize no transpose of the last two dimensions is
# left, and the matmuls read the weights and gradients through
# transpose_a/transpose_b; the exporter writes each bias (a linear
# layer's, the positional embedding's over the batch) as a broadcast and an
# add, and canonicalize makes each a bias_add (braid.add's canonicalizer),
# with the pass or without. export-train.py compares the fused default
# with PyTorch.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, train  # noqa: E402
import braid  # noqa: E402

STEPS = 10
RANKS = 2


def count(mlir, pattern):
    return len(re.findall(pattern, mlir))


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS)
    prefix = os.path.join(out, "gpt")
    exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=spec["global_batch"])
    layers = 2
    # The elementwise folds alone: braid-opt folds, braid-compile does not
    # fold again (canonicalize first, as braid-compile does).
    elementwise = prefix + "-elementwise.mlir"
    braidtest.run([braidtest.tool("braid-opt"), exported.paths["mlir"],
                   "--canonicalize", "--braid-fuse-kernels=transposes=false", "-o", elementwise])
    # Everything but the slices.
    copies = prefix + "-copies.mlir"
    braidtest.run([braidtest.tool("braid-opt"), exported.paths["mlir"],
                   "--canonicalize", "--braid-fuse-kernels=slices=false", "-o", copies])
    runs = {}
    for name, step, flags in (("fused", exported.paths["mlir"], []),
                              ("elementwise", elementwise, ["--fuse=false"]),
                              ("copies", copies, ["--fuse=false"]),
                              ("unfused", exported.paths["mlir"], ["--fuse=false"])):
        plan = "%s-%s.plan" % (prefix, name)
        braidtest.compile_step(step, plan, *flags)
        p = braidtest.run([braidtest.tool("braid-compile"), step,
                           "--emit=mlir", "--report", *flags])
        arena, buffers = map(int, re.search(r"arena (\d+) bytes, buffers (\d+) bytes",
                                            p.stderr).groups())
        losses, state = train(plan, exported, "%s-%s" % (prefix, name), STEPS, RANKS)
        runs[name] = dict(ir=p.stdout, arena=arena, buffers=buffers, losses=losses,
                          state=state)

    fused, unfused = runs["fused"], runs["unfused"]
    swap = r"braid\.transpose [^\n]*permutation = \[1, 0\]"
    written = count(open(exported.paths["mlir"]).read(), swap)
    flagged = count(unfused["ir"], r"braid\.matmul [^\n]*transpose_[ab]")
    check(written >= 4 * layers and count(unfused["ir"], swap) == 0
          and flagged >= 4 * layers,
          "exported: %d transposes of 2-d weights and gradients, which canonicalize folds "
          "into %d matmuls' transpose_a/transpose_b" % (written, flagged))
    check(count(unfused["ir"], r"braid\.scale ") == 2 * layers
          and count(unfused["ir"], r"braid\.causal_mask ") == 2 * layers,
          "unfused: %d braid.scale and %d braid.causal_mask (a forward and a backward "
          "each per layer)" % (count(unfused["ir"], r"braid\.scale "),
                               count(unfused["ir"], r"braid\.causal_mask ")))
    check(count(fused["ir"], r"braid\.scale ") == 0
          and count(fused["ir"], r"braid\.causal_mask ") == 0,
          "fused: no braid.scale or braid.causal_mask left")
    folded = r"dim = 3 \{.*causal, scale = 2.500000e-01 : f64\}"
    check(count(fused["ir"], r"braid\.softmax %\S+ " + folded) == layers
          and count(fused["ir"], r"braid\.softmax_backward %\S+, %\S+ " + folded) == layers,
          "fused: every softmax and softmax_backward folds the scale 1/sqrt(16) = 0.25 and the mask")
    spread = count(open(exported.paths["mlir"]).read(), r"braid\.broadcast ")
    positional = r"braid\.bias_add %\S+, %\S+ [^\n]*: tensor<\d+x\d+x\d+xf32>, tensor<\d+x\d+xf32>"
    check(spread == 3 * layers + 1 and all(count(r["ir"], r"braid\.broadcast ") == 0
                                           and count(r["ir"], positional) == 1
                                           for r in (fused, unfused)),
          "fused and unfused: the %d broadcasts exported (3 linear biases a layer and "
          "the positional embedding over the batch) are bias_adds after canonicalize, "
          "the positional embedding's of its [seq, hidden]" % spread)
    check(count(unfused["ir"], r"braid\.bias_add ") - count(fused["ir"], r"braid\.bias_add ")
          == layers
          and count(fused["ir"], r"braid\.gelu %\S+, %\S+ \{") == layers
          and count(fused["ir"], r"braid\.gelu_backward %\S+, %\S+, %\S+ \{") == layers,
          "fused: the MLP's first bias_add of each layer folds into its gelu and gelu_backward")
    transposes = count(unfused["ir"], r"braid\.transpose ")
    permuted = count(fused["ir"], r"braid\.matmul [^\n]*_permutation")
    check(transposes >= 4 * layers and count(fused["ir"], r"braid\.transpose ") == 0
          and permuted >= 4 * layers,
          "fused: the %d head transposes fold into %d matmuls that read and write "
          "through permutations" % (transposes, permuted))
    slices = count(unfused["ir"], r"braid\.slice ")
    sliced = count(fused["ir"], r"braid\.matmul [^\n]*lhs_slice") + \
        count(fused["ir"], r"braid\.matmul [^\n]*rhs_slice")
    check(slices == 3 * layers and count(fused["ir"], r"braid\.slice ") == 0
          and sliced >= 3 * layers,
          "fused: the %d slices of q, k and v fold into %d matmul operands read through "
          "lhs_slice/rhs_slice" % (slices, sliced))
    copies = runs["copies"]
    check(count(copies["ir"], r"braid\.slice ") == slices
          and fused["buffers"] < copies["buffers"],
          "the slices folded: buffers %d bytes < %d with them copied" % (
              fused["buffers"], copies["buffers"]))
    check(copies["losses"] == fused["losses"] and sorted(copies["state"]) ==
          sorted(fused["state"]) and all(np.array_equal(copies["state"][k], fused["state"][k])
                                         for k in fused["state"]),
          "the slices folded: the same losses and %d final arrays as with them copied, bit "
          "for bit" % len(fused["state"]))
    check(fused["buffers"] < unfused["buffers"] and fused["arena"] <= unfused["arena"],
          "fused buffers %d bytes < unfused %d bytes, arena %d <= %d bytes" % (
              fused["buffers"], unfused["buffers"], fused["arena"], unfused["arena"]))
    # Folding softmax's scale and mask and gelu's bias changes no bit; BLAS
    # may take another path for a permuted operand (rounding differences).
    ew = runs["elementwise"]
    check(len(ew["losses"]) == STEPS and ew["losses"] == unfused["losses"],
          "elementwise folds: the same loss at every step: %s" % ew["losses"][-1:])
    same = sorted(ew["state"]) == sorted(unfused["state"]) and all(
        np.array_equal(ew["state"][k], unfused["state"][k]) for k in ew["state"])
    check(same, "elementwise folds: the same %d final arrays, bit for bit" % len(ew["state"]))
    loss_diff = max(abs(a - b) / abs(b) for a, b in zip(fused["losses"], unfused["losses"]))
    check(len(fused["losses"]) == STEPS and loss_diff <= 1e-6,
          "all folds: losses within %.2g relative of the unfused step's (bound 1e-6)" % loss_diff)
    worst = max(float(np.abs(fused["state"][k] - v).max() / max(np.abs(v).max(), 1e-30))
                for k, v in unfused["state"].items())
    check(sorted(fused["state"]) == sorted(unfused["state"]) and worst <= 1e-5,
          "all folds: every final array within %.2g of the unfused one's largest entry "
          "(bound 1e-5)" % worst)
    check.finish("export-fuse")


if __name__ == "__main__":
    main()
