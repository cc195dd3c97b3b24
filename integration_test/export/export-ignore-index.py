# ignore_index (issue 15): labels that a loss leaves out, as PyTorch DDP
# computes them: each rank's mean over its own non-ignored targets, the
# ranks' gradients averaged (braid.export.torch_reference with ranks).
#  - an MLP with F.cross_entropy's default ignore_index (-100, Hugging
#    Face's), ignored unevenly across the 2 ranks;
#  - the bundled GPT with nanoGPT's F.cross_entropy(..., ignore_index=-1),
#    data-parallel on 2 ranks and tensor-parallel 2 on 2 ranks (the
#    vocabulary-parallel cross-entropy: its shard ops keep ignore_index),
#    by SGD; and under AdamW, its first step's gradients (gpt_spec says why);
#  - an MLP whose loss is log_softmax + F.nll_loss(ignore_index=-1).
# Every loss of 10 steps within 1e-5 relative of float64 PyTorch DDP, every
# final array within float32 PyTorch's spread; the exported IR carries the
# ignore_index; and the ignored labels change the result (PyTorch on the
# global batch's mean, which is not what DDP computes here, differs).
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


def mlp_spec(ignore, loss_fn, log_softmax=False):
    torch.manual_seed(5)
    layers = [torch.nn.Linear(10, 24), torch.nn.ReLU(), torch.nn.Linear(24, 6)]
    if log_softmax:
        layers.append(torch.nn.LogSoftmax(dim=1))
    model = torch.nn.Sequential(*layers)
    x = torch.randn(RANKS * 8, 10)
    y = torch.randint(0, 6, (RANKS * 8,))
    y[[0, 2, 3, 5, 6, 12]] = ignore  # 5 of rank 0's 8, 1 of rank 1's
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    return dict(model=model, example_inputs=(x[:8],), example_targets=(y[:8],),
                global_batch=((x,), (y,)), loss_fn=loss_fn, optimizer=opt)


def gpt_spec(examples, dp, adamw=False):
    """The bundled GPT for `dp` data-parallel ranks, most of rank 0's first
    sequence ignored. SGD with momentum unless `adamw`: AdamW turns the
    rounding of near-zero gradients into lr-sized steps, and its final
    parameters land a draw of that noise away (4.6x float32 PyTorch's
    spread on one array here, with every loss within 4e-8 and the first
    step's gradients within 6e-7 by norm); the AdamW case is judged by its
    first step's gradients instead."""
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=dp)
    (idx,), (targets,) = spec["global_batch"]
    targets = targets.clone()
    targets[0, :20] = -1
    targets[-1, 7] = -1
    per = targets.shape[0] // dp
    if not adamw:
        spec["optimizer"] = torch.optim.SGD(spec["model"].parameters(), lr=0.05, momentum=0.9)
    spec.update(example_targets=(targets[:per],), global_batch=((idx,), (targets,)),
                loss_fn=lambda logits, t: F.cross_entropy(
                    logits.view(-1, logits.size(-1)), t.view(-1), ignore_index=-1))
    return spec


def first_gradients(check, name, spec, prefix):
    """AdamW's first moment after one step is 0.1 times the gradient: braid's
    and float64 PyTorch DDP's within 1e-5 relative by norm, array by array."""
    exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=spec["global_batch"])
    plan = prefix + ".plan"
    braidtest.compile_step(exported.paths["mlir"], plan)
    braidtest.braid_run(plan, ranks=RANKS, args=[
        "--steps", "1", "--params", exported.paths["params"], "--data",
        exported.paths["batch"], "--save", prefix + ".one.npz", "--timeout", "120"])
    (inputs,), (targets,) = spec["global_batch"]
    _, ref = braid.export.torch_reference(spec, (inputs,), (targets,), 1, double=True,
                                          ranks=RANKS)
    with np.load(prefix + ".one.npz") as f:
        worst = max((np.linalg.norm(f[k] - ref[k]) / np.linalg.norm(ref[k]), k)
                    for k in ref if k.endswith(".exp_avg"))
    check(worst[0] <= 1e-5, "%s: first-step gradients within %.2e of float64 PyTorch DDP by "
          "norm (worst %s)" % (name, worst[0], worst[1][:-len(".exp_avg")]))


def train(check, name, spec, prefix, ignore, tp=1):
    exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=spec["global_batch"], tensor_parallel=tp,
                            tensor_parallel_plan=spec.get("tensor_parallel_plan"))
    mlir = open(exported.paths["mlir"]).read()
    check("ignore_index = %d" % ignore in mlir,
          "%s: the exported loss says ignore_index = %d" % (name, ignore))
    plan = prefix + ".plan"
    braidtest.compile_step(exported.paths["mlir"], plan)
    if tp > 1:
        text = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
        check("cross_entropy_shard_backward" in text,
              "%s: the plan has the vocabulary-parallel cross-entropy" % name)
    losses, state = exporttest.train(plan, exported, prefix, STEPS, RANKS)
    (inputs,), (targets,) = spec["global_batch"]
    dp = RANKS // tp
    result = compare.against_pytorch(spec, ((inputs,), (targets,)), losses, state, STEPS,
                                     ranks=dp)
    for line in compare.describe(result):
        print("     %s: %s" % (name, line))
    check(result["ok"], "%s: %d steps match PyTorch DDP on %d ranks%s" % (
        name, STEPS, dp, "".join("\n       " + p for p in result["problems"])))
    if dp > 1:
        whole, _ = braid.export.torch_reference(spec, (inputs,), (targets,), STEPS, double=True)
        check(compare.max_rel_diff(losses, whole) > 1e-3,
              "%s: the global batch's mean differs (%.2e): the ranks' counts of ignored "
              "labels matter" % (name, compare.max_rel_diff(losses, whole)))


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    train(check, "mlp-100", mlp_spec(-100, F.cross_entropy), os.path.join(out, "mlp"), -100)
    train(check, "nll-1", mlp_spec(-1, lambda lp, y: F.nll_loss(lp, y, ignore_index=-1),
                                   log_softmax=True), os.path.join(out, "nll"), -1)
    train(check, "gpt-dp", gpt_spec(examples, RANKS), os.path.join(out, "gpt-dp"), -1)
    train(check, "gpt-tp", gpt_spec(examples, 1), os.path.join(out, "gpt-tp"), -1, tp=2)
    first_gradients(check, "gpt-adamw", gpt_spec(examples, RANKS, adamw=True),
                    os.path.join(out, "gpt-adamw"))
    check.finish("export-ignore-index")


if __name__ == "__main__":
    main()
