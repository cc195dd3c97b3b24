"""The training recipe around a step: learning-rate schedules.

A `torch.optim.lr_scheduler` instance built on the spec's optimizer is
evaluated ahead of time, step by step, as PyTorch's training loop would run
it (`optimizer.step(); scheduler.step()`): step k (1-based) uses the rate the
scheduler has set after k - 1 of its steps. The exporter writes each param
group's rates as a `hyperparameter` argument of the step ("lr", or "lr.G" for
group G when the optimizer has several) with its schedule in PREFIX.npz, and
braid-run writes step k's value before step k. Evaluating leaves the
scheduler and the optimizer as they were.
"""

import copy
import warnings

import numpy as np
import torch

from braid.aten import ExportError

# The hyperparameters a schedule may not change: braid schedules the
# learning rate only (each is an attribute of the update).
FIXED_HYPERPARAMETERS = ("momentum", "dampening", "weight_decay", "betas", "eps")


def _scheduler_base():
    lr_scheduler = torch.optim.lr_scheduler
    return getattr(lr_scheduler, "LRScheduler", None) or lr_scheduler._LRScheduler


def check_scheduler(scheduler, optimizer):
    """Raises ExportError unless `scheduler` is a learning-rate scheduler of
    `optimizer` that braid can evaluate ahead of time."""
    kind = type(scheduler).__name__
    if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
        raise ExportError("lr_scheduler ReduceLROnPlateau reacts to the loss at run time; braid "
                          "evaluates schedules ahead of time (use a schedule of the step number)")
    if not isinstance(scheduler, _scheduler_base()):
        raise ExportError("lr_scheduler must be a torch.optim.lr_scheduler scheduler, not %s"
                          % kind)
    if getattr(scheduler, "optimizer", None) is not optimizer:
        raise ExportError("lr_scheduler %s was built on another optimizer than the spec's" % kind)


def schedule_steps(scheduler, max_steps):
    """How many steps to evaluate: `max_steps`, or OneCycleLR's total_steps."""
    if max_steps is None:
        total = getattr(scheduler, "total_steps", None)
        if isinstance(scheduler, torch.optim.lr_scheduler.OneCycleLR) and total:
            return int(total) - int(scheduler.last_epoch)
        raise ExportError("lr_scheduler %s needs max_steps (the steps to write its schedule "
                          "for; braid-run runs at most that many)" % type(scheduler).__name__)
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ExportError("max_steps must be a positive integer, not %r" % (max_steps,))
    return max_steps


def _fixed(group):
    return {k: group[k] for k in FIXED_HYPERPARAMETERS if k in group}


def evaluate(optimizer, scheduler, steps):
    """The learning rate of each param group at each of `steps` steps, as a
    float64 array of shape (steps, groups). Raises ExportError when the
    scheduler changes another hyperparameter (OneCycleLR's cycle_momentum)."""
    check_scheduler(scheduler, optimizer)
    groups = optimizer.param_groups
    saved_groups = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
                    for g in groups]
    saved_state = copy.deepcopy(scheduler.state_dict())
    first = [_fixed(g) for g in groups]
    rates = np.zeros((steps, len(groups)), dtype=np.float64)
    try:
        with warnings.catch_warnings():
            # "lr_scheduler.step() before optimizer.step()": no optimizer
            # step runs here, by design.
            warnings.simplefilter("ignore")
            for k in range(steps):
                for i, g in enumerate(groups):
                    rates[k, i] = float(g["lr"])
                    if _fixed(g) != first[i]:
                        changed = sorted(n for n in first[i] if _fixed(g).get(n) != first[i][n])
                        raise ExportError(
                            "lr_scheduler %s changes %s of param group %d at step %d; braid "
                            "schedules the learning rate only%s" % (
                                type(scheduler).__name__, ", ".join(changed), i, k + 1,
                                " (pass cycle_momentum=False)" if isinstance(
                                    scheduler, torch.optim.lr_scheduler.OneCycleLR) else ""))
                if k + 1 < steps:
                    scheduler.step()
    finally:
        scheduler.load_state_dict(saved_state)
        for g, saved in zip(groups, saved_groups):
            g.update(saved)
    bad = ~np.isfinite(rates) | (rates < 0)
    if bad.any():
        k, i = (int(x) for x in np.argwhere(bad)[0])
        raise ExportError("lr_scheduler %s gives param group %d the learning rate %r at step %d"
                          % (type(scheduler).__name__, i, rates[k, i], k + 1))
    return rates


def lr_names(optimizer):
    """The hyperparameter argument of each param group's learning rate."""
    n = len(optimizer.param_groups)
    return ["lr"] if n == 1 else ["lr.%d" % i for i in range(n)]
