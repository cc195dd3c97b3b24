# Models in the styles people train (Inputs/zoo.py: nanoGPT, minGPT with
# NewGELU from tanh and pow, llama2.c with RMSNorm, a SiLU-gated MLP, rotary
# embeddings and grouped key/value heads, a ViT with a tensor-attribute
# positional embedding), each computing its loss in forward from targets
# among its inputs. Each is exported for 2 ranks with braid.export, compiled
# and trained 10 steps with AdamW on 2 cpu ranks (mpirun), each rank on its
# half of the global batch, and judged by braid.compare.against_pytorch
# against PyTorch DDP on 2 ranks: every loss within 1e-5 relative of float64
# PyTorch, every final array no farther from it than 4x float32 PyTorch is.
# Dropout models run at p = 0 here. Under torch 2.x nanoGPT and llama2.c
# also run with F.scaled_dot_product_attention, which must export to one
# braid.attention a layer (and its backward) and no softmax.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, against_ddp  # noqa: E402
import zoo  # noqa: E402
import braid  # noqa: E402

STEPS = 10
RANKS = 2


def spec_of(model, batch):
    half = batch[0].shape[0] // RANKS
    return dict(model=model, example_inputs=tuple(t[:half] for t in batch), example_targets=(),
                loss_fn=zoo.loss_from_forward, world_size=RANKS,
                optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    names = sys.argv[2:] or zoo.NAMES + (zoo.SDPA_NAMES if sdpa else ())
    for name in names:
        model, batch = zoo.make(name)
        spec = spec_of(model, batch)
        prefix = os.path.join(out, name)
        e = braid.export(model, spec["example_inputs"], (), spec["loss_fn"], spec["optimizer"],
                         RANKS, output=prefix, global_batch=(batch, ()))
        ops = e.summary["aten_ops"]
        check(True, "%s: exported %d aten ops of %d kinds to %d braid ops" % (
            name, sum(ops.values()), len(ops), e.summary["braid_ops"]))
        if name in zoo.SDPA_NAMES:
            text = open(e.paths["mlir"]).read()
            check(text.count("braid.attention ") == 2 and text.count("braid.attention_backward") == 2
                  and "braid.softmax" not in text,
                  "%s: scaled_dot_product_attention is braid.attention (%d) and its backward "
                  "(%d), no softmax" % (name, text.count("braid.attention "),
                                         text.count("braid.attention_backward")))
        against_ddp(check, name, spec, e, (batch, ()), STEPS, RANKS)
    check.finish("export-models")


if __name__ == "__main__":
    main()
