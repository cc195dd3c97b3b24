# End to end from PyTorch: the small GPT (2 blocks, width 64, 4 heads,
# vocabulary 64, sequence 32; AdamW, tied embedding) and an MLP (SGD with
# momentum) of examples/pytorch are exported for 2 ranks with braid.export,
# compiled with braid-compile and trained for 20 steps with
# `mpirun -np 2 braid-run --backend=cpu`, each rank on its half of a global
# batch. PyTorch trains a copy of the same model with the same optimizer on
# the concatenated global batch, in float64 and in float32
# (braid.compare.against_pytorch): the loss of every step within 1e-5
# relative of float64 PyTorch, and every final parameter and optimizer-state
# array no farther from float64 PyTorch than 4x float32 PyTorch is.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, torch_reference  # noqa: E402
import braid  # noqa: E402
from braid import compare  # noqa: E402

STEPS = 20
RANKS = 2


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    for model_name in ("gpt", "mlp"):
        spec = load_spec(os.path.join(examples, model_name + ".py"), data_parallel=RANKS)
        # The global batch: rank r's rows are r * per_rank ... (r + 1) * per_rank;
        # the example batch is rank 0's.
        (inputs,), (targets,) = spec["global_batch"]
        prefix = os.path.join(out, model_name)
        exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                                spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                                global_batch=spec["global_batch"])
        check(exported.paths["mlir"] == prefix + ".mlir" and os.path.exists(prefix + ".npz"),
              "%s: exported %d aten ops to %d braid ops, batch %s" % (
                  model_name, sum(exported.summary["aten_ops"].values()),
                  exported.summary["braid_ops"], {k: list(v.shape) for k, v in
                                                  exported.batch.items()}))
        data = exported.paths["batch"]
        plan = prefix + ".plan"
        braidtest.compile_step(prefix + ".mlir", plan)
        save = prefix + ".trained.npz"
        p = braidtest.braid_run(plan, ranks=RANKS, args=[
            "--steps", str(STEPS), "--params", prefix + ".npz", "--data", data,
            "--save", save, "--timeout", "120"])
        braid_losses = braidtest.losses(p.stdout)

        check(len(braid_losses) == STEPS and braid_losses[-1] < 0.9 * braid_losses[0],
              "%s: the loss falls, %.6f -> %.6f" % (model_name, braid_losses[0],
                                                    braid_losses[-1]))
        with np.load(save) as f:
            trained = {k: f[k] for k in f.files if k != "loss"}
        result = compare.against_pytorch(spec, ((inputs,), (targets,)), braid_losses, trained,
                                         STEPS)
        for line in compare.describe(result):
            print("     %s: %s" % (model_name, line))
        check(result["ok"], "%s: braid vs PyTorch%s" % (
            model_name, "".join("\n       " + p for p in result["problems"])))

    check.finish("export-train")


if __name__ == "__main__":
    main()
