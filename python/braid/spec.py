"""Specs (the function a user's FILE.py gives braid.export) and PyTorch's
own training of a spec, which the tests and the main job compare braid
with. braid.export re-exports load_spec and torch_reference."""

import contextlib
import copy
import importlib
import importlib.util
import inspect
import os
import sys

import numpy as np
import torch

from braid import optimizers
from braid.aten import ExportError


def load_spec(spec, data_parallel=None, **kwargs):
    """The dict that SPEC's function returns: SPEC is FILE.py[:FUNC] or
    package.module[:FUNC] (FUNC defaults to `build`), called with `kwargs`,
    and with `data_parallel` (the data-parallel size: the world size over
    the tensor-parallel and pipeline sizes) when it is given and FUNC takes
    it (a spec sizes its global batch by it). Raises ExportError on a bad
    spec."""
    fn = _load_spec(spec)
    try:
        accepts = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        accepts = {}
    if data_parallel is not None and "data_parallel" in accepts and \
            "data_parallel" not in kwargs:
        kwargs["data_parallel"] = data_parallel
    try:
        result = fn(**kwargs)
    except TypeError as e:
        raise ExportError("calling %s: %s" % (spec, e)) from e
    if not isinstance(result, dict):
        raise ExportError("%s must return a dict, not %s" % (spec, type(result).__name__))
    missing = [k for k in ("model", "example_inputs", "example_targets", "loss_fn",
                           "optimizer") if k not in result]
    if not missing and result.get("lr_scheduler") is not None:
        from braid.recipe import check_scheduler
        check_scheduler(result["lr_scheduler"], result["optimizer"])
    if missing:
        raise ExportError("%s's dict lacks %s" % (spec, ", ".join(missing)))
    return result


def torch_reference(spec, inputs, targets, steps, double=False, ranks=None, norms=None,
                    batches=None, evaluation=None):
    """PyTorch's own training, to compare braid with: a copy of spec's model
    and an optimizer of the same class, param groups and state train on
    (inputs, targets) for `steps` steps (or, with `batches`, on the
    (inputs, targets) that batches(k) returns for step k, 1-based: a token
    file's windows, braid.data.batch) (in float64 with `double`), under the
    spec's lr_scheduler when it has one, its gradients clipped by
    torch.nn.utils.clip_grad_norm_ to its max_grad_norm when it has one (the
    norm before clipping appended to `norms` each step, when given), the
    forward and loss under torch.autocast("cpu", torch.bfloat16) when the
    spec's autocast is "bf16" (not with `double`: autocast leaves float64
    alone, so that reference is the exact one), and the ranks' gradients
    rounded to bf16, summed, averaged and rounded again, as DDP's
    bf16_compress_hook, when its reduce_dtype is "bf16". With
    `ranks`, as PyTorch DDP on that
    many ranks: the batch splits into `ranks` equal parts along dimension 0,
    each part's loss is taken on its own, and the step's loss and gradient
    are their average (each rank's mean over its own non-ignored targets,
    the ranks' gradients averaged). With `evaluation` = (every, eval_batches,
    out), as braid-run --eval-data: before the first step (when `every` is
    given), after every `every` steps and after the last, the model in eval mode under torch.no_grad() takes the loss of
    each (inputs, targets) of eval_batches (split over `ranks` as above),
    and appends (step, the mean of those losses) to `out`. Returns the loss of every step and the
    final parameters and optimizer state, named as export() names them. The
    spec's model and optimizer are not changed: the model trains in place
    and gets its parameters, buffers and gradients back afterwards (a copy
    would not do: a model whose code closes over its own modules, as a
    lambda attribute does, would run the original's)."""
    with _restored(spec["model"]) as model:
        return _train(spec, model, inputs, targets, steps, double, ranks, norms, batches,
                      evaluation)


@contextlib.contextmanager
def _restored(model):
    """`model`, whose parameters, buffers and gradients are put back as they
    were (values, dtypes and the tensor objects) when the block ends."""
    params = [(p, p.data, p.grad) for p in model.parameters()]
    buffers = [(m, dict(m._buffers), {k: b.data for k, b in m._buffers.items() if b is not None})
               for m in model.modules()]
    try:
        yield model
    finally:
        for p, data, grad in params:
            p.data, p.grad = data, grad
        for m, objects, data in buffers:
            m._buffers.clear()
            m._buffers.update(objects)
            for k, d in data.items():
                objects[k].data = d


def _train(spec, model, inputs, targets, steps, double, ranks, norms, batches=None,
           evaluation=None):
    """torch_reference's training of `model` (the spec's, restored after)."""
    # The original values are kept aside by _restored; train on copies.
    for p in model.parameters():
        p.data = p.data.clone()
        p.grad = None
    for m in model.modules():
        for k, b in m._buffers.items():
            if b is not None:
                m._buffers[k] = b.clone()
    if double:
        model = model.double()
    opt = spec["optimizer"]
    # The same param groups over the same parameters, then the same state
    # if the optimizer has stepped.
    ref_opt = type(opt)([dict({k: v for k, v in g.items() if k != "params"},
                              params=list(g["params"])) for g in opt.param_groups])
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    # A learning-rate schedule, as PyTorch's scheduler evaluates it.
    rates = None
    if spec.get("lr_scheduler") is not None:
        from braid import recipe
        rates = recipe.evaluate(opt, spec["lr_scheduler"], steps)
    micro = spec.get("micro_batches", 1) or 1
    if spec.get("autocast") == "fp16" and not double:
        raise ExportError("PyTorch's cpu autocast has no float16 to compare an fp16 run with; "
                          "use the float64 reference (double=True)")
    # A loss scale changes nothing in exact arithmetic: the references
    # leave it out.
    autocast = contextlib.nullcontext
    if spec.get("autocast") == "bf16" and not double:
        def autocast():
            return torch.autocast("cpu", dtype=torch.bfloat16)
    compress = spec.get("reduce_dtype") == "bf16" and not double
    losses = []
    if evaluation is not None and evaluation[0] and steps:
        evaluation[2].append((0, _evaluate(spec, model, evaluation[1], double, ranks,
                                           autocast)))
    for k in range(steps):
        if batches is not None:
            inputs, targets = batches(k + 1)
        if double:
            inputs = tuple(x.double() if x.is_floating_point() else x for x in inputs)
        if rates is not None:
            for g, lr in zip(ref_opt.param_groups, rates[k]):
                g["lr"] = float(lr)
        ref_opt.zero_grad()
        if ranks is None and micro == 1:
            with autocast():
                loss = spec["loss_fn"](model(*inputs), *targets)
            loss.backward()
        else:
            # Rank r's batch is part r of `ranks`; its micro-batch m is part m
            # of `micro` of that: (loss / (ranks * micro)).backward() for each,
            # as DDP with no_sync on all but the last micro-batch.
            parts = (ranks or 1) * micro
            total = 0.0
            per_rank = []
            for j in range(parts):
                with autocast():
                    part = spec["loss_fn"](model(*(x.chunk(parts)[j] for x in inputs)),
                                           *(t.chunk(parts)[j] for t in targets))
                (part / parts).backward()
                total = total + part.detach()
                if compress and j % micro == micro - 1:
                    # This rank's gradient (of its mean loss), as its
                    # all-reduce sees it.
                    per_rank.append([p.grad * (ranks or 1) for p in model.parameters()])
                    ref_opt.zero_grad(set_to_none=False)
            if compress:
                def bf16(x):
                    return x.to(torch.bfloat16).to(x.dtype)
                for i, p in enumerate(model.parameters()):
                    summed = bf16(sum(bf16(g[i]) for g in per_rank))
                    p.grad.copy_(bf16(summed / len(per_rank)))
            loss = total / parts
        if spec.get("max_grad_norm") is not None:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec["max_grad_norm"])
            if norms is not None:
                norms.append(float(norm))
        ref_opt.step()
        losses.append(float(loss))
        if evaluation is not None:
            every, eval_batches, out = evaluation
            if (every and (k + 1) % every == 0) or k + 1 == steps:
                out.append((k + 1, _evaluate(spec, model, eval_batches, double, ranks,
                                             autocast)))
    state = {}
    names = {id(p): n for n, p in model.named_parameters()}
    for p in model.parameters():
        n = names[id(p)]
        state[n] = p.detach().numpy()
        entry = optimizers.lookup(ref_opt)
        if entry is not None:
            # A state torch never filled (SGD without momentum) is left out.
            state.update(entry.state_arrays(ref_opt, p, n, zeros=False))
            if entry.has_step and "step" in ref_opt.state[p]:
                state["step"] = np.array(entry.step_count(ref_opt, p))
    return losses, state


def _evaluate(spec, model, eval_batches, double, ranks, autocast):
    """The mean loss of `model` in eval mode over `eval_batches`, each split
    over `ranks` as braid-run's data-parallel ranks take it."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        with torch.no_grad():
            for inputs, targets in eval_batches:
                if double:
                    inputs = tuple(x.double() if x.is_floating_point() else x for x in inputs)
                parts = ranks or 1
                for j in range(parts):
                    with autocast():
                        loss = spec["loss_fn"](model(*(x.chunk(parts)[j] for x in inputs)),
                                               *(t.chunk(parts)[j] for t in targets))
                    total += float(loss)
                    count += 1
    finally:
        model.train(was_training)
    return total / count


def _load_spec(spec):
    """FILE.py[:FUNC] or package.module[:FUNC]; FUNC defaults to `build`."""
    target, _, func = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
    func = func or "build"
    if target.endswith(".py") or os.path.exists(target):
        if not os.path.exists(target):
            raise ExportError("no such file: %s" % target)
        mod_name = "_braid_spec_" + os.path.splitext(os.path.basename(target))[0]
        loader = importlib.util.spec_from_file_location(mod_name, target)
        module = importlib.util.module_from_spec(loader)
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        loader.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as e:
            raise ExportError("cannot import %s: %s" % (target, e)) from e
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ExportError("%s has no function %s" % (target, func))
    return fn


def _parse_value(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text
