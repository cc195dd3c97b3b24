"""A small builder that writes graph-level braid IR as text.

Where an op's result shape differs from its operands', the op says what it
yields: its InferTypeOpInterface (the rule its verifier checks), asked
through braid's build (braid._native), so no shape rule is written here
again; operands it rejects are a ValueError in its verifier's words, here,
not a parse error later. Every op it writes is checked against the op
table generated from the ODS (braid.op_table): an op the dialect does not
have, or a result count it does not give, is an error too. Only the
standard library is used, so any python3 runs it.
"""

import math

from braid import _native
from braid.op_table import OPS, InstrKind, PipelineScheduleKind

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


def _check_op(text, results):
    """`text` starts with a braid op that yields `results` values."""
    name = text.split(None, 1)[0]
    if not name.startswith("braid."):
        raise ValueError("not a braid op: %r" % text)
    entry = OPS.get(name[len("braid."):])
    if entry is None:
        raise ValueError("%s is not an op of the braid dialect" % name)
    if entry.kind is InstrKind.Kernel and entry.results >= 0 and entry.results != results:
        raise ValueError("%s yields %d values, not %d" % (name, entry.results, results))


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


def _attribute(value):
    """`value` as an attribute in MLIR's generic syntax: an int an I64Attr,
    a float an F64Attr, a list or tuple of ints a DenseI64ArrayAttr."""
    if isinstance(value, bool):
        raise TypeError("a flag is a unit attribute, named or left out")
    if isinstance(value, int):
        return "%d : i64" % value
    if isinstance(value, float):
        return "%s : f64" % _float(value)
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "array<i64%s>" % "".join(", %d" % v if i else ": %d" % v
                                         for i, v in enumerate(value))
    raise TypeError("no attribute form for %r" % (value,))


def _attributes(attrs):
    """An attribute dictionary in MLIR's generic syntax: a flag (True) is a
    unit attribute, False or None leaves the attribute out."""
    items = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        items.append(name if value is True else "%s = %s" % (name, _attribute(value)))
    return "{%s}" % ", ".join(items)


def _parse_type(text):
    """(shape, element type) of a ranked tensor type's text."""
    if not (text.startswith("tensor<") and text.endswith(">")):
        raise ValueError("not a ranked tensor type: %r" % text)
    parts = text[len("tensor<"):-1].split("x")
    return tuple(int(d) for d in parts[:-1]), parts[-1]


def _lr(lr):
    """An update's learning rate: a constant, or a scalar f32 operand."""
    if isinstance(lr, Value):
        assert lr.shape == () and lr.dtype == "f32", (lr.shape, lr.dtype)
        return str(lr)
    return _float(float(lr))


def _ignore(ignore_index):
    return "" if ignore_index is None else " ignore_index = %d" % int(ignore_index)


def _scale(grad_scale):
    if grad_scale is None:
        return ""
    assert grad_scale.shape == () and grad_scale.dtype == "f32"
    return " grad_scale = %s" % grad_scale


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

    def _emit(self, hint, shape, dtype, text):
        _check_op(text, 1)
        v = Value(self._fresh(hint), shape, dtype)
        self.body.append("%s = %s" % (v.name, text))
        return v

    def infer(self, op, operands, **attrs):
        """[(shape, dtype)] of each result of braid.`op` on `operands` with
        `attrs` (generic attribute values: see _attributes), as the op
        infers them; ValueError in the op's words where it rejects them."""
        types = _native.infer_result_types("braid." + op, [v.type for v in operands],
                                           _attributes(attrs))
        return [_parse_type(t) for t in types]

    def _emit_multi(self, hints, shapes, dtypes, text):
        _check_op(text, len(hints))
        vals = [Value(self._fresh(h), s, d) for h, s, d in zip(hints, shapes, dtypes)]
        self.body.append("%s = %s" % (", ".join(v.name for v in vals), text))
        return vals

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
    def matmul(self, a, b, ta=False, tb=False, hint="mm"):
        [(shape, dtype)] = self.infer("matmul", [a, b], transpose_a=ta, transpose_b=tb)
        attrs = [x for x, on in (("transpose_a", ta), ("transpose_b", tb)) if on]
        attr = " {%s}" % ", ".join(attrs) if attrs else ""
        r = Value(None, shape, dtype)
        return self._emit(hint, shape, dtype, "braid.matmul %s, %s%s : %s, %s -> %s"
                          % (a, b, attr, a.type, b.type, r.type))

    def _binary(self, op, a, b, hint):
        assert a.shape == b.shape, (op, a.shape, b.shape)
        return self._emit(hint, a.shape, a.dtype, "braid.%s %s, %s : %s" % (op, a, b, a.type))

    def add(self, a, b, hint="add"):
        return self._binary("add", a, b, hint)

    def sub(self, a, b, hint="sub"):
        return self._binary("sub", a, b, hint)

    def mul(self, a, b, hint="mul"):
        return self._binary("mul", a, b, hint)

    def div(self, a, b, hint="div"):
        return self._binary("div", a, b, hint)

    def scale(self, x, factor, hint="scaled"):
        return self._emit(hint, x.shape, x.dtype, "braid.scale %s by %s : %s" % (x, _float(factor), x.type))

    def bias_add(self, x, b, hint="biased"):
        return self._emit(hint, x.shape, x.dtype, "braid.bias_add %s, %s : %s, %s" % (x, b, x.type, b.type))

    def reduce_sum(self, x, dims, hint="sum", keep_dims=False, op="reduce_sum"):
        [(shape, dtype)] = self.infer(op, [x], dims=list(dims), keep_dims=keep_dims)
        r = Value(None, shape, dtype)
        return self._emit(hint, shape, dtype, "braid.%s %s dims = [%s]%s : %s -> %s"
                          % (op, x, ", ".join(map(str, dims)), " {keep_dims}" if keep_dims else "",
                             x.type, r.type))

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
        r = Value(None, x.shape, dtype)
        v = self._emit(hint, x.shape, dtype, "braid.cast %s : %s -> %s" % (x, x.type, r.type))
        if x.dtype in ("bf16", "f16") and dtype in ("f32", "f64"):
            v.widened_from = x
        return v

    def _unary(self, op, x, hint, attrs=""):
        return self._emit(hint, x.shape, x.dtype, "braid.%s %s%s : %s" % (op, x, attrs, x.type))

    def relu(self, x, hint="relu"):
        return self._unary("relu", x, hint)

    def relu_backward(self, dy, y, hint="drelu"):
        return self._emit(hint, y.shape, y.dtype, "braid.relu_backward %s, %s : %s" % (dy, y, y.type))

    def gelu(self, x, hint="gelu", tanh=True):
        return self._unary("gelu", x, hint, " {approximate_tanh}" if tanh else "")

    def gelu_backward(self, dy, x, hint="dgelu", tanh=True):
        return self._emit(hint, x.shape, x.dtype, "braid.gelu_backward %s, %s%s : %s"
                          % (dy, x, " {approximate_tanh}" if tanh else "", x.type))

    def unary(self, kind, x, hint="fn"):
        return self._emit(hint, x.shape, x.dtype, "braid.unary %s %s : %s" % (kind, x, x.type))

    def unary_backward(self, kind, dy, saved, hint="dfn"):
        return self._emit(hint, saved.shape, saved.dtype, "braid.unary_backward %s %s, %s : %s"
                          % (kind, dy, saved, saved.type))

    def pow(self, x, exponent, hint="pow"):
        return self._emit(hint, x.shape, x.dtype, "braid.pow %s exponent = %s : %s"
                          % (x, _float(exponent), x.type))

    def dropout_mask(self, step, rank, shape, keep, seed, stream, hint="keep"):
        v = Value("", shape, "i1")
        return self._emit(hint, shape, "i1", "braid.dropout_mask %s, %s keep = %s seed = %d "
                          "stream = %d : %s" % (step, rank, _float(keep), seed, stream, v.type))

    def axis_index(self, axis, hint="rank"):
        """This rank's index along grid axis `axis` (a tensor<i64>)."""
        return self._emit(hint, (), "i64", "braid.axis_index on @%s grid_axes = [%d] : tensor<i64>"
                          % (self.grid, axis))

    def where(self, cond, a, b, hint="where"):
        return self._emit(hint, a.shape, a.dtype, "braid.where %s, %s, %s : %s, %s"
                          % (cond, a, b, cond.type, a.type))

    def attention(self, q, k, v, causal, scale, hint="attn"):
        """braid.attention: (output, logsumexp)."""
        o, lse = (Value(None, shape, dtype) for shape, dtype in
                  self.infer("attention", [q, k, v], causal=causal, scale=float(scale)))
        return self._emit_multi([hint, hint + "_lse"], [o.shape, lse.shape], [o.dtype, lse.dtype],
                                "braid.attention %s, %s, %s%s scale = %s : %s, %s, %s -> %s, %s"
                                % (q, k, v, " {causal}" if causal else "", _float(scale),
                                   q.type, k.type, v.type, o.type, lse.type))

    def attention_backward(self, do, q, k, v, o, lse, causal, scale, hint="dattn"):
        """braid.attention_backward: (dq, dk, dv)."""
        return self._emit_multi(
            [hint + "_q", hint + "_k", hint + "_v"], [q.shape, k.shape, v.shape],
            [q.dtype, k.dtype, v.dtype],
            "braid.attention_backward %s, %s, %s, %s, %s, %s%s scale = %s : %s, %s, %s, %s, %s"
            % (do, q, k, v, o, lse, " {causal}" if causal else "", _float(scale), do.type,
               q.type, k.type, v.type, lse.type))

    def softmax(self, x, dim, hint="probs", safe=False):
        return self._emit(hint, x.shape, x.dtype, "braid.softmax %s dim = %d%s : %s"
                          % (x, dim, " {safe}" if safe else "", x.type))

    def softmax_backward(self, dy, y, dim, hint="dsoftmax"):
        return self._emit(hint, y.shape, y.dtype,
                          "braid.softmax_backward %s, %s dim = %d : %s" % (dy, y, dim, y.type))

    def log_softmax(self, x, dim, hint="logp"):
        return self._emit(hint, x.shape, x.dtype, "braid.log_softmax %s dim = %d : %s" % (x, dim, x.type))

    def log_softmax_backward(self, dy, y, dim, hint="dlogp"):
        return self._emit(hint, y.shape, y.dtype,
                          "braid.log_softmax_backward %s, %s dim = %d : %s" % (dy, y, dim, y.type))

    def causal_mask(self, x, fill, hint="masked"):
        return self._emit(hint, x.shape, x.dtype,
                          "braid.causal_mask %s fill = %s : %s" % (x, _float(fill), x.type))

    def layer_norm(self, x, gamma, beta, eps=1e-5, hint="ln"):
        y, stats, _ = (Value(None, shape, dtype) for shape, dtype in
                       self.infer("layer_norm", [x, gamma, beta], epsilon=float(eps)))
        return self._emit_multi(
            [hint, hint + "_mean", hint + "_rstd"], [y.shape, stats.shape, stats.shape],
            [y.dtype, stats.dtype, stats.dtype],
            "braid.layer_norm %s, %s, %s eps = %s : %s, %s -> %s"
            % (x, gamma, beta, _float(eps), x.type, gamma.type, stats.type))

    def layer_norm_backward(self, dy, x, mean, rstd, gamma, hint="dln"):
        return self._emit_multi(
            [hint + "_dx", hint + "_dgamma", hint + "_dbeta"],
            [x.shape, gamma.shape, gamma.shape], [x.dtype] * 3,
            "braid.layer_norm_backward %s, %s, %s, %s, %s : %s, %s, %s"
            % (dy, x, mean, rstd, gamma, x.type, mean.type, gamma.type))

    def cross_entropy(self, logits, labels, hint="loss"):
        return self._emit(hint, (), logits.dtype,
                          "braid.cross_entropy %s, %s reduction = mean : %s, %s -> tensor<%s>"
                          % (logits, labels, logits.type, labels.type, logits.dtype))

    def cross_entropy_backward(self, dloss, logits, labels, hint="dlogits"):
        return self._emit(hint, logits.shape, logits.dtype,
                          "braid.cross_entropy_backward %s, %s, %s reduction = mean : %s, %s, %s"
                          % (dloss, logits, labels, dloss.type, logits.type, labels.type))

    def nll_loss(self, logp, labels, reduction="mean", ignore_index=None, hint="loss"):
        """`ignore_index`: rows with this label are left out (torch's)."""
        return self._emit(hint, (), logp.dtype,
                          "braid.nll_loss %s, %s reduction = %s%s : %s, %s -> tensor<%s>"
                          % (logp, labels, reduction, _ignore(ignore_index), logp.type,
                             labels.type, logp.dtype))

    def nll_loss_backward(self, dloss, logp, labels, reduction="mean", ignore_index=None,
                          hint="dlogp"):
        return self._emit(hint, logp.shape, logp.dtype,
                          "braid.nll_loss_backward %s, %s, %s reduction = %s%s : %s, %s, %s"
                          % (dloss, logp, labels, reduction, _ignore(ignore_index), dloss.type,
                             logp.type, labels.type))

    def embedding(self, table, ids, hint="emb"):
        [(shape, dtype)] = self.infer("embedding", [table, ids])
        r = Value(None, shape, dtype)
        return self._emit(hint, shape, dtype, "braid.embedding %s, %s : %s, %s -> %s"
                          % (table, ids, table.type, ids.type, r.type))

    def embedding_backward(self, dy, ids, table_shape, padding_idx=None, hint="demb"):
        """The table's gradient; the tokens of row `padding_idx` (if given)
        add nothing, as torch.nn.Embedding(padding_idx=...)'s."""
        r = Value(None, table_shape, dy.dtype)
        pad = "" if padding_idx is None else " padding_idx = %d" % padding_idx
        return self._emit(hint, table_shape, dy.dtype, "braid.embedding_backward %s, %s%s : %s, %s -> %s"
                          % (dy, ids, pad, dy.type, ids.type, r.type))

    def reshape(self, x, shape, hint="view"):
        assert math.prod(shape) == math.prod(x.shape), (x.shape, shape)
        r = Value(None, shape, x.dtype)
        return self._emit(hint, shape, x.dtype, "braid.reshape %s : %s -> %s" % (x, x.type, r.type))

    def transpose(self, x, perm, hint="t"):
        [(shape, dtype)] = self.infer("transpose", [x], permutation=list(perm))
        r = Value(None, shape, dtype)
        return self._emit(hint, shape, dtype, "braid.transpose %s permutation = [%s] : %s -> %s"
                          % (x, ", ".join(map(str, perm)), x.type, r.type))

    def broadcast(self, x, dims, shape, hint="bcast"):
        r = Value(None, shape, x.dtype)
        return self._emit(hint, shape, x.dtype, "braid.broadcast %s dims = [%s] : %s -> %s"
                          % (x, ", ".join(map(str, dims)), x.type, r.type))

    def slice(self, x, offsets, shape, hint="slice", strides=None):
        r = Value(None, shape, x.dtype)
        st = " strides = [%s]" % ", ".join(map(str, strides)) if strides else ""
        return self._emit(hint, shape, x.dtype, "braid.slice %s offsets = [%s]%s : %s -> %s"
                          % (x, ", ".join(map(str, offsets)), st, x.type, r.type))

    def concat(self, xs, dim, hint="cat"):
        [(shape, dtype)] = self.infer("concat", xs, dim=dim)
        r = Value(None, shape, dtype)
        return self._emit(hint, shape, dtype, "braid.concat %s dim = %d : %s -> %s"
                          % (", ".join(map(str, xs)), dim, ", ".join(x.type for x in xs), r.type))

    def fill(self, value, shape, dtype="f32", hint="fill"):
        v = Value("", shape, dtype)
        return self._emit(hint, shape, dtype, "braid.fill %s : %s" % (_float(value), v.type))

    def splat(self, value, shape, dtype, hint="cst"):
        """A tensor of `shape` with every element `value`: braid.fill for a
        float type, a splat braid.constant for an integer one."""
        if dtype.startswith(("f", "b")):
            return self.fill(value, shape, dtype, hint=hint)
        v = Value("", shape, dtype)
        return self._emit(hint, shape, dtype, "braid.constant dense<%d> : %s" % (int(value), v.type))

    def constant(self, value, dtype="f32", hint="cst"):
        return self._emit(hint, (), dtype, "braid.constant dense<%s> : tensor<%s>" % (_float(value), dtype))

    def constant_bytes(self, data, shape, dtype, hint="cst"):
        """A constant from its little-endian bytes (MLIR's hex form)."""
        v = Value("", shape, dtype)
        return self._emit(hint, shape, dtype, 'braid.constant dense<"0x%s"> : %s'
                          % (bytes(data).hex().upper(), v.type))

    # -- collectives and optimizers -------------------------------------------
    def grad_all_reduce(self, grad, param_name, dtype=None):
        """The data-parallel average of one parameter's gradient, reduced in
        `dtype` (cast to it first) when it is given and differs. The caller
        casts the result back where the update needs it: after the backward,
        so that the bucketing pass may delay the all-reduce."""
        hint = "g_" + param_name
        if dtype is not None and dtype != grad.dtype:
            grad = self.cast(grad, dtype, hint="g16_" + param_name)
        return self._emit(hint, grad.shape, grad.dtype,
                          'braid.all_reduce %s on @%s grid_axes = [%d] reduction = avg grad_of = ["%s"] : %s'
                          % (grad, self.grid, self.dp_axis, param_name, grad.type))

    def sgd(self, name, grad, buf, lr, momentum, weight_decay=0.0, dampening=0.0,
            nesterov=False, grad_scale=None):
        """`lr` is a number, or a scalar Value (a scheduled learning rate);
        `grad_scale` a scalar Value the gradient is multiplied by (gradient
        clipping's factor)."""
        p = self._params[name]
        attrs = (["dampening = %s : f64" % _float(dampening)] if dampening else []) + \
            (["nesterov"] if nesterov else [])
        return self._emit_multi(
            ["new_" + name, "new_" + name + ".momentum"], [p.shape] * 2, [p.dtype] * 2,
            "braid.sgd %s, %s, %s lr = %s%s momentum = %s weight_decay = %s%s : %s"
            % (p, grad, buf, _lr(lr), _scale(grad_scale), _float(momentum),
               _float(weight_decay), " {%s}" % ", ".join(attrs) if attrs else "", p.type))

    def adamw(self, name, grad, m, v, step, lr, betas, eps, weight_decay, grad_scale=None):
        """`lr` and `grad_scale` as for sgd."""
        p = self._params[name]
        return self._emit_multi(
            ["new_" + name, "new_" + name + ".exp_avg", "new_" + name + ".exp_avg_sq"],
            [p.shape] * 3, [p.dtype] * 3,
            "braid.adamw %s, %s, %s, %s, %s lr = %s%s beta1 = %s beta2 = %s eps = %s weight_decay = %s : %s, %s"
            % (p, grad, m, v, step, _lr(lr), _scale(grad_scale), _float(betas[0]),
               _float(betas[1]), _float(eps), _float(weight_decay), p.type, step.type))

    def lion(self, name, grad, m, lr, betas, weight_decay, grad_scale=None):
        """`lr` and `grad_scale` as for sgd."""
        p = self._params[name]
        return self._emit_multi(
            ["new_" + name, "new_" + name + ".exp_avg"], [p.shape] * 2, [p.dtype] * 2,
            "braid.lion %s, %s, %s lr = %s%s beta1 = %s beta2 = %s weight_decay = %s : %s"
            % (p, grad, m, _lr(lr), _scale(grad_scale), _float(betas[0]), _float(betas[1]),
               _float(weight_decay), p.type))

    # -- gradient clipping ------------------------------------------------------------
    def sum_squares(self, xs, hint="sumsq"):
        return self._emit(hint, (), "f32", "braid.sum_squares %s : %s -> tensor<f32>"
                          % (", ".join(str(x) for x in xs), ", ".join(x.type for x in xs)))

    def clip_coefficient(self, sumsq, max_norm, hint="clip"):
        return self._emit(hint, (), "f32", "braid.clip_coefficient %s max_norm = %s : tensor<f32>"
                          % (sumsq, _float(max_norm)))

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
        if self.pipeline_attrs:
            out.append("module attributes {braid.pipeline = %s} {" % self.pipeline_attrs)
        out.append("shard.grid @%s(shape = %s)" % (self.grid, "x".join(map(str, dims))))
        out.append("")
        out.append(self.function_text())
        for f in functions:
            out.append("")
            out.append(f)
        if self.pipeline_attrs:
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
