# Learning-rate schedules (issue 15): nanoGPT's warmup + cosine schedule
# (examples/pytorch/nanogpt.py, a LambdaLR over two AdamW param groups, with
# its 2 micro-batches and clipping at 1.0), an SGD with a SequentialLR
# (LinearLR warmup, then CosineAnnealingLR), an AdamW with OneCycleLR
# (cycle_momentum=False, its own length), and the nanoGPT recipe again
# tensor-parallel 2 (10 steps) are exported for 2 ranks, compiled and
# trained with braid-run for the whole schedule. Each loss within 1e-5 relative of float64 PyTorch (the same
# scheduler driving PyTorch's optimizer, braid.compare.against_pytorch) at
# every step; the rates the step received are PyTorch's (the schedule file);
# a run saved after 20 steps resumes at step 21 of the schedule and ends
# with the losses and state of the straight run, bit for bit; a run past the
# schedule's end is refused before any step, as is a missing schedule.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402
from braid import compare, recipe  # noqa: E402

RANKS = 2


def sgd_spec(world_size=RANKS, steps=30):
    """An MLP trained by SGD with momentum under LinearLR then cosine."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 5))
    x = torch.randn(world_size * 8, 12)
    y = torch.randint(0, 5, (world_size * 8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - 5, eta_min=0.01)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[5])
    return dict(model=model, example_inputs=(x[:8],), example_targets=(y[:8],),
                global_batch=((x,), (y,)), loss_fn=torch.nn.functional.cross_entropy,
                optimizer=opt, lr_scheduler=sched, max_steps=steps)


def one_cycle_spec(world_size=RANKS, steps=20):
    """The MLP under AdamW with OneCycleLR (its length is its total_steps:
    no max_steps)."""
    spec = sgd_spec(world_size, steps)
    opt = torch.optim.AdamW(spec["model"].parameters(), lr=0.01, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=steps,
                                                cycle_momentum=False)
    return dict(spec, optimizer=opt, lr_scheduler=sched, max_steps=None)


def loop_rates(spec, steps):
    """The rates of PyTorch's own loop (optimizer.step(), then
    scheduler.step()) on a fresh copy of the spec, every group's a step."""
    opt, sched = spec["optimizer"], spec["lr_scheduler"]
    rates = []
    for _ in range(steps):
        rates.append([g["lr"] for g in opt.param_groups])
        opt.step()  # no gradients: the parameters stay
        sched.step()
    return np.array(rates)


def train(check, name, make, prefix, steps, tp=1):
    spec = make()
    exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                            spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                            global_batch=spec["global_batch"], tensor_parallel=tp,
                            tensor_parallel_plan=spec.get("tensor_parallel_plan"),
                            lr_scheduler=spec["lr_scheduler"], max_steps=spec["max_steps"],
                            micro_batches=spec.get("micro_batches", 1),
                            max_grad_norm=spec.get("max_grad_norm"))
    mlir = open(exported.paths["mlir"]).read()
    names = recipe.lr_names(spec["optimizer"])
    check(all('#braid.role<hyperparameter "%s">' % n in mlir for n in names) and
          "lr = %lr" in mlir, "%s: the step takes %s as hyperparameter inputs of its updates"
          % (name, ", ".join(names)))
    # The schedule written is PyTorch's: a plain training loop's rates.
    with np.load(exported.paths["params"]) as f:
        written = np.stack([f[n] for n in names], axis=1)
    length = recipe.schedule_steps(spec["lr_scheduler"], spec["max_steps"])
    check(written.shape == (length, len(names)) and length == steps and
          np.allclose(written, loop_rates(make(), length), rtol=1e-7, atol=0) and
          written[:, 0].max() > 2 * written[0, 0] and written[-1, 0] < written[:, 0].max() / 2,
          "%s: the written schedule rises %.3g -> %.3g and falls to %.3g" % (
              name, written[0, 0], written[:, 0].max(), written[-1, 0]))
    plan = prefix + ".plan"
    braidtest.compile_step(exported.paths["mlir"], plan)
    base = ["--params", exported.paths["params"], "--data", exported.paths["batch"],
            "--timeout", "120"]
    p = braidtest.braid_run(plan, ranks=RANKS, args=["--steps", str(steps), "--save",
                                                     prefix + ".out.npz"] + base)
    losses = braidtest.losses(p.stdout)
    with np.load(prefix + ".out.npz") as f:
        state = {k: f[k] for k in f.files if k != "loss"}
    (inputs,), (targets,) = spec["global_batch"]
    result = compare.against_pytorch(spec, ((inputs,), (targets,)), losses, state, steps,
                                     ranks=RANKS // tp)
    for line in compare.describe(result):
        print("     %s: %s" % (name, line))
    check(result["ok"], "%s: %d steps match PyTorch under the schedule%s" % (
        name, steps, "".join("\n       " + p for p in result["problems"])))
    # The schedule matters: PyTorch at a constant rate differs.
    constant = dict(spec, lr_scheduler=None)
    flat, _ = braid.export.torch_reference(constant, (inputs,), (targets,), steps,
                                           ranks=RANKS // tp)
    check(compare.max_rel_diff(losses, flat) > 1e-3,
          "%s: a constant rate trains otherwise (%.2e relative)" % (
              name, compare.max_rel_diff(losses, flat)))
    return plan, base, losses, state


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    def nanogpt():
        return load_spec(os.path.join(examples, "nanogpt.py"), data_parallel=RANKS)
    steps = nanogpt()["max_steps"]
    prefix = os.path.join(out, "nanogpt")
    plan, base, losses, state = train(check, "nanogpt", nanogpt, prefix, steps)

    # Resume: 20 steps, save, then the other 30 from the saved file.
    first = braidtest.braid_run(plan, ranks=RANKS, args=[
        "--steps", "20", "--save", prefix + ".20.npz"] + base)
    with np.load(prefix + ".20.npz") as f:
        check(int(f["steps_done"]) == 20, "the saved file says 20 steps done")
    resume = [a if a != base[1] else prefix + ".20.npz" for a in base]
    second = braidtest.braid_run(plan, ranks=RANKS, args=[
        "--steps", str(steps - 20), "--save", prefix + ".50.npz"] + resume)
    resumed = braidtest.losses(first.stdout) + braidtest.losses(second.stdout)
    with np.load(prefix + ".50.npz") as f:
        final = {k: f[k] for k in f.files if k != "loss"}
    same = resumed == losses and sorted(final) == sorted(state) and all(
        np.array_equal(final[k], state[k]) for k in state)
    check(same, "20 steps, saved, then 30 resumed: the straight run's losses and state, "
          "bit for bit (steps_done %s)" % final.get("steps_done"))

    # Past the schedule: refused before the first step, naming it.
    p = braidtest.braid_run(plan, ranks=RANKS, check=False, args=[
        "--steps", "31"] + resume)
    check(p.returncode != 0 and "the schedule of 'lr.0' has 50 steps, but this run takes "
          "steps 21 to 51" in p.stderr and "step 1/" not in p.stdout,
          "31 more steps after 20 is refused: %s" % p.stderr.strip().splitlines()[0])
    # No schedule at all (no --params): refused, naming the hyperparameter.
    p = braidtest.braid_run(plan, ranks=RANKS, check=False, args=["--steps", "1"])
    check(p.returncode != 0 and "hyperparameter 'lr.0' is scheduled" in p.stderr,
          "no --params: refused: %s" % p.stderr.strip().splitlines()[0])

    train(check, "sgd", sgd_spec, os.path.join(out, "sgd"), 30)
    train(check, "one-cycle", one_cycle_spec, os.path.join(out, "one-cycle"), 20)

    # The whole nanoGPT recipe (schedule, 2 micro-batches, clipping at 1.0)
    # under tensor parallelism 2 with gpt.py's plan (vocabulary-parallel
    # cross-entropy; sequence parallelism, braid-compile's default), 10 steps.
    def nanogpt_tp():
        spec = load_spec(os.path.join(examples, "nanogpt.py"), data_parallel=1, max_steps=10)
        gpt = load_spec(os.path.join(examples, "gpt.py"), data_parallel=1)
        return dict(spec, tensor_parallel_plan=gpt["tensor_parallel_plan"])
    train(check, "nanogpt-tp", nanogpt_tp, os.path.join(out, "nanogpt-tp"), 10, tp=2)
    check.finish("export-lr-schedule")


if __name__ == "__main__":
    main()
