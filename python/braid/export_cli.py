"""`python3 -m braid.export SPEC -o PREFIX`: the command line of
braid.export. It loads the spec (braid.spec), resolves the world size and
the parallel sizes from the options and the spec, calls export() and prints
a summary of what it wrote."""

import argparse
import os
import sys

from braid._cli import module_command
from braid.aten import ExportError
from braid.export import SUPPORTED_OPS, export
from braid.ir import DEFAULT_PIPELINE_SCHEDULE, PIPELINE_SCHEDULES, is_interleaved
from braid.spec import _parse_value, load_spec


def _resolved(args, spec, option):
    """A parallel size: the command line's, else the spec's, else 1."""
    value = getattr(args, option)
    return value if value is not None else spec.get(option, 1)


def _spec_and_world(args, kwargs):
    """The spec's dict, its function called with the data-parallel size the
    run will have (when it takes data_parallel and no --arg gives it), and
    the world size: the command line's, else the spec's world_size, else its
    data_parallel times the tensor-parallel and pipeline sizes."""
    kwargs = dict(kwargs)
    given = kwargs.pop("data_parallel", None)

    def load(data_parallel):
        return load_spec(args.spec, data_parallel=given or data_parallel, **kwargs)

    data_parallel = None
    if args.world_size is not None:
        parts = (args.tensor_parallel or 1) * (args.pipeline_stages or 1)
        if args.world_size % parts == 0:
            data_parallel = args.world_size // parts
    spec = load(data_parallel)
    parts = _resolved(args, spec, "tensor_parallel") * _resolved(args, spec, "pipeline_stages")
    if not isinstance(parts, int) or parts < 1:
        return spec, args.world_size  # export() names the bad size
    world = args.world_size if args.world_size is not None else spec.get("world_size")
    if world is None and spec.get("data_parallel") is not None:
        world = spec["data_parallel"] * parts
    if world is None:
        raise ExportError("no world size: pass --world-size, or return world_size (every "
                          "rank) or data_parallel from the spec")
    if not isinstance(world, int) or world % parts:
        return spec, world  # export() names it
    if data_parallel is not None and given is None and world // parts != data_parallel:
        # The spec itself set the tensor-parallel or pipeline size: call it
        # again with the data-parallel size they leave.
        spec = load(world // parts)
    if spec.get("data_parallel") is not None and world != spec["data_parallel"] * parts:
        raise ExportError("the spec returns data_parallel %r, but the world size %d over "
                          "tensor-parallel x pipeline stages %d leaves %d"
                          % (spec["data_parallel"], world, parts, world // parts))
    return spec, world


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=module_command("braid.export"),
        description="Export a PyTorch model's data-parallel training step as braid IR. "
                    "SPEC names a function (FILE.py:FUNC or package.module:FUNC, FUNC "
                    "defaulting to build; called with data_parallel=N, the data-parallel "
                    "size that sizes its global batch, when it takes it and --world-size "
                    "is given) that returns a dict with model, example_inputs, "
                    "example_targets, loss_fn, optimizer and optionally world_size (every "
                    "rank) or data_parallel, "
                    "input_names, target_names, global_batch, tensor_parallel_plan, "
                    "lr_scheduler, max_steps, micro_batches, max_grad_norm, autocast, "
                    "reduce_dtype, loss_scale, pipeline_stages, stage_boundaries, "
                    "pipeline_schedule, virtual_stages.")
    parser.add_argument("spec", metavar="SPEC", nargs="?")
    parser.add_argument("--list-ops", action="store_true",
                        help="print the aten ops that have a braid lowering and exit")
    parser.add_argument("-o", "--output", metavar="PREFIX",
                        help="writes PREFIX.mlir, PREFIX.npz, PREFIX.batch.npz")
    parser.add_argument("--world-size", type=int,
                        help="every rank, as torch and mpirun count them; the data-parallel "
                             "size is WORLD_SIZE / (tensor-parallel x pipeline stages) "
                             "(overrides the spec's; default: the spec's world_size, or its "
                             "data_parallel times those)")
    parser.add_argument("--tensor-parallel", type=int, metavar="N",
                        help="the tensor-parallel size, split by the "
                             "spec's tensor_parallel_plan (overrides the spec's "
                             "tensor_parallel; default 1)")
    parser.add_argument("--max-steps", type=int, metavar="N",
                        help="steps of the spec's lr_scheduler to write (overrides the "
                             "spec's max_steps)")
    parser.add_argument("--micro-batches", type=int, metavar="K",
                        help="gradient accumulation over K micro-batches of each rank's batch "
                             "(overrides the spec's micro_batches; default 1)")
    parser.add_argument("--zero-stage", type=int, metavar="S",
                        help="ZeRO: shard the optimizer state over the data-parallel ranks at "
                             "stage 1 or 2 (overrides the spec's zero_stage; default 0; "
                             "docs/ShardedDataParallel.md)")
    parser.add_argument("--max-grad-norm", type=float, metavar="NORM",
                        help="clip gradients to this global norm, as "
                             "torch.nn.utils.clip_grad_norm_ (overrides the spec's "
                             "max_grad_norm)")
    parser.add_argument("--autocast", choices=["bf16", "fp16"],
                        help="mixed precision as torch.autocast: bf16 or fp16 compute, f32 "
                             "master weights (overrides the spec's autocast)")
    parser.add_argument("--loss-scale", type=float, metavar="S",
                        help="a static loss scale (overrides the spec's loss_scale)")
    parser.add_argument("--reduce-dtype", choices=["fp32", "bf16", "fp16"],
                        help="the type gradients are all-reduced in (overrides the spec's "
                             "reduce_dtype; default fp32)")
    parser.add_argument("--pipeline-stages", type=int, metavar="P",
                        help="pipeline parallelism over P stages, split at the spec's "
                             "stage_boundaries (overrides the spec's pipeline_stages; "
                             "default 1)")
    parser.add_argument("--stage-boundaries", metavar="M1,M2,...",
                        help="the modules starting each stage after the first (overrides "
                             "the spec's stage_boundaries; default: balanced)")
    parser.add_argument("--pipeline-schedule", choices=PIPELINE_SCHEDULES,
                        help="the order of a stage's micro-batches (overrides the spec's "
                             "pipeline_schedule; default 1f1b)")
    parser.add_argument("--virtual-stages", type=int, metavar="V",
                        help="with --pipeline-schedule interleaved: virtual stages per rank "
                             "(overrides the spec's virtual_stages; default 2 with the "
                             "interleaved schedule)")
    parser.add_argument("--evaluation", action="store_true",
                        help="also export the evaluation program (the loss of model.eval(), "
                             "forward only) for braid-run --eval-data (or the spec's "
                             "evaluation)")
    parser.add_argument("--name", help="the step function's name")
    parser.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword argument for FUNC (repeatable)")
    args = parser.parse_args(argv)
    if args.list_ops:
        print("\n".join(SUPPORTED_OPS))
        return 0
    if not args.spec or not args.output:
        parser.error("SPEC and -o PREFIX are required")
    try:
        if args.output.endswith(os.sep) or os.path.isdir(args.output):
            raise ExportError("-o takes a path prefix (it writes PREFIX.mlir, PREFIX.npz and "
                              "PREFIX.batch.npz), not the directory %r" % args.output)
        # Counts are checked before the spec's function is called with them
        # (a world size of -2 reached the user's code, ending in a traceback).
        for option in ("world_size", "tensor_parallel", "max_steps", "micro_batches",
                       "pipeline_stages", "virtual_stages"):
            value = getattr(args, option)
            if value is not None and value < 1:
                raise ExportError("--%s must be a positive integer, not %d"
                                  % (option.replace("_", "-"), value))
        kwargs = {}
        for a in args.arg:
            key, eq, value = a.partition("=")
            if not eq or not key:
                raise ExportError("--arg takes KEY=VALUE, not %r" % a)
            kwargs[key] = _parse_value(value)
        spec, world = _spec_and_world(args, kwargs)
        schedule_pp = args.pipeline_schedule or spec.get("pipeline_schedule",
                                                              DEFAULT_PIPELINE_SCHEDULE)
        result = export(spec["model"], spec["example_inputs"], spec["example_targets"],
                        spec["loss_fn"], spec["optimizer"], world, name=args.name,
                        input_names=spec.get("input_names"),
                        target_names=spec.get("target_names"),
                        global_batch=spec.get("global_batch"),
                        tensor_parallel=_resolved(args, spec, "tensor_parallel"),
                        tensor_parallel_plan=spec.get("tensor_parallel_plan"),
                        lr_scheduler=spec.get("lr_scheduler"),
                        max_steps=args.max_steps if args.max_steps is not None
                        else spec.get("max_steps"),
                        micro_batches=args.micro_batches if args.micro_batches is not None
                        else spec.get("micro_batches", 1),
                        max_grad_norm=args.max_grad_norm if args.max_grad_norm is not None
                        else spec.get("max_grad_norm"),
                        autocast=args.autocast if args.autocast is not None
                        else spec.get("autocast"),
                        reduce_dtype=args.reduce_dtype if args.reduce_dtype is not None
                        else spec.get("reduce_dtype"),
                        loss_scale=args.loss_scale if args.loss_scale is not None
                        else spec.get("loss_scale"),
                        pipeline_stages=_resolved(args, spec, "pipeline_stages"),
                        stage_boundaries=args.stage_boundaries.split(",")
                        if args.stage_boundaries is not None
                        else spec.get("stage_boundaries"),
                        pipeline_schedule=schedule_pp,
                        virtual_stages=args.virtual_stages if args.virtual_stages is not None
                        else spec.get("virtual_stages",
                                      2 if is_interleaved(schedule_pp) else 1),
                        evaluation=args.evaluation or bool(spec.get("evaluation", False)),
                        zero_stage=args.zero_stage if args.zero_stage is not None
                        else spec.get("zero_stage", 0))
        paths = result.write(args.output)
    except ExportError as e:
        print("braid.export: error: %s" % e, file=sys.stderr)
        print("braid.export: nothing written", file=sys.stderr)
        return 1
    s = result.summary
    tp = s["tensor_parallel"]
    layout = ["%d data-parallel" % s["data_parallel"]] + \
        (["%d tensor-parallel" % tp] if tp > 1 else []) + \
        (["%d pipeline stages" % s["pipeline_stages"]] if s["pipeline_stages"] > 1 else [])
    print("exported %s: @%s, %d ranks%s, %s" % (
        s["model"], s["function"], s["world_size"],
        " (%s)" % " x ".join(layout) if len(layout) > 1 else "", s["optimizer"]))
    if tp > 1:
        print("  tensor-parallel %d parameters split (%s)" % (
            len(s["split"]), ", ".join("%s: %s" % kv for kv in sorted(s["split"].items())[:4])
            + (", ..." if len(s["split"]) > 4 else "")))
    print("  parameters      %d tensors, %d elements" % (len(s["parameters"]),
                                                          s["parameter_elements"]))
    for alias, name in sorted(s["tied"].items()):
        print("  tied            %s is %s (gradients summed)" % (alias, name))
    print("  joint graph     %d aten ops of %d kinds -> %d braid ops"
          % (sum(s["aten_ops"].values()), len(s["aten_ops"]), s["braid_ops"]))
    for n, rates in (s["schedule"] or {}).items():
        print("  schedule        %s over %d steps: %.4g at step 1, %.4g at most, %.4g at step %d"
              % (n, len(rates), rates[0], rates.max(), rates[-1], len(rates)))
    if s["max_grad_norm"] is not None:
        print("  clipping        gradients to a global norm of %g" % s["max_grad_norm"])
    if s["autocast"] is not None:
        print("  autocast        %s compute as torch.autocast casts it, f32 master weights; "
              "gradients all-reduced in %s%s" % (s["autocast"], s["reduce_dtype"] or "f32",
                                                 "; loss scale %g" % s["loss_scale"]
                                                 if s["loss_scale"] else ""))
    if s["micro_batches"] > 1:
        k = s["micro_batches"]
        print("  micro-batches   %d per step, %d rows each; gradients accumulated, all-reduced "
              "once after the last" % (k, s["micro_rows"]))
    if s["evaluation"]:
        print("  evaluation      @%s: the loss of model.eval() on a batch, forward only"
              % s["evaluation"])
    print("  batch           %s" % ", ".join("%s %s %s" % (n, list(a.shape), a.dtype)
                                            for n, a in result.batch.items()))
    for key in ("mlir", "params", "batch"):
        print("  wrote           %s" % paths[key])
    return 0
