# ZeRO from PyTorch equals PyTorch. Models in the styles people train are
# exported with braid.export(zero_stage=...) (the module's
# braid.zero_stage, which braid-compile follows), compiled, and trained 10
# steps with AdamW on CPU ranks, judged by braid.compare.against_pytorch
# against PyTorch DDP on the same global batch: every loss within 1e-5
# relative of float64 PyTorch, every final parameter and optimizer-state
# array (braid-run --save gathers the pieces) no farther from float64
# PyTorch than float32 PyTorch is (compare's bound):
#
#   - llama2.c (Inputs/zoo.py: RMSNorm, SiLU-gated MLP, rotary embeddings,
#     grouped key/value heads) at dp 2, stage 1, and at dp 4, stage 2, with
#     its gradients clipped to a global norm of 0.5;
#   - nanoGPT at dp 2, stage 2, with 2 micro-batches accumulated;
#   - the bundled GPT (examples/pytorch/gpt.py: fused q/k/v, tied
#     embedding) at dp 2 x tp 2 (4 ranks, Megatron's layout, sequence
#     parallelism), stage 1.
#
# Each plan is checked to be sharded: a reduce-scatter for every AdamW
# update's gradient and no data-parallel all-reduce of a gradient left.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, against_ddp, braidtest, load_spec  # noqa: E402
import zoo  # noqa: E402
import braid  # noqa: E402

STEPS = 10


def sharded(check, what, mlir):
    """Checks that braid-compile shards the export's every update."""
    ir = braidtest.run([braidtest.tool("braid-compile"), mlir, "--no-overlap", "--emit=mlir",
                        "-o", "-"]).stdout.splitlines()
    scattered = sum("braid.reduce_scatter" in l and "grad_of" in l for l in ir)
    averaged = sum("braid.all_reduce" in l and "grad_of" in l for l in ir)
    updates = sum('braid.adamw"' in l or "braid.adamw " in l for l in ir)
    check(scattered == updates > 0 and averaged == 0,
          "%s: braid-compile follows braid.zero_stage: %d gradients reduce-scattered for %d "
          "updates, %d all-reduced" % (what, scattered, updates, averaged))


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    for name, ranks, stage, micro, clip in (("llama", 2, 1, 1, None), ("llama", 4, 2, 1, 0.5),
                                            ("nanogpt", 2, 2, 2, None)):
        what = "%s dp %d stage %d%s%s" % (name, ranks, stage,
                                          ", %d micro-batches" % micro if micro > 1 else "",
                                          ", clipped to %g" % clip if clip else "")
        model, batch = zoo.make(name)
        per_rank = batch[0].shape[0] // ranks
        spec = dict(model=model, example_inputs=tuple(t[:per_rank] for t in batch),
                    example_targets=(), loss_fn=zoo.loss_from_forward, world_size=ranks,
                    micro_batches=micro, max_grad_norm=clip,
                    optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1))
        prefix = os.path.join(out, "%s-dp%d-zero%d" % (name, ranks, stage))
        e = braid.export(model, spec["example_inputs"], (), spec["loss_fn"], spec["optimizer"],
                         ranks, output=prefix, global_batch=(batch, ()), micro_batches=micro,
                         max_grad_norm=clip, zero_stage=stage)
        check(e.summary["zero_stage"] == stage and
              "braid.zero_stage = %d : i64" % stage in open(e.paths["mlir"]).read(),
              "%s: the export asks for stage %d" % (what, stage))
        sharded(check, what, e.paths["mlir"])
        against_ddp(check, what, spec, e, (batch, ()), STEPS, ranks)

    # The bundled GPT, dp 2 x tp 2.
    what = "gpt dp 2 x tp 2 stage 1"
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=2)
    prefix = os.path.join(out, "gpt-dp2-tp2-zero1")
    e = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                     spec["loss_fn"], spec["optimizer"], 4, output=prefix,
                     global_batch=spec["global_batch"], tensor_parallel=2,
                     tensor_parallel_plan=spec["tensor_parallel_plan"], zero_stage=1)
    sharded(check, what, e.paths["mlir"])
    against_ddp(check, what, spec, e, spec["global_batch"], STEPS, 2, processes=4)
    check.finish("sharded-data-parallel-torch")


if __name__ == "__main__":
    main()
