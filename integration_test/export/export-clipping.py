# Gradient clipping by the global norm (issue 15), as
# torch.nn.utils.clip_grad_norm_ after DDP's all-reduce: max_grad_norm in
# the spec puts one squared norm over the reduced gradients (two under
# tensor parallelism: the split parameters' and the others'), the clipping
# factor min(1, max_norm / (norm + 1e-6)), and every update scaling its
# gradient by it (grad_scale).
#  - an MLP whose gradient norm is well above 1.0, clipped at 1.0, SGD with
#    momentum, 2 ranks, 10 steps: the test asserts PyTorch's norm exceeded
#    1.0 at the first step and at 8 of the 10 at least;
#  - the bundled GPT clipped at 0.5 (its norm crosses it: both branches of
#    the factor), AdamW, data-parallel on 2 ranks and tensor-parallel 2 on 2
#    ranks; in the tensor-parallel step the split parameters' partial sums
#    meet the replicated ones in one scalar all-reduce over the
#    tensor-parallel axis.
# Every loss within 1e-5 relative of float64 PyTorch, every final array
# within float32 PyTorch's spread; and unclipped PyTorch trains otherwise.
# In the scheduled step every update runs after the last bucket's wait.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import exporttest  # noqa: E402
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402
from braid import compare  # noqa: E402

STEPS = 10
RANKS = 2


def mlp_spec():
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 5))
    x = 10 * torch.randn(RANKS * 8, 12)
    y = torch.randint(0, 5, (RANKS * 8,))
    return dict(model=model, example_inputs=(x[:8],), example_targets=(y[:8],),
                global_batch=((x,), (y,)), loss_fn=F.cross_entropy,
                optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                max_grad_norm=1.0)


def train(check, name, spec, prefix, tp=1):
    dp = RANKS // tp
    exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=spec["global_batch"], tensor_parallel=tp,
                            tensor_parallel_plan=spec.get("tensor_parallel_plan"),
                            max_grad_norm=spec["max_grad_norm"])
    mlir = open(exported.paths["mlir"]).read()
    params = len(exported.summary["parameters"])
    scaled = sum("grad_scale = %clip" in l for l in mlir.splitlines())
    check(mlir.count("braid.sum_squares") == (2 if tp > 1 else 1) and scaled == params
          and mlir.count("braid.clip_coefficient") == 1,
          "%s: %d squared norm(s) (split and replicated gradients apart), one clipping factor, "
          "%d updates scaled by it" % (name, mlir.count("braid.sum_squares"), scaled))
    plan = prefix + ".plan"
    braidtest.compile_step(exported.paths["mlir"], plan)
    if tp > 1:
        # One scalar all-reduce over the tensor-parallel axis: the norm's.
        partitioned = braidtest.run([braidtest.tool("braid-opt"), exported.paths["mlir"],
                                     "--braid-tensor-parallel"]).stdout
        scalar = [l for l in partitioned.splitlines()
                  if "braid.all_reduce" in l and "grid_axes = [1]" in l
                  and l.rstrip().endswith(": tensor<f32>")]
        check(len(scalar) == 1, "%s: %d scalar all-reduce over the tensor-parallel axis "
              "(the split parameters' partial squared norms)" % (name, len(scalar)))
    losses, state = exporttest.train(plan, exported, prefix, STEPS, RANKS)
    (inputs,), (targets,) = spec["global_batch"]
    norms = []
    braid.export.torch_reference(spec, (inputs,), (targets,), STEPS, double=True, ranks=dp,
                                 norms=norms)
    result = compare.against_pytorch(spec, ((inputs,), (targets,)), losses, state, STEPS,
                                     ranks=dp)
    for line in compare.describe(result):
        print("     %s: %s" % (name, line))
    check(result["ok"], "%s: %d steps clipped at %g match PyTorch (its norms %s)%s" % (
        name, STEPS, spec["max_grad_norm"], " ".join("%.3g" % n for n in norms),
        "".join("\n       " + p for p in result["problems"])))
    unclipped, _ = braid.export.torch_reference(dict(spec, max_grad_norm=None), (inputs,),
                                                (targets,), STEPS, double=True, ranks=dp)
    check(compare.max_rel_diff(losses, unclipped) > 1e-3,
          "%s: unclipped, PyTorch trains otherwise (%.2e)" % (
              name, compare.max_rel_diff(losses, unclipped)))
    return exported, norms


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    exported, norms = train(check, "mlp", mlp_spec(), os.path.join(out, "mlp"))
    over = sum(n > 1.0 for n in norms)
    check(norms[0] > 1.0 and over >= 8, "mlp: the gradient norm exceeded 1.0 at %d of %d steps, "
          "the first (%.3g) included" % (over, len(norms), norms[0]))
    # Scheduled: every update after the last wait (the factor needs every
    # gradient), each squared norm right after its own bucket's wait.
    scheduled = braidtest.run([braidtest.tool("braid-opt"), exported.paths["mlir"],
                               "--braid-overlap"]).stdout.splitlines()
    waits = [i for i, l in enumerate(scheduled) if "braid.wait" in l]
    updates = [i for i, l in enumerate(scheduled) if "braid.sgd" in l]
    check(waits and updates and min(updates) > max(waits),
          "mlp: the %d updates follow the last of %d waits" % (len(updates), len(waits)))

    gpt = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS)
    _, norms = train(check, "gpt-dp", dict(gpt, max_grad_norm=0.5), os.path.join(out, "gpt-dp"))
    check(max(norms) > 0.5 > min(norms), "gpt-dp: the norm crosses 0.5 (%.3g to %.3g)"
          % (min(norms), max(norms)))
    gpt1 = load_spec(os.path.join(examples, "gpt.py"), data_parallel=1)
    train(check, "gpt-tp", dict(gpt1, max_grad_norm=0.5), os.path.join(out, "gpt-tp"), tp=2)
    check.finish("export-clipping")


if __name__ == "__main__":
    main()
