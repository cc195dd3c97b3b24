"""Export a PyTorch training step as graph-level braid IR.

    import braid
    braid.export(model, (tokens,), (labels,), loss_fn, optimizer, world_size=2,
                 output="build/gpt")

    python3 -m braid.export examples/pytorch/gpt.py -o build/gpt --world-size 2

The world size counts every rank, as torch, Megatron and mpirun count them:
with tensor or pipeline parallelism the data-parallel size is
world_size / (tensor_parallel x pipeline_stages).

AOT autograd traces `loss_fn(model(*example_inputs), *example_targets)` and
its backward into one joint graph of aten ops: under torch 2.x through
`aot_export_joint_simple` with torch's core-ATen decompositions (less the ops
braid lowers whole), under torch 1.13 through `functorch.compile.aot_function`
(the legacy capture; docs/Export.md, "Capture"). braid.aten lowers each op to braid ops; this
module adds one data-parallel gradient all-reduce (average) per parameter
over the data-parallel ranks of a grid of `world_size` ranks, right after
the gradient is complete, and the optimizer's update (torch.optim.SGD or
AdamW, with their hyper-parameters and state read from the optimizer
instance). It writes

    PREFIX.mlir       the step: braid-compile's input
    PREFIX.npz        initial parameters and optimizer state (braid-run --params)
    PREFIX.batch.npz  the batch for braid-run --data: the global batch when
                      one is given (rank r takes slice r along dimension 0),
                      else the example batch (every rank the same)

A parameter that two modules share (tied weights) is one parameter whose
gradient is the sum of both uses. Buffers are constants of the step. An
aten op without a lowering is an error naming the op and the module it
came from, and nothing is written. docs/Tutorial.md walks through it.
"""

import collections
import os
import re
import sys
import types

import numpy as np
import torch

from braid._trace import (_attributes_as_buffers, _describe, _names, _optimizer_groups,
                          _parameters, _tensors, _trace, _trace_forward)
from braid import optimizers, recipe
from braid.aten import DTYPES, ExportError, LOWERINGS, Lowering, op_name
from braid.aten_values import RandomState
from braid.ir import (DEFAULT_PIPELINE_SCHEDULE, MAX_MICRO_BATCHES, PIPELINE_SCHEDULES,
                      StepBuilder, check_virtual_stages)
from braid.spec import load_spec, torch_reference
from braid.tensor_parallel import shardings as tensor_parallel_shardings

__all__ = ["export", "Exported", "ExportError", "SUPPORTED_OPS", "load_spec",
           "torch_reference"]

SUPPORTED_OPS = sorted(op_name(op) for op in LOWERINGS)

class Exported:
    """The result of braid.export: the IR text, the arrays, what was written."""

    def __init__(self, mlir, state, batch, summary):
        self.mlir = mlir          # the step as text
        self.state = state        # name -> numpy array: parameters and optimizer state
        self.batch = batch        # name -> numpy array: one rank's example batch
        self.summary = summary    # dict: counts and choices, for people
        self.paths = {}           # "mlir", "params", "batch" -> written path

    def write(self, prefix):
        """Writes PREFIX.mlir, PREFIX.npz and PREFIX.batch.npz."""
        d = os.path.dirname(prefix)
        if d:
            os.makedirs(d, exist_ok=True)
        self.paths = {"mlir": prefix + ".mlir", "params": prefix + ".npz",
                      "batch": prefix + ".batch.npz"}
        with open(self.paths["mlir"], "w") as f:
            f.write(self.mlir)
        np.savez(self.paths["params"], **self.state)
        np.savez(self.paths["batch"], **self.batch)
        return self.paths


def export(model, example_inputs, example_targets, loss_fn, optimizer, world_size, *,
           output=None, name=None, input_names=None, target_names=None, global_batch=None,
           tensor_parallel=1, tensor_parallel_plan=None, lr_scheduler=None, max_steps=None,
           micro_batches=1, max_grad_norm=None, autocast=None, reduce_dtype=None,
           loss_scale=None, seed=0, pipeline_stages=1, stage_boundaries=None,
           pipeline_schedule=DEFAULT_PIPELINE_SCHEDULE, virtual_stages=1, evaluation=False,
           zero_stage=0):
    """Traces one training step of `model` and returns it as braid IR.

    model            a torch.nn.Module
    example_inputs   one rank's inputs: a tuple of tensors (model(*example_inputs))
    example_targets  one rank's targets: a tuple of tensors
    loss_fn          loss = loss_fn(model(*example_inputs), *example_targets), a scalar
    optimizer        a torch.optim.SGD or AdamW (Adam without weight decay) over
                     the model's parameters; its hyper-parameters and state are read
    world_size       the number of ranks, every one (as torch.distributed's
                     world size); the data-parallel size is world_size /
                     (tensor_parallel x pipeline_stages), which must divide
    output           a path prefix: when given, writes PREFIX.mlir, PREFIX.npz
                     and PREFIX.batch.npz (only once everything has succeeded)
    name             the step function's name (default: the model's class, "_step")
    input_names, target_names
                     the batch arguments' names (default: the parameter names of
                     model.forward and of loss_fn after its first)
    global_batch     optional (inputs, targets) of all data-parallel ranks, the
                     data-parallel size times the example batch along dimension
                     0, written as the batch file
    tensor_parallel  the tensor-parallel size: the grid is world_size /
                     tensor_parallel data-parallel ranks x tensor_parallel
    tensor_parallel_plan
                     which modules to split, in the vocabulary of
                     torch.distributed.tensor.parallel (braid.tensor_parallel);
                     needed when tensor_parallel > 1. Parameters stay global in
                     the files written; braid-run keeps each rank's piece
    lr_scheduler     optional torch.optim.lr_scheduler instance built on
                     `optimizer`: the learning rate becomes an input of the step
                     (a hyperparameter argument per param group), its values
                     for steps 1..max_steps evaluated now and written with the
                     parameters (braid.recipe)
    max_steps        how many steps of the schedule to write (default:
                     OneCycleLR's total_steps; needed for the others)
    micro_batches    gradient accumulation: each rank's batch (example_inputs)
                     splits this many ways along dimension 0, the forward and
                     backward run once per micro-batch, the gradients add up,
                     and each is all-reduced once, after the last micro-batch
    max_grad_norm    gradient clipping by the global norm, as
                     torch.nn.utils.clip_grad_norm_ after DDP's all-reduce:
                     every gradient times min(1, max_norm / (norm + 1e-6)),
                     the norm over the whole model
    autocast         "bf16": mixed precision as torch.autocast(dtype=torch.bfloat16)
                     casts it. The step is traced under autocast, so its casts
                     (`braid.cast`) are torch's: the parameters, their
                     gradients and the optimizer state stay f32 (master
                     weights), matmuls run in bf16. "fp16": the same casts
                     (traced with bf16, written in f16), usually with a
                     loss_scale
    reduce_dtype     the type the gradients are all-reduced in: "fp32" (the
                     default), "bf16" or "fp16" (half the bytes on the wire;
                     each gradient is cast for its all-reduce and back)
    loss_scale       a static loss scale S (a power of two keeps it exact): the
                     backward starts from S instead of 1, so that small fp16
                     gradients do not flush to zero, and the reduced gradients
                     are multiplied by 1 / S before clipping and the update, as
                     torch.cuda.amp.GradScaler.unscale_ does (its dynamic
                     scale, which skips steps, is not supported)
    pipeline_stages  pipeline parallelism: the grid is pipeline_stages x the
                     data-parallel size (x tensor_parallel), the step written is one
                     micro-batch's, and braid-compile splits it into a program
                     per stage that runs `micro_batches` micro-batches in
                     `pipeline_schedule`'s order ("gpipe", "1f1b", "zb-h1" or
                     "interleaved"; docs/Pipeline.md)
    virtual_stages   with pipeline_schedule "interleaved": the virtual stages
                     (model chunks) per rank, at least 2; the model is split
                     into pipeline_stages x virtual_stages stages, and
                     micro_batches must be a multiple of pipeline_stages
    stage_boundaries with pipeline_stages: the module (a name of
                     model.named_modules()) whose first parameter starts each
                     stage after the first, pipeline_stages x virtual_stages - 1
                     of them in the model's order; None balances the stages by
                     the cost model
    evaluation       also write the evaluation program: a second function,
                     NAME_eval (`braid.evaluates = @NAME`), the loss of
                     model.eval() on one rank's batch (same shapes as the
                     step's) without gradients or updates, which
                     braid-compile puts in the same plan over the same
                     arena and braid-run --eval-data runs (docs/Export.md,
                     Evaluation). Data parallelism only for now
    zero_stage       ZeRO (docs/ShardedDataParallel.md): 0 (default), 1 (the
                     optimizer state sharded over the data-parallel ranks,
                     the gradients reduce-scattered) or 2 (each whole
                     gradient freed in the backward too); written as the
                     module's braid.zero_stage, which braid-compile follows
                     unless --zero is given
    seed             dropout's seed (an integer in [0, 2^32)): a model in train
                     mode with dropout draws its masks with braid.dropout_mask
                     from (seed, rank, step, site), the step counted by an
                     optimizer-state scalar `dropout.step` that the step
                     increments (docs/Export.md, Dropout)

    Raises ExportError (nothing written) on anything it cannot export.
    """
    if not isinstance(model, torch.nn.Module):
        raise ExportError("model must be a torch.nn.Module, not %s" % type(model).__name__)
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ExportError("world_size must be a positive integer, not %r" % (world_size,))
    if not isinstance(tensor_parallel, int) or isinstance(tensor_parallel, bool) or \
            tensor_parallel < 1:
        raise ExportError("tensor_parallel must be a positive integer, not %r"
                          % (tensor_parallel,))
    if tensor_parallel > 1 and tensor_parallel_plan is None:
        raise ExportError("tensor_parallel %d needs a tensor_parallel_plan (module-name patterns "
                          "to 'colwise' or 'rowwise'; braid.tensor_parallel)" % tensor_parallel)
    inputs = _tensors(example_inputs, "example_inputs")
    targets = _tensors(example_targets, "example_targets")
    input_names = _names(input_names, model.forward, 0, len(inputs), "input", "input_names")
    target_names = _names(target_names, loss_fn, 1, len(targets), "target", "target_names")

    if zero_stage not in (0, 1, 2) or isinstance(zero_stage, bool):
        raise ExportError("zero_stage must be 0, 1 or 2 (stage 3, sharded parameters, is not "
                          "built yet), not %r" % (zero_stage,))
    if max_grad_norm is not None:
        if isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float)) or \
                not 0 < max_grad_norm < float("inf"):
            raise ExportError("max_grad_norm must be a positive finite number, not %r"
                              % (max_grad_norm,))
        max_grad_norm = float(max_grad_norm)
    if not isinstance(micro_batches, int) or isinstance(micro_batches, bool) or \
            micro_batches < 1:
        raise ExportError("micro_batches must be a positive integer, not %r" % (micro_batches,))
    if micro_batches > MAX_MICRO_BATCHES:
        raise ExportError("micro_batches must be at most %d (each micro-batch is unrolled into "
                          "the step), not %d" % (MAX_MICRO_BATCHES, micro_batches))
    micro_inputs, micro_targets = inputs, targets
    if micro_batches > 1:
        for n, t in zip(input_names + target_names, inputs + targets):
            if t.dim() == 0 or t.shape[0] % micro_batches:
                raise ExportError("micro_batches %d: the batch input %s has shape %s, whose "
                                  "first dimension does not split %d ways" % (
                                      micro_batches, n, list(t.shape), micro_batches))
        micro_inputs = [t[:t.shape[0] // micro_batches] for t in inputs]
        micro_targets = [t[:t.shape[0] // micro_batches] for t in targets]

    if evaluation and (tensor_parallel > 1 or pipeline_stages > 1):
        raise ExportError("evaluation is exported for data parallelism only; tensor_parallel "
                          "%d and pipeline_stages %d have no evaluation program yet"
                          % (tensor_parallel, pipeline_stages))
    pipeline = _pipeline(model, pipeline_stages, stage_boundaries, pipeline_schedule,
                         tensor_parallel, virtual_stages, micro_batches)
    if world_size % (tensor_parallel * pipeline_stages):
        raise ExportError("world_size %d is not a multiple of tensor_parallel %d x "
                          "pipeline_stages %d: the world size counts every rank, the "
                          "data-parallel size is what those leave of it"
                          % (world_size, tensor_parallel, pipeline_stages))
    data_parallel = world_size // (tensor_parallel * pipeline_stages)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
        raise ExportError("seed must be an integer in [0, 2^32), not %r" % (seed,))
    half = _autocast_dtype(autocast)
    reduce_in = _reduce_dtype(reduce_dtype)
    if loss_scale is not None:
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or \
                not 0 < loss_scale < float("inf"):
            raise ExportError("loss_scale must be a positive finite number (a static loss "
                              "scale), not %r%s" % (loss_scale, "; braid has no dynamic loss "
                                                    "scaling (GradScaler skips steps at run "
                                                    "time)" if "Scaler" in type(loss_scale)
                                                    .__name__ else ""))
        loss_scale = float(loss_scale)
    params, aliases = _parameters(model)
    groups = _optimizer_groups(optimizer, params)
    schedule = None
    if lr_scheduler is not None:
        schedule = recipe.evaluate(optimizer, lr_scheduler,
                                   recipe.schedule_steps(lr_scheduler, max_steps))
    elif max_steps is not None:
        raise ExportError("max_steps is the length of an lr_scheduler's schedule; there is no "
                          "lr_scheduler")
    split = {}
    if tensor_parallel > 1:
        split = tensor_parallel_shardings(model, tensor_parallel_plan, tensor_parallel, aliases)
    name = name or type(model).__name__.lower() + "_step"
    # The step function's symbol: an MLIR bare identifier, which braid-compile
    # must parse back (a name such as "1bad" or "a-b" wrote unparsable IR).
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name):
        raise ExportError("name must be an MLIR identifier (a letter or '_', then letters, "
                          "digits, '_', '$' or '.'), not %r" % (name,))
    b = StepBuilder(name, world_size, tp=tensor_parallel, pp=pipeline_stages)
    b.shardings.update(split)
    b.zero_stage = zero_stage
    if pipeline is not None:
        # One micro-batch's step: braid-pipeline runs it once per micro-batch.
        b.pipeline(micro_batches, pipeline_schedule, pipeline, virtual_stages)
    with _attributes_as_buffers(model):
        graph = _trace(model, params, aliases, micro_inputs, micro_targets, loss_fn,
                       autocast=torch.bfloat16 if half else None)
        mlir, state, summary = _lower(graph, b, model, params, aliases, groups, optimizer,
                                      micro_inputs, input_names, micro_targets, target_names,
                                      schedule, 1 if pipeline is not None else micro_batches,
                                      max_grad_norm, reduce_in, half, loss_scale, seed)
        if evaluation:
            eval_text = _evaluation(model, params, aliases, inputs, input_names, targets,
                                    target_names, loss_fn, name, world_size, half)
            mlir = _append_function(mlir, eval_text)
    examples = inputs + targets
    if global_batch is not None:
        if not isinstance(global_batch, (tuple, list)) or len(global_batch) != 2:
            raise ExportError("global_batch must be (inputs, targets)")
        examples = _tensors(global_batch[0], "global_batch inputs") + \
            _tensors(global_batch[1], "global_batch targets")
        if len(examples) != len(inputs + targets):
            raise ExportError("global_batch has %d tensors, the example batch %d"
                              % (len(examples), len(inputs + targets)))
        for n, g, t in zip(input_names + target_names, examples, inputs + targets):
            want = (data_parallel * t.shape[0],) + tuple(t.shape[1:]) if t.dim() else None
            if want is None or tuple(g.shape) != want or g.dtype != t.dtype:
                raise ExportError("global_batch: %s is %s %s, expected %s %s (the "
                                  "data-parallel size %d times the example along dimension 0)"
                                  % (n, list(g.shape), g.dtype, list(want or ()), t.dtype,
                                     data_parallel))
    batch = {n: t.detach().cpu().numpy() for n, t in zip(input_names + target_names, examples)}
    summary.update(model=type(model).__name__, world_size=world_size,
                   data_parallel=data_parallel, micro_batches=micro_batches,
                   max_grad_norm=max_grad_norm, autocast=autocast, reduce_dtype=reduce_in,
                   loss_scale=loss_scale,
                   micro_rows=(micro_inputs + micro_targets)[0].shape[0],
                   optimizer=type(optimizer).__name__, function=name,
                   tensor_parallel=tensor_parallel, split=split,
                   pipeline_stages=pipeline_stages,
                   stage_boundaries=None if pipeline is None else list(pipeline),
                   pipeline_schedule=None if pipeline is None else pipeline_schedule,
                   virtual_stages=None if pipeline is None else virtual_stages,
                   evaluation=name + "_eval" if evaluation else None, zero_stage=zero_stage)
    result = Exported(mlir, state, batch, summary)
    if output:
        result.write(output)
    return result


# -- arguments ------------------------------------------------------------------


def _pipeline(model, stages, boundaries, schedule, tensor_parallel, virtual_stages=1,
              micro_batches=1):
    """The checked pipeline request: None without one, else the boundary
    modules (an empty tuple: balanced by braid-pipeline)."""
    if not isinstance(stages, int) or isinstance(stages, bool) or stages < 1:
        raise ExportError("pipeline_stages must be a positive integer, not %r" % (stages,))
    if stages == 1:
        if boundaries:
            raise ExportError("stage_boundaries needs pipeline_stages above 1")
        if virtual_stages != 1:
            raise ExportError("virtual_stages needs pipeline_stages above 1")
        return None
    if schedule not in PIPELINE_SCHEDULES:
        raise ExportError("pipeline_schedule must be one of %s, not %r"
                          % (", ".join(PIPELINE_SCHEDULES), schedule))
    try:
        check_virtual_stages(schedule, virtual_stages, stages, micro_batches)
    except ValueError as e:
        raise ExportError("pipeline_schedule %s: %s" % (schedule, e))
    stages *= virtual_stages
    # Every stage holds at least one parameter (braid-pipeline cuts at
    # parameters): more stages than parameters cannot be balanced (100
    # stages of a small model exported, and failed only in braid-compile).
    parameters = sum(1 for _ in model.parameters())
    if stages > parameters:
        raise ExportError("%d pipeline stages need at least %d parameters (a stage holds at "
                          "least one), but %s has %d" % (stages, stages, type(model).__name__,
                                                         parameters))
    if boundaries is None:
        return ()
    if isinstance(boundaries, str) or not all(isinstance(b, str) for b in boundaries):
        raise ExportError("stage_boundaries must be a list of module names, not %r"
                          % (boundaries,))
    boundaries = tuple(boundaries)
    if len(boundaries) != stages - 1:
        raise ExportError("%s needs %d stage_boundaries, not %d (%s)" % (
            "pipeline_stages %d" % stages if virtual_stages == 1 else
            "pipeline_stages %d x virtual_stages %d" % (stages // virtual_stages,
                                                        virtual_stages),
            stages - 1, len(boundaries), ", ".join(boundaries)))
    modules = dict(model.named_modules())
    order = {n: i for i, (n, _) in enumerate(model.named_parameters())}
    first = []
    for b in boundaries:
        if b not in modules or not b:
            raise ExportError("stage boundary '%s' names no module of %s (its modules: %s)" % (
                b, type(model).__name__, ", ".join(n for n, _ in model.named_children())))
        names = [b + "." + n for n, _ in modules[b].named_parameters()]
        if not names:
            raise ExportError("stage boundary '%s' is a module without parameters; a stage "
                              "starts at a module's first parameter" % b)
        first.append(min(order.get(n, len(order)) for n in names))
    if first != sorted(first) or len(set(first)) != len(first):
        raise ExportError("stage_boundaries %s are not in the model's order (%s)" % (
            ", ".join(boundaries), ", ".join(n for n, _ in model.named_children())))
    if first and first[0] == 0:
        raise ExportError("stage boundary '%s' starts at the model's first parameter, so "
                          "stage 0 would hold no parameters" % boundaries[0])
    return boundaries



_HALF = {"bf16": "bf16", "fp16": "f16"}


def _autocast_dtype(autocast):
    """braid's compute type for spec key `autocast`, or None."""
    if autocast is None:
        return None
    if autocast not in _HALF:
        raise ExportError("autocast must be 'bf16', 'fp16' or absent, not %r" % (autocast,))
    return _HALF[autocast]


def _reduce_dtype(reduce_dtype):
    """The braid element type gradients are all-reduced in (None: theirs)."""
    if reduce_dtype is None or reduce_dtype == "fp32":
        return None
    if reduce_dtype not in _HALF:
        raise ExportError("reduce_dtype must be 'fp32', 'bf16', 'fp16' or absent, not %r"
                          % (reduce_dtype,))
    return _HALF[reduce_dtype]


def _lower(traced, b, model, params, aliases, groups, optimizer, inputs, input_names,
           targets, target_names, schedule=None, micro=1, max_grad_norm=None,
           reduce_dtype=None, half=None, loss_scale=None, seed=0):
    graph, nflat = traced
    buffers = list(model.named_buffers())
    P, B = len(params), len(buffers)
    opt = optimizers.of(optimizer)
    low = Lowering(b, _describe, half)
    env = low.env

    # Arguments: parameters, optimizer state, then the batch.
    for n, p in params:
        if p.dtype not in DTYPES or not p.dtype.is_floating_point:
            raise ExportError("parameter %s has dtype %s" % (n, p.dtype))
    pvals = [b.param(n, tuple(p.shape), DTYPES[p.dtype]) for n, p in params]
    state = {n: p.detach().cpu().numpy().copy() for n, p in params}
    opt_args = {}
    step_arg = None
    steps = set()
    for (n, p), v in zip(params, pvals):
        opt_args[n] = tuple(b.arg("optimizer_state", s, v.shape, v.dtype)
                            for s in opt.state_names(n))
        state.update(opt.state_arrays(optimizer, p, n))
        steps.add(opt.step_count(optimizer, p))
    if opt.has_step:
        if len(steps) > 1:
            raise ExportError("the optimizer's parameters are at different steps (%s); "
                              "braid keeps one step count" % sorted(steps))
        step_arg = b.arg("optimizer_state", "step", ())
        state["step"] = np.array(steps.pop() if steps else 0.0, dtype=np.float32)
    # Dropout in train mode: the step count its masks are drawn with (an
    # optimizer-state scalar the step increments) and the rank's index.
    rng = None
    if any(_draws_dropout(n) for n in graph.graph.nodes):
        dropout_step = b.arg("optimizer_state", "dropout.step", ())
        state["dropout.step"] = np.array(0.0, dtype=np.float32)
        rng = RandomState(dropout_step, b.axis_index(b.dp_axis, hint="dp_rank"), seed)
    # A scheduled learning rate: one hyperparameter argument per param group,
    # its schedule written with the parameters.
    lr_of = {}
    if schedule is not None:
        index = {id(g): i for i, g in enumerate(optimizer.param_groups)}
        lr_args = []
        for i, n in enumerate(recipe.lr_names(optimizer)):
            lr_args.append(b.arg("hyperparameter", n, ()))
            state[n] = schedule[:, i].astype(np.float32)
        lr_of = {n: lr_args[index[id(groups[n])]] for n, _ in params}
    names = [n for n, _ in params] + list(state) + ["loss"]
    for n in input_names + target_names:
        if n in names:
            raise ExportError("the batch name %r is also the name of a parameter or "
                              "optimizer state; pass input_names/target_names" % n)
    if len(set(input_names + target_names)) != len(input_names + target_names):
        raise ExportError("the batch names %s are not distinct" % (input_names + target_names))

    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    primals = [n for n in placeholders if not n.name.startswith("tangents")]
    tangents = [n for n in placeholders if n.name.startswith("tangents")]
    if len(primals) != nflat or len(tangents) != 1:
        raise ExportError("the joint graph has %d inputs and %d tangents, expected %d and 1"
                          % (len(primals), len(tangents), nflat))
    # The batch arguments hold the rank's whole batch; with micro-batches
    # the graph (traced on one micro-batch) runs once per slice of it.
    batch_vals = [b.arg("batch", n, (micro * t.shape[0],) + tuple(t.shape[1:]), DTYPES[t.dtype])
                  for n, t in zip(input_names + target_names, inputs + targets)]

    output = next(n for n in graph.graph.nodes if n.op == "output")
    outs = list(output.args[0])
    loss_node, grad_nodes = outs[0], outs[1:1 + P]
    grad_of = {}
    for i, g in enumerate(grad_nodes):
        if g is None:
            raise ExportError("parameter %s does not reach the loss (no gradient)"
                              % params[i][0])
        grad_of.setdefault(g, []).append(i)

    # Each micro-batch's forward and backward (its loss weighted 1/micro,
    # as `(loss / k).backward()` accumulates), its gradients added to the
    # earlier ones; each parameter's all-reduce follows its gradient in the
    # last micro-batch only (DDP's no_sync for the others).
    low.rng = rng
    reduced, accumulated, losses = {}, {}, []
    aten = collections.Counter()
    for mb in range(micro):
        last = mb == micro - 1
        if mb:
            low = Lowering(b, _describe, half)
            env = low.env
        low.rng = rng
        for i, ph in enumerate(primals):
            if i < P:
                env[ph] = pvals[i]
            elif i < P + B:
                env[ph] = buffers[i - P][1].detach().clone()
            else:
                v, t = batch_vals[i - P - B], (inputs + targets)[i - P - B]
                env[ph] = v if micro == 1 else b.slice(
                    v, [mb * t.shape[0]] + [0] * (t.dim() - 1), tuple(t.shape),
                    hint="%s_mb%d" % (v.name[1:], mb))
        env[tangents[0]] = torch.full((), (loss_scale or 1.0) / micro, dtype=torch.float32)
        # Tensors that the model's code holds as plain attributes (neither
        # parameters nor buffers) are constants of the step.
        attrs = [n for n in graph.graph.nodes if n.op == "get_attr"]
        for node in attrs:
            env[node] = _attribute(graph, node)
        if not mb:
            for node in graph.graph.nodes:
                if node.op not in ("placeholder", "get_attr", "call_function", "output"):
                    raise ExportError("%s node %s (%s) cannot be exported: braid lowers aten "
                                      "ops" % (node.op, node.target, _describe(node)))
            low.check_supported(graph.graph, [ph for ph in primals
                                              if isinstance(env[ph], torch.Tensor)] +
                                tangents + attrs)

        def gradient(i, g):
            """Micro-batch mb's gradient `g` of parameter i."""
            acc = g if not mb else b.add(accumulated[i], g, hint="acc_" + params[i][0])
            accumulated[i] = acc
            if last:
                reduced[i] = b.grad_all_reduce(acc, params[i][0], reduce_dtype)

        done = set()
        for node in graph.graph.nodes:
            if node.op != "call_function":
                continue
            if not mb:
                aten[op_name(node.target)] += 1
            env[node] = low.lower(node)
            for i in grad_of.get(node, ()):
                low.node = node
                source = getattr(env[node], "widened_from", None)
                if micro == 1 and source is not None and source.dtype == reduce_dtype:
                    gradient(i, source)  # reduced in its own type: no round trip
                else:
                    gradient(i, low.materialize(env[node]))
                done.add(i)
        for g, idx in grad_of.items():  # a gradient that is an argument or a constant
            for i in idx:
                if i not in done:
                    low.node = g
                    gradient(i, low.materialize(low.ref(g)))

        low.node = loss_node
        losses.append(low.materialize(low.ref(loss_node)))
        if losses[-1].shape != ():
            raise ExportError("the loss has shape %s; loss_fn must return a scalar"
                              % list(losses[-1].shape))
    # The step's loss: the mean of its micro-batches' (the rank's batch's
    # for a mean loss).
    loss = losses[0]
    for mb, l in enumerate(losses[1:], 1):
        loss = b.add(loss, l, hint="loss_sum")
    if micro > 1:
        loss = b.scale(loss, 1.0 / micro, hint="loss_mean")

    # Gradients reduced in a narrower type come back to the parameter's
    # here, after the backward (the all-reduces stay free to be bucketed).
    for i in range(P):
        if reduced[i].dtype != pvals[i].dtype:
            reduced[i] = b.cast(reduced[i], pvals[i].dtype, hint="g32_" + params[i][0])
        # A static loss scale comes off before clipping and the update.
        if loss_scale is not None and loss_scale != 1.0:
            reduced[i] = b.scale(reduced[i], 1.0 / loss_scale, hint="unscaled_" + params[i][0])

    # Gradient clipping by the global norm, after every all-reduce: the
    # updates take its factor as their grad_scale.
    scale = None
    if max_grad_norm is not None:
        scale = b.clip_factor({params[i][0]: reduced[i] for i in range(P)}, max_grad_norm)

    # The optimizer, parameter by parameter.
    new_step = None
    if step_arg is not None:
        new_step = b.add(step_arg, b.constant(1.0, hint="one"), hint="new_step")
    for i, ((n, p), v) in enumerate(zip(params, pvals)):
        new = opt.build(b, n, reduced[i], opt_args[n], new_step, lr_of.get(n, groups[n]["lr"]),
                        groups[n], scale)
        b.result(new[0], "parameter", n)
        for value, s in zip(new[1:], opt.state_names(n)):
            b.result(value, "optimizer_state", s)
    if step_arg is not None:
        b.result(new_step, "optimizer_state", "step")
    if rng is not None:
        b.result(b.add(rng.step, b.constant(1.0, hint="one"), hint="new_dropout_step"),
                 "optimizer_state", "dropout.step")
    b.result(loss, "loss", "loss")

    header = ("// Exported by braid.export from %s: one data-parallel training step on %d "
              "ranks with %s.\n// %d aten ops in the joint forward+backward graph.\n"
              % (type(model).__name__, b.world_size, opt.label(optimizer),
                 sum(aten.values())))
    if micro > 1:
        header += ("// %d micro-batches: the forward and backward once per slice of the batch, "
                   "gradients accumulated, all-reduced after the last.\n" % micro)
    if max_grad_norm is not None:
        header += ("// Gradients clipped to a global norm of %g (torch.nn.utils.clip_grad_norm_)."
                   "\n" % max_grad_norm)
    if schedule is not None:
        header += "// The learning rate follows a schedule of %d steps (hyperparameter %s).\n" % (
            len(schedule), ", ".join(recipe.lr_names(optimizer)))
    summary = {"parameters": [n for n, _ in params], "tied": dict(aliases),
               "parameter_elements": sum(p.numel() for _, p in params),
               "aten_ops": dict(aten), "braid_ops": len(b.body),
               "schedule": None if schedule is None else
               {n: schedule[:, i] for i, n in enumerate(recipe.lr_names(optimizer))}}
    return b.text(header), state, summary


def _evaluation(model, params, aliases, inputs, input_names, targets, target_names, loss_fn,
                name, world_size, half):
    """The evaluation program's function text: NAME_eval, the loss of the
    model in eval mode on one rank's batch, forward only. Its parameters are
    the step's (same names, shapes and types), so that braid-compile can give
    them the step's bytes of the arena."""
    was_training = model.training
    model.eval()
    try:
        graph, nflat = _trace_forward(model, params, aliases, list(inputs), list(targets),
                                      loss_fn, torch.bfloat16 if half else None)
    finally:
        model.train(was_training)
    b = StepBuilder(name + "_eval", world_size)
    low = Lowering(b, _describe, half)
    env = low.env
    buffers = list(model.named_buffers())
    P, B = len(params), len(buffers)
    pvals = [b.param(n, tuple(p.shape), DTYPES[p.dtype]) for n, p in params]
    batch = inputs + targets
    bvals = [b.arg("batch", n, tuple(t.shape), DTYPES[t.dtype])
             for n, t in zip(input_names + target_names, batch)]
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != nflat:
        raise ExportError("the evaluation graph has %d inputs, expected %d"
                          % (len(placeholders), nflat))
    for i, ph in enumerate(placeholders):
        env[ph] = pvals[i] if i < P else (buffers[i - P][1].detach().clone() if i < P + B
                                          else bvals[i - P - B])
    attrs = [n for n in graph.graph.nodes if n.op == "get_attr"]
    for node in attrs:
        env[node] = _attribute(graph, node)
    for node in graph.graph.nodes:
        if node.op not in ("placeholder", "get_attr", "call_function", "output"):
            raise ExportError("%s node %s (%s) cannot be exported: braid lowers aten ops"
                              % (node.op, node.target, _describe(node)))
    low.check_supported(graph.graph, [ph for ph in placeholders
                                      if isinstance(env[ph], torch.Tensor)] + attrs)
    for node in graph.graph.nodes:
        if node.op == "call_function":
            env[node] = low.lower(node)
    output = next(n for n in graph.graph.nodes if n.op == "output")
    loss_node = output.args[0][0] if isinstance(output.args[0], (list, tuple)) \
        else output.args[0]
    low.node = loss_node
    loss = low.materialize(low.ref(loss_node))
    if loss.shape != ():
        raise ExportError("the evaluation loss has shape %s; loss_fn must return a scalar"
                          % list(loss.shape))
    b.result(loss, "loss", "loss")
    return b.function_text({"braid.evaluates": "@" + name})


def _append_function(module_text, function_text):
    """`module_text` (StepBuilder.text's) with `function_text` added after
    its step function, inside the module."""
    return module_text.rstrip("\n") + "\n\n" + function_text + "\n"


def _draws_dropout(node):
    """Whether an fx node draws a dropout mask (train mode, 0 < p)."""
    if node.op != "call_function":
        return False
    aten = torch.ops.aten
    if node.target is aten.native_dropout.default:
        p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p")
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
        return bool(train) and p != 0
    return node.target in (aten.bernoulli_.float, aten.bernoulli.p)


def _attribute(module, node):
    """The tensor that a get_attr node of the traced graph names."""
    value = module
    for part in str(node.target).split("."):
        value = getattr(value, part, None)
    if not isinstance(value, torch.Tensor):
        raise ExportError("the traced step reads %s (%s), which is not a tensor"
                          % (node.target, _describe(node)))
    return value.detach().clone()


# -- command line ----------------------------------------------------------------------

def main(argv=None):
    """`python3 -m braid.export`: braid.export_cli."""
    from braid.export_cli import main as cli_main
    return cli_main(argv)


class _CallableModule(types.ModuleType):
    """`braid.export(...)` calls export(); `python3 -m braid.export` runs main()."""

    def __call__(self, *args, **kwargs):
        return export(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
