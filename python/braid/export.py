"""Export a PyTorch training step as graph-level braid IR.

    import braid
    braid.export(model, (tokens,), (labels,), loss_fn, optimizer, world_size=2,
                 output="build/gpt")

    python3 -m braid.export examples/pytorch/gpt.py -o build/gpt --world-size 2

AOT autograd (functorch.compile.aot_function, in torch 1.13 and 2.x) traces
`loss_fn(model(*example_inputs), *example_targets)` and its backward into
one joint graph of aten ops. braid.aten lowers each op to braid ops; this
module adds one data-parallel gradient all-reduce (average) per parameter
on a grid of `world_size` ranks, right after the gradient is complete, and
the optimizer's update (torch.optim.SGD or AdamW, with their
hyper-parameters and state read from the optimizer instance). It writes

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

import argparse
import collections
import contextlib
import copy
import importlib
import importlib.util
import inspect
import os
import sys
import types

import numpy as np
import torch

from braid.aten import DTYPES, ExportError, LOWERINGS, Lowering, op_name
from braid.ir import StepBuilder

__all__ = ["export", "Exported", "ExportError", "SUPPORTED_OPS", "load_spec",
           "torch_reference"]

SUPPORTED_OPS = sorted(LOWERINGS)

# Marks the fx nodes that a module's forward creates (see _module_paths).
_TAG = "braid-module: "


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
           output=None, name=None, input_names=None, target_names=None, global_batch=None):
    """Traces one training step of `model` and returns it as braid IR.

    model            a torch.nn.Module
    example_inputs   one rank's inputs: a tuple of tensors (model(*example_inputs))
    example_targets  one rank's targets: a tuple of tensors
    loss_fn          loss = loss_fn(model(*example_inputs), *example_targets), a scalar
    optimizer        a torch.optim.SGD or AdamW (Adam without weight decay) over
                     the model's parameters; its hyper-parameters and state are read
    world_size       the number of data-parallel ranks
    output           a path prefix: when given, writes PREFIX.mlir, PREFIX.npz
                     and PREFIX.batch.npz (only once everything has succeeded)
    name             the step function's name (default: the model's class, "_step")
    input_names, target_names
                     the batch arguments' names (default: the parameter names of
                     model.forward and of loss_fn after its first)
    global_batch     optional (inputs, targets) of all ranks, world_size times the
                     example batch along dimension 0, written as the batch file

    Raises ExportError (nothing written) on anything it cannot export.
    """
    if not isinstance(model, torch.nn.Module):
        raise ExportError("model must be a torch.nn.Module, not %s" % type(model).__name__)
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ExportError("world_size must be a positive integer, not %r" % (world_size,))
    inputs = _tensors(example_inputs, "example_inputs")
    targets = _tensors(example_targets, "example_targets")
    input_names = _names(input_names, model.forward, 0, len(inputs), "input", "input_names")
    target_names = _names(target_names, loss_fn, 1, len(targets), "target", "target_names")

    params, aliases = _parameters(model)
    groups = _optimizer_groups(optimizer, params)
    graph = _trace(model, params, aliases, inputs, targets, loss_fn)

    name = name or type(model).__name__.lower() + "_step"
    b = StepBuilder(name, world_size)
    mlir, state, summary = _lower(graph, b, model, params, aliases, groups, optimizer,
                                  inputs, input_names, targets, target_names)
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
            want = (world_size * t.shape[0],) + tuple(t.shape[1:]) if t.dim() else None
            if want is None or tuple(g.shape) != want or g.dtype != t.dtype:
                raise ExportError("global_batch: %s is %s %s, expected %s %s (world_size times "
                                  "the example along dimension 0)" % (
                                      n, list(g.shape), g.dtype, list(want or ()), t.dtype))
    batch = {n: t.detach().cpu().numpy() for n, t in zip(input_names + target_names, examples)}
    summary.update(model=type(model).__name__, world_size=world_size,
                   optimizer=type(optimizer).__name__, function=name)
    result = Exported(mlir, state, batch, summary)
    if output:
        result.write(output)
    return result


# -- arguments ------------------------------------------------------------------

def _tensors(xs, what):
    if isinstance(xs, torch.Tensor):
        xs = (xs,)
    if not isinstance(xs, (tuple, list)) or not all(isinstance(x, torch.Tensor) for x in xs):
        raise ExportError("%s must be a tuple of tensors" % what)
    for x in xs:
        if x.dtype not in DTYPES or x.dtype == torch.bool:
            raise ExportError("%s: a tensor of dtype %s (braid takes float and integer "
                              "tensors)" % (what, x.dtype))
    # Clones: AOT autograd merges arguments that are the same tensor.
    return [x.detach().clone() for x in xs]


def _names(given, fn, skip, count, stem, what):
    if given is not None:
        names = list(given)
        if len(names) != count:
            raise ExportError("%s has %d names for %d tensors" % (what, len(names), count))
        return names
    try:
        sig = [p.name for p in inspect.signature(fn).parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][skip:]
    except (TypeError, ValueError):
        sig = []
    if len(sig) >= count:
        return sig[:count]
    return [stem if count == 1 else "%s%d" % (stem, i) for i in range(count)]


def _parameters(model):
    """Unique parameters in order, and alias name -> the name it shares."""
    params, seen, aliases = [], {}, {}
    every = [(path + "." + n if path else n, p) for path, mod in model.named_modules()
             for n, p in mod._parameters.items() if p is not None]
    for n, p in every:
        if id(p) in seen:
            aliases[n] = seen[id(p)]
        else:
            seen[id(p)] = n
            params.append((n, p))
    if not params:
        raise ExportError("the model has no parameters to train")
    return params, aliases


def _optimizer_groups(optimizer, params):
    """name -> the param_group of the optimizer that holds the parameter."""
    kind = type(optimizer).__name__
    if not isinstance(optimizer, (torch.optim.SGD, torch.optim.AdamW, torch.optim.Adam)):
        raise ExportError("optimizer %s is not supported: braid exports torch.optim.SGD "
                          "(with or without momentum) and AdamW" % kind)
    by_id = {}
    for g in optimizer.param_groups:
        for p in g["params"]:
            by_id[id(p)] = g
    groups = {}
    for n, p in params:
        g = by_id.get(id(p))
        if g is None:
            raise ExportError("parameter %s is not in the optimizer: braid trains every "
                              "parameter of the model" % n)
        if g.get("maximize", False):
            raise ExportError("%s(maximize=True) is not supported" % kind)
        if kind == "SGD" and g["dampening"] and optimizer.state.get(p, {}).get(
                "momentum_buffer") is None:
            raise ExportError("SGD with dampening needs its momentum buffers: torch fills "
                              "them with the first gradient undamped; step the optimizer "
                              "once before exporting, or use dampening=0")
        if kind in ("AdamW", "Adam") and g.get("amsgrad", False):
            raise ExportError("%s(amsgrad=True) is not supported" % kind)
        if kind == "Adam" and g["weight_decay"]:
            raise ExportError("Adam with weight_decay (L2 in the gradient) is not supported; "
                              "use AdamW")
        groups[n] = g
    return groups


# -- tracing -----------------------------------------------------------------------

@contextlib.contextmanager
def _module_paths(model):
    """Tags each fx node that a module's forward creates with the module's
    path. AOT autograd keeps the tag (an fx stack trace) through its
    functionalizing retrace; backward nodes carry none."""
    stack, handles = [], []

    def push(label):
        def hook(module, args):
            stack.append(label)
        return hook

    def pop(module, args, out):
        if stack:
            stack.pop()

    for path, mod in model.named_modules():
        label = "%s (%s)" % (path or "the model's own forward", type(mod).__name__)
        handles.append(mod.register_forward_pre_hook(push(label)))
        handles.append(mod.register_forward_hook(pop))
    original = torch.fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        if stack and not node.stack_trace:
            node.stack_trace = _TAG + stack[-1]
        return node

    torch.fx.Graph.create_node = create_node
    try:
        yield
    finally:
        torch.fx.Graph.create_node = original
        for h in handles:
            h.remove()


def _functional_call(model, mapping, args):
    func = getattr(torch, "func", None)
    if func is not None and hasattr(func, "functional_call"):
        return func.functional_call(model, mapping, args)
    from torch.nn.utils import stateless
    return stateless.functional_call(model, mapping, args)


def _trace(model, params, aliases, inputs, targets, loss_fn):
    """The joint forward+backward fx graph of loss_fn(model(*inputs), *targets)."""
    from functorch.compile import aot_function, default_partition, make_boxed_func

    names = [n for n, _ in params]
    buffers = list(model.named_buffers())
    P, B, I = len(params), len(buffers), len(inputs)

    def step(*flat):
        mapping = dict(zip(names, flat[:P]))
        mapping.update({a: mapping[c] for a, c in aliases.items()})
        mapping.update(zip([n for n, _ in buffers], flat[P:P + B]))
        out = _functional_call(model, mapping, tuple(flat[P + B:P + B + I]))
        return loss_fn(out, *flat[P + B + I:])

    captured = {}

    def partition(joint, joint_inputs, **kwargs):
        captured["graph"] = joint
        return default_partition(joint, joint_inputs, **kwargs)

    def compiler(gm, example):
        return make_boxed_func(gm.forward)

    flat = [p.detach().clone().requires_grad_(True) for _, p in params] + \
        [t.detach().clone() for _, t in buffers] + inputs + targets
    traced = aot_function(step, fw_compiler=compiler, bw_compiler=compiler,
                          partition_fn=partition)
    with _module_paths(model):
        try:
            out = traced(*flat)
        except ExportError:
            raise
        except Exception as e:  # the model or the loss failed under tracing
            raise ExportError("tracing the step failed: %s: %s" % (type(e).__name__, e)) from e
    if not isinstance(out, torch.Tensor) or out.dim() != 0 or not out.dtype.is_floating_point:
        raise ExportError("loss_fn must return a scalar float tensor, not %s"
                          % (tuple(out.shape) if isinstance(out, torch.Tensor) else type(out)))
    if "graph" not in captured:
        raise ExportError("AOT autograd produced no joint graph (do the parameters "
                          "reach the loss?)")
    return captured["graph"], len(flat)


def _describe(node):
    """Where a node came from: its module, or the module whose forward values
    a backward node reads."""
    def tag(n):
        s = getattr(n, "stack_trace", None) or ""
        at = s.rfind(_TAG)
        if at >= 0:
            return s[at + len(_TAG):].splitlines()[0]
        stack = n.meta.get("nn_module_stack") if hasattr(n, "meta") else None
        if stack:  # torch 2.x tracers
            path, kind = list(stack.values())[-1]
            return "%s (%s)" % (path, getattr(kind, "__name__", kind))
        return None

    found = tag(node)
    if found:
        return "from " + found
    seen, frontier = set(), [node]
    while frontier:
        nxt = []
        for n in frontier:
            for a in n.all_input_nodes:
                if a in seen:
                    continue
                seen.add(a)
                t = tag(a)
                if t:
                    return "in the backward of " + t
                nxt.append(a)
        frontier = nxt
    return "not from any module's forward"


# -- lowering ------------------------------------------------------------------------

def _lower(traced, b, model, params, aliases, groups, optimizer, inputs, input_names,
           targets, target_names):
    graph, nflat = traced
    buffers = list(model.named_buffers())
    P, B = len(params), len(buffers)
    kind = type(optimizer).__name__
    low = Lowering(b, _describe)
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
        st = optimizer.state.get(p, {})
        if kind == "SGD":
            buf = st.get("momentum_buffer")
            opt_args[n] = (b.arg("optimizer_state", n + ".momentum", v.shape, v.dtype),)
            state[n + ".momentum"] = _array(buf, p)
        else:
            opt_args[n] = tuple(b.arg("optimizer_state", n + suffix, v.shape, v.dtype)
                                for suffix in (".exp_avg", ".exp_avg_sq"))
            state[n + ".exp_avg"] = _array(st.get("exp_avg"), p)
            state[n + ".exp_avg_sq"] = _array(st.get("exp_avg_sq"), p)
            steps.add(float(st.get("step", 0)))
    if kind != "SGD":
        if len(steps) > 1:
            raise ExportError("the optimizer's parameters are at different steps (%s); "
                              "braid keeps one step count" % sorted(steps))
        step_arg = b.arg("optimizer_state", "step", ())
        state["step"] = np.array(steps.pop() if steps else 0.0, dtype=np.float32)
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
    batch_vals = [b.arg("batch", n, tuple(t.shape), DTYPES[t.dtype])
                  for n, t in zip(input_names + target_names, inputs + targets)]
    for i, ph in enumerate(primals):
        if i < P:
            env[ph] = pvals[i]
        elif i < P + B:
            env[ph] = buffers[i - P][1].detach().clone()
        else:
            env[ph] = batch_vals[i - P - B]
    env[tangents[0]] = torch.ones((), dtype=torch.float32)
    low.check_supported(graph.graph, [ph for ph in primals if isinstance(env[ph], torch.Tensor)]
                        + tangents)

    output = next(n for n in graph.graph.nodes if n.op == "output")
    outs = list(output.args[0])
    loss_node, grad_nodes = outs[0], outs[1:1 + P]
    grad_of = {}
    for i, g in enumerate(grad_nodes):
        if g is None:
            raise ExportError("parameter %s does not reach the loss (no gradient)"
                              % params[i][0])
        grad_of.setdefault(g, []).append(i)

    reduced = {}
    aten = collections.Counter()
    for node in graph.graph.nodes:
        if node.op != "call_function":
            continue
        aten[op_name(node.target)] += 1
        env[node] = low.lower(node)
        for i in grad_of.get(node, ()):
            low.node = node
            g = low.materialize(env[node])
            reduced[i] = b.grad_all_reduce(g, params[i][0])
    for g, idx in grad_of.items():  # a gradient that is an argument or a constant
        for i in idx:
            if i not in reduced:
                low.node = g
                reduced[i] = b.grad_all_reduce(low.materialize(low.ref(g)), params[i][0])

    low.node = loss_node
    loss = low.materialize(low.ref(loss_node))
    if loss.shape != ():
        raise ExportError("the loss has shape %s; loss_fn must return a scalar" % list(loss.shape))

    # The optimizer, parameter by parameter.
    if step_arg is not None:
        new_step = b.add(step_arg, b.constant(1.0, hint="one"), hint="new_step")
    for i, ((n, p), v) in enumerate(zip(params, pvals)):
        g = groups[n]
        if kind == "SGD":
            new = b.sgd(n, reduced[i], opt_args[n][0], float(g["lr"]), float(g["momentum"]),
                        float(g["weight_decay"]), float(g["dampening"]), bool(g["nesterov"]))
            b.result(new[0], "parameter", n)
            b.result(new[1], "optimizer_state", n + ".momentum")
        else:
            beta1, beta2 = (float(x) for x in g["betas"])
            new = b.adamw(n, reduced[i], opt_args[n][0], opt_args[n][1], new_step,
                          float(g["lr"]), (beta1, beta2), float(g["eps"]),
                          float(g["weight_decay"]))
            b.result(new[0], "parameter", n)
            b.result(new[1], "optimizer_state", n + ".exp_avg")
            b.result(new[2], "optimizer_state", n + ".exp_avg_sq")
    if step_arg is not None:
        b.result(new_step, "optimizer_state", "step")
    b.result(loss, "loss", "loss")

    header = ("// Exported by braid.export from %s: one data-parallel training step on %d "
              "ranks with %s.\n// %d aten ops in the joint forward+backward graph.\n"
              % (type(model).__name__, b.world_size, kind, sum(aten.values())))
    summary = {"parameters": [n for n, _ in params], "tied": dict(aliases),
               "parameter_elements": sum(p.numel() for _, p in params),
               "aten_ops": dict(aten), "braid_ops": len(b.body)}
    return b.text(header), state, summary


def _array(t, p):
    if t is None:
        return np.zeros(tuple(p.shape), dtype=p.detach().cpu().numpy().dtype)
    return t.detach().cpu().numpy().copy()


# -- specs and PyTorch's own training ------------------------------------------------

def load_spec(spec, world_size=None, **kwargs):
    """The dict that SPEC's function returns: SPEC is FILE.py[:FUNC] or
    package.module[:FUNC] (FUNC defaults to `build`), called with `kwargs`,
    and with `world_size` when it is given and FUNC takes it (a spec sizes
    its global batch by it). Raises ExportError on a bad spec."""
    fn = _load_spec(spec)
    try:
        accepts = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        accepts = {}
    if world_size is not None and "world_size" in accepts and "world_size" not in kwargs:
        kwargs["world_size"] = world_size
    try:
        result = fn(**kwargs)
    except TypeError as e:
        raise ExportError("calling %s: %s" % (spec, e)) from e
    if not isinstance(result, dict):
        raise ExportError("%s must return a dict, not %s" % (spec, type(result).__name__))
    missing = [k for k in ("model", "example_inputs", "example_targets", "loss_fn",
                           "optimizer") if k not in result]
    if missing:
        raise ExportError("%s's dict lacks %s" % (spec, ", ".join(missing)))
    return result


def torch_reference(spec, inputs, targets, steps, double=False):
    """PyTorch's own training, to compare braid with: a copy of spec's model
    and an optimizer of the same class, defaults and state train on
    (inputs, targets) for `steps` steps (in float64 with `double`). Returns
    the loss of every step and the final parameters and optimizer state,
    named as export() names them. The spec's model and optimizer are not
    changed."""
    model = copy.deepcopy(spec["model"])
    if double:
        model = model.double()
        inputs = tuple(x.double() if x.is_floating_point() else x for x in inputs)
    opt = spec["optimizer"]
    ref_opt = type(opt)(model.parameters(), **opt.defaults)
    # The same state, if the optimizer has stepped (parameters in one order).
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    losses = []
    for _ in range(steps):
        ref_opt.zero_grad()
        loss = spec["loss_fn"](model(*inputs), *targets)
        loss.backward()
        ref_opt.step()
        losses.append(float(loss))
    state = {}
    names = {id(p): n for n, p in model.named_parameters()}
    for p in model.parameters():
        n = names[id(p)]
        state[n] = p.detach().numpy()
        st = ref_opt.state[p]
        if st.get("momentum_buffer") is not None:
            state[n + ".momentum"] = st["momentum_buffer"].numpy()
        if "exp_avg" in st:
            state[n + ".exp_avg"] = st["exp_avg"].numpy()
            state[n + ".exp_avg_sq"] = st["exp_avg_sq"].numpy()
            state["step"] = np.array(float(st["step"]))
    return losses, state


# -- command line ----------------------------------------------------------------------

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


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m braid.export",
        description="Export a PyTorch model's data-parallel training step as braid IR. "
                    "SPEC names a function (FILE.py:FUNC or package.module:FUNC, FUNC "
                    "defaulting to build; called with world_size=N when it takes it and "
                    "--world-size is given) that returns a dict with model, example_inputs, "
                    "example_targets, loss_fn, optimizer and optionally world_size, "
                    "input_names, target_names, global_batch.")
    parser.add_argument("spec", metavar="SPEC", nargs="?")
    parser.add_argument("--list-ops", action="store_true",
                        help="print the aten ops that have a braid lowering and exit")
    parser.add_argument("-o", "--output", metavar="PREFIX",
                        help="writes PREFIX.mlir, PREFIX.npz, PREFIX.batch.npz")
    parser.add_argument("--world-size", type=int, help="data-parallel ranks (overrides the spec's)")
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
        kwargs = {}
        for a in args.arg:
            key, eq, value = a.partition("=")
            if not eq or not key:
                raise ExportError("--arg takes KEY=VALUE, not %r" % a)
            kwargs[key] = _parse_value(value)
        spec = load_spec(args.spec, world_size=args.world_size, **kwargs)
        world = args.world_size if args.world_size is not None else spec.get("world_size")
        if world is None:
            raise ExportError("no world size: pass --world-size or return world_size")
        result = export(spec["model"], spec["example_inputs"], spec["example_targets"],
                        spec["loss_fn"], spec["optimizer"], world, name=args.name,
                        input_names=spec.get("input_names"),
                        target_names=spec.get("target_names"),
                        global_batch=spec.get("global_batch"))
        paths = result.write(args.output)
    except ExportError as e:
        print("braid.export: error: %s" % e, file=sys.stderr)
        print("braid.export: nothing written", file=sys.stderr)
        return 1
    s = result.summary
    print("exported %s: @%s, %d ranks, %s" % (s["model"], s["function"], s["world_size"],
                                               s["optimizer"]))
    print("  parameters      %d tensors, %d elements" % (len(s["parameters"]),
                                                          s["parameter_elements"]))
    for alias, name in sorted(s["tied"].items()):
        print("  tied            %s is %s (gradients summed)" % (alias, name))
    print("  joint graph     %d aten ops of %d kinds -> %d braid ops"
          % (sum(s["aten_ops"].values()), len(s["aten_ops"]), s["braid_ops"]))
    print("  batch           %s" % ", ".join("%s %s %s" % (n, list(a.shape), a.dtype)
                                            for n, a in result.batch.items()))
    for key in ("mlir", "params", "batch"):
        print("  wrote           %s" % paths[key])
    return 0


class _CallableModule(types.ModuleType):
    """`braid.export(...)` calls export(); `python3 -m braid.export` runs main()."""

    def __call__(self, *args, **kwargs):
        return export(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
