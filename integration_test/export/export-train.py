# End to end from PyTorch: the small GPT (2 blocks, width 64, 4 heads,
# vocabulary 64, sequence 32; AdamW, tied embedding) and an MLP (SGD with
# momentum) of examples/pytorch are exported for 2 ranks with braid.export,
# compiled with braid-compile and trained for 20 steps with
# `mpirun -np 2 braid-run --backend=cpu`, each rank on its half of a global
# batch. PyTorch trains a copy of the same model with the same optimizer on
# the concatenated global batch. The loss of every step and every final
# parameter and optimizer state must match within 1e-4 relative.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, torch_reference  # noqa: E402
import braid  # noqa: E402

STEPS = 20
RANKS = 2
TOL = 1e-4


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    for model_name in ("gpt", "mlp"):
        spec = load_spec(os.path.join(examples, model_name + ".py"), world_size=RANKS)
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

        ref_losses, ref_state = torch_reference(spec, (inputs,), (targets,), STEPS)
        check(len(braid_losses) == STEPS, "%s: %d losses" % (model_name, len(braid_losses)))
        worst = max(abs(a - b) / abs(b) for a, b in zip(braid_losses, ref_losses))
        check(worst <= TOL, "%s: loss of every step vs PyTorch, worst relative difference "
              "%.2e (%.6f -> %.6f, torch %.6f -> %.6f)" % (
                  model_name, worst, braid_losses[0], braid_losses[-1], ref_losses[0],
                  ref_losses[-1]))
        check(braid_losses[-1] < 0.9 * braid_losses[0], "%s: the loss falls" % model_name)
        with np.load(save) as f:
            trained = {k: f[k] for k in f.files if k != "loss"}
        check(sorted(trained) == sorted(ref_state),
              "%s: the same %d parameter and state arrays" % (model_name, len(ref_state)))
        diffs = {k: braidtest.max_rel_diff(trained[k], ref_state[k])
                 for k in ref_state if k in trained}
        name, diff = max(diffs.items(), key=lambda kv: kv[1])
        check(diff <= TOL, "%s: final parameters and state vs PyTorch, worst relative "
              "difference %.2e (%s)" % (model_name, diff, name))
        # For scale, not checked: how far PyTorch's own f32 training is from f64.
        _, ref64 = torch_reference(spec, (inputs,), (targets,), STEPS, double=True)
        floor = max(braidtest.max_rel_diff(ref_state[k], ref64[k]) for k in ref64)
        print("     %s: PyTorch f32 vs f64 differ by %.2e after %d steps (rounding, amplified "
              "by training)" % (model_name, floor, STEPS))

    check.finish("export-train")


if __name__ == "__main__":
    main()
