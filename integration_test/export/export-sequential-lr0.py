# Two things a new user meets first (issue 18, item 17, and what it turned
# up): an nn.Sequential, whose parameters are named "0.weight", exports to
# valid IR (an SSA name may not start with a digit and a letter), and SGD
# with lr = 0, which torch accepts, exports, compiles and runs: 3 steps
# leave every parameter bit for bit as it was and the loss unchanged.
#
# REQUIRES: torch, numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest  # noqa: E402
import braid  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    prefix = os.path.join(out, "seq")
    exported = braid.export(model, (x,), (y,), F.cross_entropy,
                            torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9), 1,
                            output=prefix)
    check(sorted(exported.state)[:2] == ["0.bias", "0.bias.momentum"],
          "exported the parameters of an nn.Sequential: %s" % sorted(exported.state))
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)
    p = braidtest.braid_run(plan, args=["--steps", "3", "--params", prefix + ".npz", "--data",
                                        exported.paths["batch"], "--save", prefix + ".out.npz"])
    losses = braidtest.losses(p.stdout)
    check(len(losses) == 3 and len(set(losses)) == 1, "lr = 0: the loss stays %s" % losses)
    before, after = np.load(prefix + ".npz"), np.load(prefix + ".out.npz")
    params = [k for k in before.files if not k.endswith(".momentum")]
    same = [k for k in params if np.array_equal(before[k], after[k])]
    check(len(params) == 4 and same == params,
          "lr = 0: %d of %d parameters unchanged bit for bit" % (len(same), len(params)))
    check.finish("export-sequential-lr0")


if __name__ == "__main__":
    main()
