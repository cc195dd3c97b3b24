"""A small builder that writes graph-level braid IR as text.

Nothing about an op is written here again: each is written from the
table generated from the ODS (braid.op_table's SYNTAX: its arguments by
ODS name and its assembly format, spaced as MLIR's printer spaces it), and
its result types are the op's own: its InferTypeOpInterface (the rule its
verifier checks), asked through braid's build (braid._native), but for the
ops that take their result type as an input (reshape, cast, fill, ...).
Operands an op rejects are a ValueError in its verifier's words, here, not
a parse error later; an op the dialect does not have, an argument it does
not have or a result count it does not give is an error too. Only the
standard library is used, so any python3 runs it.
"""

import math

from braid import _native
from braid.op_table import OPS, SYNTAX, InstrKind, PipelineScheduleKind

# The schedules braid-pipeline knows, from the ODS (PipelineScheduleKind in
# BraidAttributes.td), and its default.
PIPELINE_SCHEDULES = tuple(k.value for k in PipelineScheduleKind)
DEFAULT_PIPELINE_SCHEDULE = PipelineScheduleKind.OneForwardOneBackward.value


def pipeline_schedule(name):
    """The PipelineScheduleKind a name (`"1f1b"`) spells; ValueError naming
    the known ones for another."""
    try:
        return PipelineScheduleKind(name)
    except ValueError:
        raise ValueError("unknown pipeline schedule %r (known: %s)"
                         % (name, ", ".join(PIPELINE_SCHEDULES))) from None


def is_interleaved(name):
    """Whether `name` names the interleaved schedule, the one with virtual
    stages (False for None, the default, and for a name that is no
    schedule, which pipeline_schedule refuses)."""
    return name in PIPELINE_SCHEDULES and \
        PipelineScheduleKind(name) is PipelineScheduleKind.Interleaved


# The most micro-batches a step may unroll (BraidDialect::kMaxMicroBatches in
# include/braid/Dialect/Braid/Braid.td; integration_test/python/
# models-generate.test checks that braid-compile refuses one more).
MAX_MICRO_BATCHES = 1 << 16


def check_virtual_stages(schedule, virtual_stages, stages, micro_batches):
    """braid-pipeline's rules for the interleaved schedule, checked where a
    step is written (ValueError naming the problem): `virtual_stages` at
    least 2 with it and 1 without, and the micro-batches a multiple of the
    pipeline ranks (its forwards go through the chunks in groups of p)."""
    if isinstance(virtual_stages, bool) or not isinstance(virtual_stages, int):
        raise ValueError("virtual stages must be an integer, not %r" % (virtual_stages,))
    if not is_interleaved(schedule):
        if virtual_stages != 1:
            raise ValueError("%d virtual stages need the interleaved schedule, not %s"
                             % (virtual_stages, schedule))
        return
    if virtual_stages < 2:
        raise ValueError("the interleaved schedule needs at least 2 virtual stages per rank, "
                         "not %d (with 1 it is 1f1b)" % virtual_stages)
    if micro_batches % stages:
        raise ValueError("the interleaved schedule on %d pipeline ranks needs a multiple of %d "
                         "micro-batches, not %d" % (stages, stages, micro_batches))


class Value:
    """An SSA value of tensor type."""

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def type(self):
        if not self.shape:
            return "tensor<%s>" % self.dtype
        return "tensor<%sx%s>" % ("x".join(str(d) for d in self.shape), self.dtype)

    def __str__(self):
        return self.name


def _float(x):
    """MLIR's spelling of an f64 attribute value (infinities and NaN as the
    bit pattern, which MLIR's parser reads for float attributes)."""
    if math.isinf(x):
        return "0x7FF0000000000000" if x > 0 else "0xFFF0000000000000"
    if math.isnan(x):
        return "0x7FF8000000000000"
    return "%e" % x


# The attribute kinds (the op table's) that an attribute dictionary in
# MLIR's generic syntax spells here, and how.
_GENERIC = {
    "Int": lambda v: "%d : i64" % v,
    "Float": lambda v: "%s : f64" % _float(float(v)),
    "Ints": lambda v: "array<i64%s>" % "".join(
        (", %d" if i else ": %d") % x for i, x in enumerate(v)),
    "Strings": lambda v: "[%s]" % ", ".join('"%s"' % x for x in v),
}

# The same where an op's assembly format places the attribute.
_CUSTOM = {
    "Int": lambda v: "%d" % v,
    "Float": lambda v: _float(float(v)),
    "Ints": lambda v: "[%s]" % ", ".join("%d" % x for x in v),
    "Strings": lambda v: "[%s]" % ", ".join('"%s"' % x for x in v),
    "Symbol": lambda v: "@%s" % v,
    "Axes": lambda v: "[%s]" % ", ".join("%d" % x for x in v),
    "Enum": lambda v: v.value if hasattr(v, "value") else str(v),
    "Data": str,
}


def _present(value):
    """Whether an argument is given: a flag set, a value, a non-empty list."""
    return value is not None and value is not False and value != [] and value != ()


def _attribute_dict(items, kinds):
    """`items` ((name, value) of present attributes) as an attribute
    dictionary in MLIR's generic syntax, by name as MLIR prints it: a flag
    is a unit attribute."""
    out = []
    for name, value in sorted(items):
        kind = kinds[name]
        if kind == "Flag":
            out.append(name)
        elif kind in _GENERIC:
            out.append("%s = %s" % (name, _GENERIC[kind](value)))
        else:
            raise TypeError("attribute %s (%s) has no generic form here" % (name, kind))
    return "{%s}" % ", ".join(out)


def _attributes(op, attrs):
    """The attributes of `attrs` (name -> value) that braid.`op` has and
    MLIR's generic syntax spells here (flags, integers, floats, lists), as
    the attribute dictionary the op's type inference reads."""
    kinds = dict(SYNTAX[op].arguments)
    return _attribute_dict([(n, v) for n, v in attrs.items()
                            if _present(v) and (kinds.get(n) == "Flag" or kinds.get(n) in _GENERIC)],
                           kinds)


def _op_text(op, args, result_types):
    """braid.`op` in its assembly format (SYNTAX, generated from the ODS):
    `args` maps its arguments (ODS names) to values (an operand a Value, a
    variadic one a list; an attribute a Python value; absent: None or
    False), `result_types` its results' type text. Spaced as MLIR's
    printer spaces a declarative format."""
    syntax = SYNTAX[op]
    kinds = dict(syntax.arguments)
    unknown = sorted(set(args) - set(kinds))
    if unknown:
        raise ValueError("braid.%s has no argument %s" % (op, ", ".join(unknown)))
    results = dict(zip((name for name, _ in syntax.results),
                       result_types if len(syntax.results) != 1 or not syntax.results[0][1]
                       else [result_types]))
    printed = set()

    def names(elements):
        for e in elements:
            if e[0] == "var":
                yield e[1]
            elif e[0] == "optional":
                yield from names(e[2])
            elif e[0] == "alternative":
                yield from names(e[2])
                yield from names(e[3])

    printed.update(names(syntax.format))
    out = ["braid." + op]
    state = {"space": True, "punct": False}

    def put(text, literal=False):
        if literal:
            single = len(text) == 1 or text == "->"
            if not single:
                before = True
            elif state["punct"]:
                before = text[0] not in ">)}],"
            else:
                before = text[0] not in "<>(){}[],"
            if state["space"] and before:
                out.append(" ")
            state["space"] = len(text) != 1 or text[0] not in "<({["
            state["punct"] = text[0] != "_" and not text[0].isalpha()
        else:
            if state["space"]:
                out.append(" ")
            state["space"], state["punct"] = True, False
        out.append(text)

    def types_of(name):
        if name in results:
            value = results[name]
            return ", ".join(value) if isinstance(value, (list, tuple)) else value
        value = args[name]
        return ", ".join(v.type for v in value) if isinstance(value, (list, tuple)) else value.type

    def emit(elements):
        for e in elements:
            if e[0] == "lit":
                put(e[1], literal=True)
            elif e[0] == "var":
                value, kind = args.get(e[1]), kinds[e[1]]
                if kind.endswith("Operand") or kind == "Operands":
                    put(", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value))
                else:
                    put(_CUSTOM[kind](value))
            elif e[0] == "type":
                put(types_of(e[1]))
            elif e[0] == "attr-dict":
                rest = [(n, v) for n, v in args.items()
                        if n not in printed and not kinds[n].endswith("Operand")
                        and kinds[n] != "Operands" and _present(v)]
                if rest:
                    out.append(" " + _attribute_dict(rest, kinds))
            elif e[0] == "optional":
                if _present(args.get(e[1])):
                    emit(e[2])
            elif e[0] == "alternative":
                emit(e[2] if _present(args.get(e[1])) else e[3])

    emit(syntax.format)
    return "".join(out)


def _parse_type(text):
    """(shape, element type) of a ranked tensor type's text."""
    if not (text.startswith("tensor<") and text.endswith(">")):
        raise ValueError("not a ranked tensor type: %r" % text)
    parts = text[len("tensor<"):-1].split("x")
    return tuple(int(d) for d in parts[:-1]), parts[-1]


def data_parallel_degree(world_size, tp=1, pp=1):
    """The data-parallel degree of `world_size` ranks (every rank, as torch,
    Megatron and mpirun count them) split into `pp` pipeline stages of `tp`
    tensor-parallel ranks. Raises ValueError when they do not divide it."""
    for name, value in (("world size", world_size), ("tensor-parallel size", tp),
                        ("pipeline-parallel size", pp)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError("the %s must be a positive integer, not %r" % (name, value))
    if world_size % (tp * pp):
        raise ValueError("the world size %d is not a multiple of the tensor-parallel size %d "
                         "x the pipeline-parallel size %d (the world size counts every rank; "
                         "the data-parallel size is what is left)" % (world_size, tp, pp))
    return world_size // (tp * pp)


class StepBuilder:
    """Builds one `func.func` training step on a data-parallel grid."""

    def __init__(self, name, world_size, grid="world", tp=1, pp=1):
        """`world_size` ranks in all (every rank of the grid); the
        data-parallel size is what `tp` and `pp` leave of it. With `tp` > 1
        the grid is `data_parallel x tp`, the tensor-parallel axis innermost,
        and the parameters given a sharding by `shard` are split over it.
        With `pp` > 1 a pipeline axis of `pp` stages comes first, outermost
        (stages apart, as Megatron-LM places them), and `pipeline` says how
        braid-compile splits the step (docs/Pipeline.md). Raises ValueError
        when `tp` x `pp` does not divide `world_size`."""
        self.name = name
        self.grid = grid
        self.world_size = world_size
        self.data_parallel = data_parallel_degree(world_size, tp, pp)
        self.tp = tp
        self.pp = pp
        self.pipeline_attrs = None
        # ZeRO: the stage braid-compile shards the optimizer state at
        # (0: none; braid-shard-data-parallel, docs/ShardedDataParallel.md).
        self.zero_stage = 0
        # The data-parallel axis of the grid.
        self.dp_axis = 1 if pp > 1 else 0
        self.shardings = {}  # parameter name -> "split D" or "split D blocks [...]"
        self.args = []       # (Value, role kind, role name)
        self.results = []    # (Value, role kind or None, role name)
        self.body = []
        self._names = {}
        self._params = {}

    # -- naming -----------------------------------------------------------
    def _fresh(self, hint):
        hint = "".join(c if c.isalnum() else "_" for c in hint)
        # An SSA name is digits only or starts with a letter or '_' (the
        # parameters of an nn.Sequential are named "0.weight").
        if not hint or hint[0].isdigit():
            hint = "_" + hint
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return "%%%s%s" % (hint, "" if n == 0 else "_%d" % n)

    def infer(self, op, operands, **attrs):
        """[(shape, dtype)] of each result of braid.`op` on `operands` with
        `attrs` (name -> value), as the op infers them; ValueError in the
        op's words where it rejects them."""
        types = _native.infer_result_types("braid." + op, [v.type for v in operands],
                                           _attributes(op, attrs))
        return [_parse_type(t) for t in types]

    def op(self, op, hints, results=None, **args):
        """Writes braid.`op` with `args` (its ODS argument names: operands
        as Values, a variadic operand as a list, attributes as Python
        values; None or False leaves one out) in its assembly format, and
        returns its result (a list for several, or for `hints` a list).
        `results`, [(shape, dtype)], gives the result types of an op whose
        result type is an input (reshape, cast, fill, ...); else the op
        infers them (infer)."""
        if op not in SYNTAX:
            raise ValueError("braid.%s is not an op of the braid dialect" % op)
        kinds = dict(SYNTAX[op].arguments)
        if results is None:
            operands = []
            for name, kind in SYNTAX[op].arguments:
                value = args.get(name)
                if kind in ("Operand", "OptionalOperand") and value is not None:
                    operands.append(value)
                elif kind == "Operands":
                    operands.extend(value)
            results = self.infer(op, operands, **{n: v for n, v in args.items()
                                                  if not kinds.get(n, "").endswith("Operand")
                                                  and kinds.get(n) != "Operands"})
        many = isinstance(hints, (list, tuple))
        names = list(hints) if many else [hints]
        # A kernel's result count is the table's; given results must match.
        count = OPS[op].results if OPS[op].kind is InstrKind.Kernel and \
            OPS[op].results >= 0 else len(results)
        for n in (len(results), len(names)):
            if n != count:
                raise ValueError("braid.%s yields %d values, not %d" % (op, count, n))
        values = [Value(self._fresh(h), shape, dtype) for h, (shape, dtype) in zip(names, results)]
        text = _op_text(op, args, [v.type for v in values])
        if values:
            self.body.append("%s = %s" % (", ".join(v.name for v in values), text))
        else:
            self.body.append(text)
        return values if many else values[0]

    # -- arguments and results ---------------------------------------------
    def arg(self, kind, name, shape, dtype="f32"):
        v = Value(self._fresh(name), shape, dtype)
        self.args.append((v, kind, name))
        if kind == "parameter":
            self._params[name] = v
        return v

    def param(self, name, shape, dtype="f32"):
        return self.arg("parameter", name, shape, dtype)

    def shard(self, name, sharding):
        """Marks parameter `name` (and its optimizer state) `sharding` over
        the tensor-parallel axis, e.g. "split 0"; ignored when tp is 1."""
        assert name in self._params, name
        if self.tp > 1:
            self.shardings[name] = sharding

    def _sharding_of(self, kind, name):
        if kind == "parameter":
            return self.shardings.get(name)
        if kind == "optimizer_state" and "." in name:
            return self.shardings.get(name.rsplit(".", 1)[0])
        return None

    def result(self, value, kind=None, name=None):
        self.results.append((value, kind, name))

    # -- compute ops ---------------------------------------------------------
    # Each writes its op through `op` (its assembly format from the ODS);
    # the result types are the op's own (inferred) but where the op takes
    # them as an input.
    def matmul(self, a, b, ta=False, tb=False, hint="mm"):
        return self.op("matmul", hint, lhs=a, rhs=b, transpose_a=ta, transpose_b=tb)

    def _binary(self, op, a, b, hint):
        return self.op(op, hint, lhs=a, rhs=b)

    def add(self, a, b, hint="add"):
        return self._binary("add", a, b, hint)

    def sub(self, a, b, hint="sub"):
        return self._binary("sub", a, b, hint)

    def mul(self, a, b, hint="mul"):
        return self._binary("mul", a, b, hint)

    def div(self, a, b, hint="div"):
        return self._binary("div", a, b, hint)

    def scale(self, x, factor, hint="scaled"):
        return self.op("scale", hint, input=x, factor=factor)

    def bias_add(self, x, b, hint="biased"):
        return self.op("bias_add", hint, input=x, bias=b)

    def reduce_sum(self, x, dims, hint="sum", keep_dims=False, op="reduce_sum"):
        return self.op(op, hint, input=x, dims=list(dims), keep_dims=keep_dims)

    def reduce_mean(self, x, dims, hint="mean", keep_dims=False):
        return self.reduce_sum(x, dims, hint, keep_dims, op="reduce_mean")

    def cast(self, x, dtype, hint="cast"):
        """`x` converted to element type `dtype` ("bf16", "f32", ...). A
        value widened from `dtype` narrows back to its source, exactly."""
        if x.dtype == dtype:
            return x
        source = getattr(x, "widened_from", None)
        if source is not None and source.dtype == dtype:
            return source
        v = self.op("cast", hint, results=[(x.shape, dtype)], input=x)
        if x.dtype in ("bf16", "f16") and dtype in ("f32", "f64"):
            v.widened_from = x
        return v

    def relu(self, x, hint="relu"):
        return self.op("relu", hint, input=x)

    def relu_backward(self, dy, y, hint="drelu"):
        return self.op("relu_backward", hint, grad=dy, saved=y)

    def gelu(self, x, hint="gelu", tanh=True):
        return self.op("gelu", hint, input=x, approximate_tanh=tanh)

    def gelu_backward(self, dy, x, hint="dgelu", tanh=True):
        return self.op("gelu_backward", hint, grad=dy, input=x, approximate_tanh=tanh)

    def unary(self, kind, x, hint="fn"):
        return self.op("unary", hint, kind=kind, input=x)

    def unary_backward(self, kind, dy, saved, hint="dfn"):
        return self.op("unary_backward", hint, kind=kind, grad=dy, saved=saved)

    def pow(self, x, exponent, hint="pow"):
        return self.op("pow", hint, input=x, exponent=exponent)

    def dropout_mask(self, step, rank, shape, keep, seed, stream, hint="keep"):
        return self.op("dropout_mask", hint, results=[(shape, "i1")], step=step, rank=rank,
                       keep=keep, seed=seed, stream=stream)

    def axis_index(self, axis, hint="rank"):
        """This rank's index along grid axis `axis` (a tensor<i64>)."""
        return self.op("axis_index", hint, results=[((), "i64")], grid=self.grid,
                       grid_axes=[axis])

    def where(self, cond, a, b, hint="where"):
        return self.op("where", hint, condition=cond, lhs=a, rhs=b)

    def attention(self, q, k, v, causal, scale, hint="attn"):
        """braid.attention: (output, logsumexp)."""
        return self.op("attention", [hint, hint + "_lse"], query=q, key=k, value=v,
                       causal=causal, scale=scale)

    def attention_backward(self, do, q, k, v, o, lse, causal, scale, hint="dattn"):
        """braid.attention_backward: (dq, dk, dv)."""
        return self.op("attention_backward", [hint + "_q", hint + "_k", hint + "_v"],
                       grad_output=do, query=q, key=k, value=v, output=o, logsumexp=lse,
                       causal=causal, scale=scale)

    def softmax(self, x, dim, hint="probs", safe=False):
        return self.op("softmax", hint, input=x, dim=dim, safe=safe)

    def softmax_backward(self, dy, y, dim, hint="dsoftmax"):
        return self.op("softmax_backward", hint, grad=dy, output=y, dim=dim)

    def log_softmax(self, x, dim, hint="logp"):
        return self.op("log_softmax", hint, input=x, dim=dim)

    def log_softmax_backward(self, dy, y, dim, hint="dlogp"):
        return self.op("log_softmax_backward", hint, grad=dy, output=y, dim=dim)

    def causal_mask(self, x, fill, hint="masked"):
        return self.op("causal_mask", hint, input=x, fill=fill)

    def layer_norm(self, x, gamma, beta, eps=1e-5, hint="ln"):
        return self.op("layer_norm", [hint, hint + "_mean", hint + "_rstd"], input=x,
                       gamma=gamma, beta=beta, epsilon=eps)

    def layer_norm_backward(self, dy, x, mean, rstd, gamma, hint="dln"):
        return self.op("layer_norm_backward", [hint + "_dx", hint + "_dgamma", hint + "_dbeta"],
                       grad=dy, input=x, mean=mean, rstd=rstd, gamma=gamma)

    def cross_entropy(self, logits, labels, hint="loss"):
        return self.nll_loss(logits, labels, hint=hint, op="cross_entropy")

    def cross_entropy_backward(self, dloss, logits, labels, hint="dlogits"):
        return self.nll_loss_backward(dloss, logits, labels, hint=hint,
                                      op="cross_entropy_backward")

    def nll_loss(self, logp, labels, reduction="mean", ignore_index=None, hint="loss",
                 op="nll_loss"):
        """`ignore_index`: rows with this label are left out (torch's). The
        loss is a scalar of any float type (the op leaves it to its
        writer): here the input's."""
        return self.op(op, hint, results=[((), logp.dtype)], input=logp, labels=labels,
                       reduction=reduction, ignore_index=ignore_index)

    def nll_loss_backward(self, dloss, logp, labels, reduction="mean", ignore_index=None,
                          hint="dlogp", op="nll_loss_backward"):
        return self.op(op, hint, grad=dloss, input=logp,
                       labels=labels, reduction=reduction, ignore_index=ignore_index)

    def embedding(self, table, ids, hint="emb"):
        return self.op("embedding", hint, table=table, ids=ids)

    def embedding_backward(self, dy, ids, table_shape, padding_idx=None, hint="demb"):
        """The table's gradient; the tokens of row `padding_idx` (if given)
        add nothing, as torch.nn.Embedding(padding_idx=...)'s."""
        return self.op("embedding_backward", hint, results=[(table_shape, dy.dtype)], grad=dy,
                       ids=ids, padding_idx=padding_idx)

    def reshape(self, x, shape, hint="view"):
        assert math.prod(shape) == math.prod(x.shape), (x.shape, shape)
        return self.op("reshape", hint, results=[(shape, x.dtype)], input=x)

    def transpose(self, x, perm, hint="t"):
        return self.op("transpose", hint, input=x, permutation=list(perm))

    def broadcast(self, x, dims, shape, hint="bcast"):
        return self.op("broadcast", hint, results=[(shape, x.dtype)], input=x, dims=list(dims))

    def slice(self, x, offsets, shape, hint="slice", strides=None):
        return self.op("slice", hint, results=[(shape, x.dtype)], input=x,
                       offsets=list(offsets), strides=list(strides) if strides else None)

    def concat(self, xs, dim, hint="cat"):
        return self.op("concat", hint, inputs=list(xs), dim=dim)

    def fill(self, value, shape, dtype="f32", hint="fill"):
        return self.op("fill", hint, results=[(shape, dtype)], value=value)

    def splat(self, value, shape, dtype, hint="cst"):
        """A tensor of `shape` with every element `value`: braid.fill for a
        float type, a splat braid.constant for an integer one."""
        if dtype.startswith(("f", "b")):
            return self.fill(value, shape, dtype, hint=hint)
        v = Value("", shape, dtype)
        return self.op("constant", hint, results=[(shape, dtype)],
                       value="dense<%d> : %s" % (int(value), v.type))

    def constant(self, value, dtype="f32", hint="cst"):
        return self.op("constant", hint, results=[((), dtype)],
                       value="dense<%s> : tensor<%s>" % (_float(value), dtype))

    def constant_bytes(self, data, shape, dtype, hint="cst"):
        """A constant from its little-endian bytes (MLIR's hex form)."""
        v = Value("", shape, dtype)
        return self.op("constant", hint, results=[(shape, dtype)],
                       value='dense<"0x%s"> : %s' % (bytes(data).hex().upper(), v.type))

    # -- collectives and optimizers -------------------------------------------
    def grad_all_reduce(self, grad, param_name, dtype=None):
        """The data-parallel average of one parameter's gradient, reduced in
        `dtype` (cast to it first) when it is given and differs. The caller
        casts the result back where the update needs it: after the backward,
        so that the bucketing pass may delay the all-reduce."""
        hint = "g_" + param_name
        if dtype is not None and dtype != grad.dtype:
            grad = self.cast(grad, dtype, hint="g16_" + param_name)
        return self.op("all_reduce", [hint], inputs=[grad],
                       grid=self.grid, grid_axes=[self.dp_axis], reduction="avg",
                       grad_of=[param_name])[0]

    @staticmethod
    def _lr_args(lr):
        """An update's learning rate: a constant (`lr`), or a scalar f32
        operand (`scheduled_lr`)."""
        if isinstance(lr, Value):
            assert lr.shape == () and lr.dtype == "f32", (lr.shape, lr.dtype)
            return {"scheduled_lr": lr}
        return {"lr": float(lr)}

    @staticmethod
    def _scale_arg(grad_scale):
        assert grad_scale is None or (grad_scale.shape == () and grad_scale.dtype == "f32")
        return grad_scale

    def update(self, op, name, state_names, lr, grad_scale=None, **args):
        """Optimizer update braid.`op` of parameter `name`: its results
        named new_<name>, then new_<name>.<s> for each of `state_names`;
        `lr` a number, or a scalar Value (a scheduled learning rate);
        `grad_scale` a scalar Value the gradient is multiplied by (gradient
        clipping's factor) or None; `args` the op's other arguments by
        their ODS names. An optimizer of the registry (braid.optimizers)
        needs nothing more here."""
        hints = ["new_" + name] + ["new_%s.%s" % (name, s) for s in state_names]
        return self.op(op, hints, param=self._params[name],
                       grad_scale=self._scale_arg(grad_scale), **self._lr_args(lr), **args)

    def sgd(self, name, grad, buf, lr, momentum, weight_decay=0.0, dampening=0.0,
            nesterov=False, grad_scale=None):
        """`lr` and `grad_scale` as for update."""
        return self.update("sgd", name, ["momentum"], lr, grad_scale, grad=grad,
                           momentum_buffer=buf, momentum=momentum, weight_decay=weight_decay,
                           dampening=dampening or None, nesterov=nesterov)

    def adamw(self, name, grad, m, v, step, lr, betas, eps, weight_decay, grad_scale=None):
        """`lr` and `grad_scale` as for update."""
        return self.update("adamw", name, ["exp_avg", "exp_avg_sq"], lr, grad_scale, grad=grad,
                           exp_avg=m, exp_avg_sq=v, step=step, beta1=betas[0],
                           beta2=betas[1], eps=eps, weight_decay=weight_decay)

    # -- gradient clipping ------------------------------------------------------------
    def sum_squares(self, xs, hint="sumsq"):
        return self.op("sum_squares", hint, inputs=list(xs))

    def clip_coefficient(self, sumsq, max_norm, hint="clip"):
        return self.op("clip_coefficient", hint, input=sumsq, max_norm=max_norm)

    def clip_factor(self, grads, max_norm):
        """torch.nn.utils.clip_grad_norm_'s factor over `grads` (name ->
        reduced gradient), for the updates' grad_scale: the squared norm of
        the split parameters' gradients (a partial sum over the
        tensor-parallel ranks) and of the others, each one braid.sum_squares
        over all of them, added (one scalar all-reduce over the
        tensor-parallel axis where the two meet), then
        min(1, max_norm / (norm + 1e-6))."""
        split = [n for n in grads if self.tp > 1 and n in self.shardings]
        whole = [n for n in grads if n not in split]
        total = None
        for names, hint in ((split, "sumsq_split"), (whole, "sumsq")):
            if names:
                part = self.sum_squares([grads[n] for n in names], hint=hint)
                total = part if total is None else self.add(total, part, hint="sumsq_total")
        return self.clip_coefficient(total, max_norm)

    def pipeline(self, micro_batches, schedule, boundaries=(), virtual_stages=1):
        """Asks braid-compile to split the step (one micro-batch's) into
        `pp` stages on the grid's first axis (`pp` x `virtual_stages` under
        the interleaved schedule, `virtual_stages` on each rank), running
        `micro_batches` per step in `schedule`'s order, the stages starting
        at the modules `boundaries` (none: balanced by the cost model)."""
        if self.pp < 2:
            raise ValueError("pipeline() needs a builder with pp > 1")
        pipeline_schedule(schedule)
        check_virtual_stages(schedule, virtual_stages, self.pp, micro_batches)
        attrs = ["axis = 0", "micro_batches = %d" % micro_batches, 'schedule = "%s"' % schedule]
        if is_interleaved(schedule):
            attrs.append("virtual_stages = %d" % virtual_stages)
        if boundaries:
            attrs.append("boundaries = [%s]" % ", ".join('"%s"' % b for b in boundaries))
        self.pipeline_attrs = "#braid.pipeline<%s>" % ", ".join(attrs)

    # -- output ------------------------------------------------------------------
    def text(self, header="", functions=()):
        """The module: the grid and this step, then `functions` (other
        builders' function_text, such as the evaluation program)."""
        out = [header] if header else []
        dims = ([self.pp] if self.pp > 1 else []) + [self.data_parallel] + \
            ([self.tp] if self.tp > 1 else [])
        module_attrs = []
        if self.pipeline_attrs:
            module_attrs.append("braid.pipeline = %s" % self.pipeline_attrs)
        if self.zero_stage:
            module_attrs.append("braid.zero_stage = %d : i64" % self.zero_stage)
        if module_attrs:
            out.append("module attributes {%s} {" % ", ".join(module_attrs))
        out.append("shard.grid @%s(shape = %s)" % (self.grid, "x".join(map(str, dims))))
        out.append("")
        out.append(self.function_text())
        for f in functions:
            out.append("")
            out.append(f)
        if module_attrs:
            out.append("}")
        return "\n".join(out) + "\n"

    def function_text(self, attributes=None):
        """This builder's `func.func`, with `attributes` (name -> attribute
        text) as its discardable attributes."""
        def arg_text(v, k, n):
            attrs = 'braid.role = #braid.role<%s "%s">' % (k, n)
            sharding = self._sharding_of(k, n)
            if sharding:
                attrs += ", braid.sharding = #braid.sharding<%s>" % sharding
            return "%s: %s {%s}" % (v, v.type, attrs)

        out = []
        args = ",\n    ".join(arg_text(v, k, n) for v, k, n in self.args)
        res = []
        for v, k, n in self.results:
            res.append('%s {braid.role = #braid.role<%s "%s">}' % (v.type, k, n) if k else v.type)
        extra = ""
        if attributes:
            extra = "\n    attributes {%s}" % ", ".join(
                "%s = %s" % kv for kv in sorted(attributes.items()))
        out.append("func.func @%s(\n    %s)\n    -> (%s)%s {" % (
            self.name, args, ",\n        ".join(res), extra))
        out.extend("  " + line for line in self.body)
        out.append("  return %s\n      : %s" % (", ".join(str(v) for v, _, _ in self.results),
                                            ", ".join(v.type for v, _, _ in self.results)))
        out.append("}")
        return "\n".join(out)
