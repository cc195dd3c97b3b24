# Gradient accumulation (issue 15): micro_batches = k runs the forward and
# backward once per k-th of each rank's batch, adds the gradients up and
# all-reduces each parameter's sum once, after its gradient in the last
# micro-batch (DDP's no_sync on the others).
#  - the bundled GPT, 8 sequences per rank in 4 micro-batches, AdamW, on 2
#    ranks for 10 steps: every loss within 1e-5 relative of float64 PyTorch
#    accumulating the same way ((loss / 4).backward() per micro-batch, the
#    ranks' gradients averaged), every final array within float32
#    PyTorch's spread; one all-reduce per parameter in the step, each right
#    after its gradient's sum in the last micro-batch's backward (matmuls of
#    that backward still follow the first); in the scheduled IR no bucket
#    starts before the last micro-batch does; and the arena is
#    smaller than for one batch of the 8 sequences (activations of one
#    micro-batch live at a time);
#  - an MLP with ignored labels, SGD, 2 micro-batches: each micro-batch's
#    mean over its own targets, as PyTorch's accumulation loop takes it
#    (the whole batch's mean differs).
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import re
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


def export(spec, prefix, micro):
    return braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                        spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                        global_batch=spec["global_batch"], micro_batches=micro)


def arena(plan):
    text = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    return int(re.search(r"arena (\d+) bytes", text).group(1))


def train(check, name, spec, prefix, micro):
    exported = export(spec, prefix, micro)
    plan = prefix + ".plan"
    braidtest.compile_step(exported.paths["mlir"], plan)
    losses, state = exporttest.train(plan, exported, prefix, STEPS, RANKS)
    (inputs,), (targets,) = spec["global_batch"]
    result = compare.against_pytorch(dict(spec, micro_batches=micro), ((inputs,), (targets,)),
                                     losses, state, STEPS, ranks=RANKS)
    for line in compare.describe(result):
        print("     %s: %s" % (name, line))
    check(result["ok"], "%s: %d steps of %d micro-batches match PyTorch's accumulation%s" % (
        name, STEPS, micro, "".join("\n       " + p for p in result["problems"])))
    return exported, plan, losses


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS, batch_size=8)
    prefix = os.path.join(out, "gpt")
    exported, plan, _ = train(check, "gpt", spec, prefix, 4)
    mlir = open(exported.paths["mlir"]).read()
    params = len(exported.summary["parameters"])
    reduces = mlir.count("braid.all_reduce")
    check(reduces == params and mlir.count("braid.slice %idx offsets") == 4,
          "one all-reduce per parameter (%d of %d) for 4 micro-batches of the batch"
          % (reduces, params))
    # Exported: each all-reduce right after its gradient's last addition, in
    # the last micro-batch's backward (matmuls of it still follow the first).
    body = mlir.splitlines()
    last_mb = next(i for i, l in enumerate(body) if "%idx_mb3 = braid.slice" in l)
    reduce_at = [i for i, l in enumerate(body) if "braid.all_reduce" in l]
    after = [l for l in body[reduce_at[0]:] if "braid.matmul" in l]
    check(reduce_at[0] > last_mb and len(after) > 10,
          "exported: the all-reduces follow micro-batch 3's start (line %d), the first at line "
          "%d with %d matmuls of the last backward after it" % (last_mb, reduce_at[0],
                                                                len(after)))
    # Scheduled (buckets, async collectives): no communication before the
    # last micro-batch begins.
    scheduled = braidtest.run([braidtest.tool("braid-opt"), exported.paths["mlir"],
                               "--braid-overlap"]).stdout.splitlines()
    last_mb = next(i for i, l in enumerate(scheduled)
                   if "braid.slice" in l and "offsets = [6, 0]" in l)
    starts = [i for i, l in enumerate(scheduled) if "braid.all_reduce_start" in l]
    check(starts and starts[0] > last_mb,
          "scheduled: %d bucket(s), the first started at line %d, after the last micro-batch's "
          "slice (line %d)" % (len(starts), starts[0] if starts else -1, last_mb))
    whole = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS, batch_size=8)
    one = export(whole, os.path.join(out, "gpt-one"), 1)
    braidtest.compile_step(one.paths["mlir"], os.path.join(out, "gpt-one.plan"))
    a4, a1 = arena(plan), arena(os.path.join(out, "gpt-one.plan"))
    check(a4 < 0.8 * a1, "the arena of 4 micro-batches of 2 sequences is %.2fx that of one "
          "batch of 8 (%d / %d bytes)" % (a4 / a1, a4, a1))

    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(RANKS * 8, 6)
    y = torch.randint(0, 4, (RANKS * 8,))
    y[[0, 1, 2, 9]] = -100  # 3 in rank 0's first micro-batch, 1 in rank 1's first
    mlp = dict(model=model, example_inputs=(x[:8],), example_targets=(y[:8],),
               global_batch=((x,), (y,)), loss_fn=F.cross_entropy,
               optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    _, _, losses = train(check, "mlp", mlp, os.path.join(out, "mlp"), 2)
    flat, _ = braid.export.torch_reference(mlp, (x,), (y,), STEPS, double=True, ranks=RANKS)
    check(compare.max_rel_diff(losses, flat) > 1e-3,
          "mlp: each micro-batch's own mean counts (%.2e from the ranks' whole-batch means)"
          % compare.max_rel_diff(losses, flat))
    check.finish("export-accumulation")


if __name__ == "__main__":
    main()
