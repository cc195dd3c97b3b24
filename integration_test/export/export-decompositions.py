# The exporter's capture and its core-ATen decompositions (docs/Export.md,
# "Capture"). A regressor whose ops braid has no lowering for, GLU and
# nn.MSELoss (aten.glu, aten.mse_loss and their backwards), with a LayerNorm,
# a GELU and a SiLU, whose ops braid lowers whole.
# - torch 2.x (aot_export_joint_simple with torch's core-ATen table less the
#   ops braid lowers): the table holds no op of braid.aten.LOWERINGS and
#   holds aten.mse_loss and aten.glu; the step exports, its IR keeps
#   braid.layer_norm_backward, braid.gelu_backward and silu's
#   braid.unary_backward (not decomposed: silu_backward has a
#   CompositeImplicitAutograd kernel, which torch's export capture would
#   split into eight elementwise ops unless told to keep it), and
#   it trains 10 steps on 2 data-parallel ranks like PyTorch DDP
#   (braid.compare.against_pytorch: every loss within 1e-5 relative of
#   float64 PyTorch, the final arrays within float32 PyTorch's spread, as
#   derived in compare.py).
# - torch 1.13 (the legacy capture, aot_function, no decompositions): the
#   same model is a clear ExportError naming aten.mse_loss and aten.glu
#   with where they come from (loss_fn (MSELoss), glu (GLU)) and saying
#   that torch 1.13 captures without core-ATen decompositions; nothing is
#   written.
# The test command runs the exporter's tests under both (docs/Testing.md).
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, against_ddp  # noqa: E402
import braid  # noqa: E402
from braid import aten  # noqa: E402

RANKS = 2
STEPS = 10
ROWS = 8  # a rank's rows


class Regressor(nn.Module):
    def __init__(self, features=12, hidden=16, outputs=3):
        super().__init__()
        self.inp = nn.Linear(features, 2 * hidden)
        self.glu = nn.GLU()
        self.norm = nn.LayerNorm(hidden)
        self.act = nn.GELU()
        self.mid = nn.Linear(hidden, hidden)
        self.silu = nn.SiLU()
        self.out = nn.Linear(hidden, outputs)

    def forward(self, x):
        h = self.act(self.norm(self.glu(self.inp(x))))
        return self.out(self.silu(self.mid(h)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    torch.manual_seed(0)
    model = Regressor()
    x = torch.randn(RANKS * ROWS, 12)
    y = torch.randn(RANKS * ROWS, 3)
    spec = dict(model=model, example_inputs=(x[:ROWS],), example_targets=(y[:ROWS],),
                loss_fn=nn.MSELoss(),
                optimizer=torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01))
    prefix = os.path.join(out, "regressor")
    for suffix in (".mlir", ".npz", ".batch.npz"):
        if os.path.exists(prefix + suffix):
            os.remove(prefix + suffix)

    def export():
        return braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=((x,), (y,)))

    if aten.legacy_capture():
        try:
            export()
            check(False, "torch %s: the legacy capture exported GLU and MSELoss"
                  % torch.__version__)
        except braid.ExportError as e:
            text = str(e)
            print(text)
            check("aten.mse_loss.default (from loss_fn (MSELoss))" in text and
                  "aten.glu.default (from glu (GLU))" in text and
                  "torch 1.13 captures without core-ATen decompositions" in text and
                  not os.path.exists(prefix + ".mlir"),
                  "torch %s (legacy capture): GLU and MSELoss are an error naming their "
                  "aten ops and the legacy capture, nothing written" % torch.__version__)
        check.finish("export-decompositions")

    table = aten.decompositions()
    check(table and not any(op in aten.LOWERINGS for op in table) and
          torch.ops.aten.mse_loss.default in table and torch.ops.aten.glu.default in table,
          "torch %s: %d core-ATen decompositions, none of an op braid lowers, mse_loss's "
          "and glu's among them" % (torch.__version__, len(table)))
    e = export()
    kept = [op for op in ("braid.layer_norm_backward ", "braid.gelu_backward ",
                          "braid.unary_backward silu ") if op in e.mlir]
    check(len(kept) == 3, "the ops braid lowers stay whole: %s" % kept)
    against_ddp(check, "GLU + MSELoss", spec, e, ((x,), (y,)), STEPS, RANKS)
    check.finish("export-decompositions")


if __name__ == "__main__":
    main()
