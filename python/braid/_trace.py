"""Capturing a PyTorch training step for braid.export: the model's
parameters (tied ones once), the optimizer's groups, the module each fx
node comes from, and the joint forward and backward graph that AOT
autograd traces."""

import contextlib
import inspect

import torch

from braid import optimizers
from braid.aten import DTYPES, ExportError, composites_kept, decompositions, legacy_capture

# Marks the fx nodes that a module's forward creates (see _module_paths).
_TAG = "braid-module: "
# What is running while the step is traced, innermost last: the modules
# whose forward is running, and loss_fn (see _module_paths, _labelled).
_LABELS = []


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
    """name -> the param_group of the optimizer that holds the parameter,
    each checked by the optimizer's registry entry (braid.optimizers)."""
    entry = optimizers.of(optimizer)
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
        entry.check(optimizer, g, p, n)
        groups[n] = g
    return groups


# -- tracing -----------------------------------------------------------------------

@contextlib.contextmanager
def _module_paths(model):
    """Tags each fx node that a module's forward creates with the module's
    path (and each that loss_fn creates with its name, see _labelled). AOT
    autograd keeps the tag (an fx stack trace) through its functionalizing
    retrace; backward nodes carry none."""
    handles = []

    def push(label):
        def hook(module, args):
            _LABELS.append(label)
        return hook

    def pop(module, args, out):
        if _LABELS:
            _LABELS.pop()

    for path, mod in model.named_modules():
        label = "%s (%s)" % (path or "the model's own forward", type(mod).__name__)
        handles.append(mod.register_forward_pre_hook(push(label)))
        handles.append(mod.register_forward_hook(pop))
    original = torch.fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        if _LABELS and not node.stack_trace:
            node.stack_trace = _TAG + _LABELS[-1]
        return node

    torch.fx.Graph.create_node = create_node
    try:
        yield
    finally:
        torch.fx.Graph.create_node = original
        del _LABELS[:]
        for h in handles:
            h.remove()


@contextlib.contextmanager
def _labelled(label):
    """Tags the fx nodes created meanwhile with `label`, as a module's forward
    tags its own (inside _module_paths)."""
    _LABELS.append(label)
    try:
        yield
    finally:
        _LABELS.pop()


def _loss_label(loss_fn):
    """How errors name the loss function: `loss_fn (MSELoss)`,
    `loss_fn (cross_entropy)`."""
    kind = type(loss_fn).__name__ if isinstance(loss_fn, torch.nn.Module) else \
        getattr(loss_fn, "__name__", type(loss_fn).__name__)
    return "loss_fn (%s)" % kind


@contextlib.contextmanager
def _attributes_as_buffers(model):
    """Tensors that the model's modules hold as plain attributes (a
    positional table kept as `self.pos = torch.randn(...)`), registered as
    non-persistent buffers while the step is exported: they are constants
    of the step like buffers, and torch 2.x's fake-tensor tracing refuses
    a real tensor met inside the traced code."""
    added = []
    for mod in model.modules():
        for name, value in list(vars(mod).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                    and not name.startswith("_"):
                del mod.__dict__[name]
                mod.register_buffer(name, value, persistent=False)
                added.append((mod, name, value))
    try:
        yield
    finally:
        for mod, name, value in added:
            del mod._buffers[name]
            mod.__dict__[name] = value


def _functional_call(model, mapping, args):
    func = getattr(torch, "func", None)
    if func is not None and hasattr(func, "functional_call"):
        return func.functional_call(model, mapping, args)
    from torch.nn.utils import stateless
    return stateless.functional_call(model, mapping, args)


def _loss_function(model, params, aliases, num_inputs, loss_fn, autocast=None):
    """loss_fn(model(*inputs), *targets) as a function of the flat list
    (parameters, buffers, inputs, targets), the forward and the loss under
    torch.autocast("cpu", autocast) when it is given: what AOT autograd
    traces."""
    names = [n for n, _ in params]
    buffers = [n for n, _ in model.named_buffers()]
    P, B, I = len(params), len(buffers), num_inputs

    def loss(*flat):
        mapping = dict(zip(names, flat[:P]))
        mapping.update({a: mapping[c] for a, c in aliases.items()})
        mapping.update(zip(buffers, flat[P:P + B]))
        with (torch.autocast("cpu", dtype=autocast) if autocast is not None
              else contextlib.nullcontext()):
            out = _functional_call(model, mapping, tuple(flat[P + B:P + B + I]))
            with _labelled(_loss_label(loss_fn)):
                return loss_fn(out, *flat[P + B + I:])
    return loss


def _capture(function, flat, joint, what):
    """The fx graph AOT autograd traces of `function` on the flat list of
    tensors `flat`: the joint forward and backward graph when `joint` (its
    inputs the primals, then one tangent for the loss; its outputs the
    loss, then a gradient or None per primal), else the forward alone (its
    inputs the primals, its output the loss). `what` names it in errors.

    Torch 2.x: `aot_export_joint_simple`, with braid.aten.decompositions()
    (torch's core-ATen table less the ops braid lowers) and the ops braid
    lowers kept whole (braid.aten.composites_kept). The legacy capture
    (torch 1.13): `aot_function`, whose compilers receive the forward and
    whose partitioner receives the joint graph, with no decomposition
    table."""
    def tupled(*args):
        out = function(*args)
        # Checked on the traced value, whose shape and dtype are known.
        if not isinstance(out, torch.Tensor) or out.dim() != 0 or \
                not out.dtype.is_floating_point:
            raise ExportError("loss_fn must return a scalar float tensor%s, not %s"
                              % (" in eval mode too" if not joint else "",
                                 "a tensor of shape %s" % (tuple(out.shape),)
                                 if isinstance(out, torch.Tensor) else type(out).__name__))
        return (out,)

    if not legacy_capture():
        from torch._functorch.aot_autograd import aot_export_joint_simple
        try:
            with composites_kept():
                graph = aot_export_joint_simple(tupled, tuple(flat), trace_joint=joint,
                                                decompositions=decompositions())
        except ExportError:
            raise
        except Exception as e:  # the model or the loss failed under tracing
            reason = str(e).splitlines()[0] if str(e) else ""
            if "input mutations" in reason:
                reason = ("the step writes to one of its inputs in place (a buffer "
                          "such as BatchNorm's running statistics): braid's steps "
                          "have no state besides parameters and optimizer state")
            raise ExportError("tracing %s failed: %s: %s" % (what, type(e).__name__, reason)) \
                from e
        return graph

    from functorch.compile import aot_function, default_partition, make_boxed_func
    captured = {}

    def partition(graph, joint_inputs, **kwargs):
        captured["graph"] = graph
        return default_partition(graph, joint_inputs, **kwargs)

    def compiler(gm, example):
        if not joint:
            captured["graph"] = gm
        return make_boxed_func(gm.forward)

    traced = aot_function(tupled, fw_compiler=compiler, bw_compiler=compiler,
                          partition_fn=partition) if joint else \
        aot_function(tupled, fw_compiler=compiler)
    try:
        traced(*flat)
    except ExportError:
        raise
    except Exception as e:  # the model or the loss failed under tracing
        raise ExportError("tracing %s failed: %s: %s" % (what, type(e).__name__, e)) from e
    if "graph" not in captured:
        raise ExportError("AOT autograd produced no joint graph (do the parameters "
                          "reach the loss?)")
    return captured["graph"]


def _trace(model, params, aliases, inputs, targets, loss_fn, autocast=None):
    """The joint forward+backward fx graph of loss_fn(model(*inputs), *targets),
    the forward and the loss under torch.autocast("cpu", autocast) when it is
    given (autograd's backward then holds the casts' backward), and the
    number of its primals."""
    buffers = list(model.named_buffers())
    step = _loss_function(model, params, aliases, len(inputs), loss_fn, autocast)
    flat = [p.detach().clone().requires_grad_(True) for _, p in params] + \
        [t.detach().clone() for _, t in buffers] + inputs + targets
    with _module_paths(model):
        graph = _capture(step, flat, True, "the step")
    return graph, len(flat)


def _trace_forward(model, params, aliases, inputs, targets, loss_fn, autocast=None):
    """The forward-only fx graph of loss_fn(model(*inputs), *targets) with the
    model as it is (braid.export puts it in eval mode first): the loss that
    `with torch.no_grad()` computes (under torch.autocast("cpu", autocast)
    when it is given), for the evaluation program."""
    buffers = list(model.named_buffers())
    forward = _loss_function(model, params, aliases, len(inputs), loss_fn, autocast)
    # No input needs a gradient, so AOT autograd traces the forward alone.
    flat = [p.detach().clone() for _, p in params] + \
        [t.detach().clone() for _, t in buffers] + inputs + targets
    with _module_paths(model), torch.no_grad():
        graph = _capture(forward, flat, False, "the evaluation forward")
    return graph, len(flat)


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
    # A backward node's own inputs first; then the forward nodes that read
    # one of them (embedding_dense_backward reads the token ids the
    # embedding read, and a gradient the next module's backward made);
    # then further up.
    for a in node.all_input_nodes:
        t = tag(a)
        if t:
            return "in the backward of " + t
    for a in node.all_input_nodes:
        for u in a.users:
            t = tag(u) if u is not node else None
            if t:
                return "in the backward of " + t
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
