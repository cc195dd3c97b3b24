# Dropout in train mode (torch 1.13's bernoulli_, torch 2.x's native_dropout)
# exports to braid.dropout_mask, seeded and counter-based: its masks are not
# PyTorch's bit for bit, so the test checks what must hold of any correct
# dropout, on 2 cpu ranks:
#  - a probe, loss = mean(dropout(x * w)) with x = 1, w = 1 and lr = 0: the
#    loss of each step is the kept fraction over (1 - p); its mean over 40
#    steps is 1 - p within 4 standard deviations of a binomial draw, and its
#    variance over the steps is the binomial's, p (1 - p) / n (within 0.4x to
#    2.5x: a chi-square of 39 degrees of freedom);
#  - the backward uses the forward's mask: the gradient of w (SGD's momentum
#    buffer with momentum 0) equals the loss;
#  - the same seed gives the same losses in two runs, another seed others,
#    and every step a new mask;
#  - minGPT (Inputs/zoo.py) with p = 0.1 in train mode trains: the loss falls
#    over 10 steps, two runs agree bit for bit, and the run differs from the
#    p = 0 run (which export-models.py holds equal to PyTorch).
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest  # noqa: E402
import zoo  # noqa: E402
import braid  # noqa: E402

RANKS = 2
P = 0.3


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))
        self.drop = nn.Dropout(P)

    def forward(self, x):
        return self.drop(x * self.w).mean()


def run(plan, exported, steps, save=None):
    args = ["--steps", str(steps), "--params", exported.paths["params"], "--data",
            exported.paths["batch"], "--timeout", "120"]
    p = braidtest.braid_run(plan, ranks=RANKS, args=args + (["--save", save] if save else []))
    return braidtest.losses(p.stdout)


def export(out, name, model, inputs, optimizer, seed=0):
    prefix = os.path.join(out, name)
    e = braid.export(model, tuple(t[:t.shape[0] // RANKS] for t in inputs), (),
                     zoo.loss_from_forward, optimizer, RANKS, output=prefix,
                     global_batch=(inputs, ()), seed=seed)
    braidtest.compile_step(prefix + ".mlir", prefix + ".plan")
    return e, prefix + ".plan"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    # The probe: 2 ranks of 64 x 64 ones.
    steps, rows, cols = 40, 128, 64
    n = rows * cols  # elements over both ranks
    x = torch.ones(rows, cols)
    probe = Probe()
    opt = torch.optim.SGD(probe.parameters(), lr=0.0, momentum=0.0)
    e, plan = export(out, "probe", probe, (x,), opt)
    masks = e.mlir.count("braid.dropout_mask")
    check(masks == 1 and "dropout.step" in e.mlir,
          "probe: one braid.dropout_mask, its step an optimizer-state scalar")
    save = os.path.join(out, "probe.out.npz")
    losses = run(plan, e, steps, save)
    kept = np.array(losses) * (1 - P)
    sigma = math.sqrt(P * (1 - P) / (n * steps))
    check(abs(kept.mean() - (1 - P)) < 4 * sigma,
          "probe: kept fraction %.5f over %d steps, expected %.2f within 4 sigma (%.5f)"
          % (kept.mean(), steps, 1 - P, 4 * sigma))
    ratio = kept.var(ddof=1) / (P * (1 - P) / n)
    check(0.4 < ratio < 2.5, "probe: variance of the kept fraction over steps %.2fx the "
          "binomial's" % ratio)
    with np.load(save) as f:
        grad, step = float(f["w.momentum"][0]), float(f["dropout.step"])
    check(abs(grad - losses[-1]) <= 1e-6 * abs(losses[-1]) and step == steps,
          "probe: the gradient of w %.8f equals the last loss %.8f (one mask, forward and "
          "backward); dropout.step %g after %d steps" % (grad, losses[-1], step, steps))
    again = run(plan, e, steps)
    check(again == losses and len(set(losses)) > steps // 2,
          "probe: the same %d losses in a second run, %d distinct" % (steps, len(set(losses))))
    e2, plan2 = export(out, "probe-seed", probe, (x,), opt, seed=1234)
    other = run(plan2, e2, steps)
    check(other != losses, "probe: seed 1234 draws other masks (first loss %.6f, seed 0's "
          "%.6f)" % (other[0], losses[0]))

    # minGPT with dropout 0.1 in train mode, against itself at p = 0.
    runs = {}
    for p in (0.0, 0.1):
        model, batch = zoo.make("mingpt", p=p)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        e, plan = export(out, "mingpt-p%g" % p, model, batch, opt)
        runs[p] = (run(plan, e, 10), e.mlir.count("braid.dropout_mask"))
        if p:
            runs["again"] = (run(plan, e, 10), 0)
    (l0, m0), (l1, m1), (l2, _) = runs[0.0], runs[0.1], runs["again"]
    check(m0 == 0 and m1 > 0, "mingpt: %d dropout masks at p = 0.1 (none at p = 0)" % m1)
    check(l1[-1] < 0.9 * l1[0] and l1 == l2 and l1 != l0,
          "mingpt p = 0.1: the loss falls %.4f -> %.4f, two runs agree, p = 0 differs "
          "(%.4f -> %.4f)" % (l1[0], l1[-1], l0[0], l0[-1]))
    check.finish("export-dropout")


if __name__ == "__main__":
    main()
