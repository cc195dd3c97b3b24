"""Lowering of an AOT-autograd joint graph (aten ops) to braid IR.

`Lowering` walks the joint forward+backward graph that `braid.export`
captures and emits one braid op (or none) per aten op through
`braid.ir.StepBuilder`. The mapping is a table, `LOWERINGS`, from the aten
op overload (`torch.ops.aten.addmm.default`, the graph node's target) to a
method; an op missing from it is an `ExportError` naming the op and the
module it came from.

Views, slices and constants are written when first used. What MLIR does
better is left to it: braid-compile's canonicalize folds a transpose into
the matmuls that read it (`transpose_a`/`transpose_b`), composes
transposes, collapses reshapes of reshapes and adds a bias broadcast along
the leading dimensions as a `braid.bias_add`. Tensors computed from
buffers and constants alone (`arange`, a causal mask from a `tril` buffer)
are evaluated here, with torch, at export time.
"""

import collections
import contextlib
import enum
import operator

import torch

from braid._cli import module_command
from braid.aten_attention import AttentionLowerings
from braid.aten_functions import FunctionLowerings
from braid.aten_nn import NNLowerings
from braid.aten_values import Deferred, RandomState, Scalar
from braid.ir import Value


class ExportError(Exception):
    """A model, optimizer or option that braid.export cannot handle."""


DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
          torch.float64: "f64", torch.int64: "i64", torch.int32: "i32", torch.bool: "i1"}

# Ops whose result depends on a random generator: never evaluated at export
# time, since the value would be frozen into the step.
def draws_random(target):
    """Whether aten op `target` draws random numbers (torch tags it
    nondeterministic_seeded): never computed at export time."""
    return torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())


class Binary(enum.Enum):
    """The elementwise binary ops aten's add, sub, mul and div lower to;
    each value names the braid op and StepBuilder's method for it."""
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"


def op_name(target):
    """`aten.addmm.default` for an OpOverload; the name for anything else."""
    return str(target) if hasattr(target, "overloadpacket") else getattr(
        target, "__name__", str(target))




def _arguments(node):
    """An fx node's arguments in words: shapes for tensors, values for the rest."""
    def word(a):
        if hasattr(a, "meta") and "tensor_meta" in a.meta:
            return "tensor%s" % list(a.meta["tensor_meta"].shape)
        if hasattr(a, "meta") and hasattr(a.meta.get("val"), "shape"):
            return "tensor%s" % list(a.meta["val"].shape)
        if isinstance(a, (list, tuple)):
            return "[%s]" % ", ".join(word(x) for x in a)
        return repr(a)
    return "(%s)" % ", ".join(word(a) for a in node.args)


class Lowering(FunctionLowerings, NNLowerings, AttentionLowerings):
    """Emits the braid ops of one joint graph into a StepBuilder."""

    def __init__(self, builder, describe, half=None):
        self.b = builder
        # autocast "fp16" is traced with bf16 (torch 1.13's cpu autocast has
        # no float16; the cast lists are the same) and written in f16.
        self.half = half
        self.describe = describe  # node -> "module path" text for errors
        self.env = {}
        self.node = None
        self._cache = {}
        self.rng = None  # a RandomState where the step has dropout

    # -- errors -------------------------------------------------------------
    def fail(self, message):
        raise ExportError("%s (%s): %s" % (op_name(self.node.target), self.describe(self.node),
                                           message))

    # -- values ---------------------------------------------------------------
    def ref(self, arg):
        """The environment's entry for an fx argument."""
        if hasattr(arg, "op") and hasattr(arg, "target"):  # an fx Node
            return self.env[arg]
        if isinstance(arg, (int, float, bool)):
            return Scalar(arg)
        return arg

    def value(self, arg):
        """A written braid Value for an fx argument."""
        return self.materialize(self.ref(arg))

    def materialize(self, r):
        if isinstance(r, Value):
            return r
        if isinstance(r, Deferred):
            return r.get()
        if isinstance(r, torch.Tensor):
            return self.constant(r)
        if isinstance(r, Scalar):
            self.fail("a number where a tensor is needed")
        self.fail("an operand of an unsupported kind (%s)" % type(r).__name__)

    def constant(self, t):
        # Keyed by content: a buffer sliced or viewed in each layer (rotary
        # tables) is one constant of the step.
        key = ("c", t.dtype, tuple(t.shape), t.detach().contiguous().cpu().reshape(-1)
               .view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        if key in self._cache:
            return self._cache[key][1]
        if self.half == "f16" and t.dtype == torch.bfloat16:
            t = t.to(torch.float16)
        dtype = DTYPES.get(t.dtype)
        if dtype is None or dtype == "i1":
            self.fail("a constant of dtype %s is needed in the step; braid computes "
                      "with float and integer tensors" % t.dtype)
        shape = tuple(t.shape)
        flat = t.detach().reshape(-1)
        if dtype in ("f32", "f16", "bf16", "f64") and flat.numel() and bool((flat == flat[0]).all()):
            v = self.b.fill(float(flat[0]), shape, dtype, hint="cst") if shape else \
                self.b.constant(float(flat[0]), dtype, hint="cst")
        else:
            data = t.detach().contiguous().cpu()
            raw = data.view(torch.uint8) if data.dim() else data.reshape(1).view(torch.uint8)
            v = self.b.constant_bytes(raw.numpy().tobytes(), shape, dtype, hint="cst")
        self._cache[key] = (t, v)  # keep t alive: its id is the key
        return v

    def scalar_of(self, r):
        """A Python number for a Scalar or a constant of one value, else None."""
        if isinstance(r, Scalar):
            return r.value
        if isinstance(r, torch.Tensor) and r.numel() and r.dtype.is_floating_point:
            flat = r.reshape(-1)
            if bool((flat == flat[0]).all()):
                return float(flat[0])
        return None

    # -- shape helpers -------------------------------------------------------------
    def reshape(self, r, shape):
        shape = tuple(shape)
        if tuple(r.shape) == shape:
            return r
        if isinstance(r, torch.Tensor):
            return r.reshape(shape)
        base = self.materialize(r)
        return Deferred(shape, base.dtype, lambda: self.b.reshape(base, shape, hint="view"))

    def permute(self, r, perm):
        perm = [p % len(r.shape) for p in perm] if r.shape else []
        if perm == list(range(len(perm))):
            return r
        if isinstance(r, torch.Tensor):
            return r.permute(perm)
        base = self.materialize(r)
        # The transpose's type, as braid.transpose infers it, before it is
        # written (a Deferred may never be).
        [(shape, dtype)] = self.b.infer("transpose", [base], permutation=perm)
        return Deferred(shape, dtype, lambda: self.b.transpose(base, perm, hint="t"))

    def broadcast_to(self, r, shape):
        """numpy-style broadcast of a written value to `shape`."""
        shape = tuple(shape)
        v = self.materialize(r)
        if v.shape == shape:
            return v
        lead = len(shape) - len(v.shape)
        if lead < 0:
            self.fail("cannot broadcast %s to %s" % (list(v.shape), list(shape)))
        kept, new = [], []
        for i, size in enumerate(shape):
            j = i - lead
            if j >= 0 and v.shape[j] == size:
                kept.append(size)
            elif j < 0 or v.shape[j] == 1:
                new.append(i)
            else:
                self.fail("cannot broadcast %s to %s" % (list(v.shape), list(shape)))
        if tuple(kept) != v.shape:
            v = self.materialize(self.reshape(v, kept))
        if not new:
            return v
        return self.b.broadcast(v, new, shape, hint="bcast")

    def _meta(self):
        """What torch recorded of the node's result: `tensor_meta` (torch
        1.13's AOT autograd), else the fake tensor `val` (torch 2.x tracers
        that leave tensor_meta out)."""
        m = self.node.meta.get("tensor_meta")
        if hasattr(m, "shape"):
            return m
        v = self.node.meta.get("val")
        return v if isinstance(v, torch.Tensor) else None

    def out_shape(self):
        m = self._meta()
        return tuple(m.shape) if m is not None else None

    def out_dtype(self):
        """The result's braid element type, as torch computed it (None when
        torch does not say)."""
        return self.dtype_of(getattr(self._meta(), "dtype", None))

    def dtype_of(self, torch_dtype):
        """braid's element type for a torch dtype of the traced graph."""
        dtype = DTYPES.get(torch_dtype)
        return self.half if dtype == "bf16" and self.half else dtype

    def as_dtype(self, v, dtype, hint="cast"):
        """Value `v` converted to `dtype`: a `braid.cast` where it differs
        (autocast's casts, and torch's type promotion)."""
        return v if dtype is None or v.dtype == dtype else self.b.cast(v, dtype, hint=hint)

    def dim(self, d, rank):
        return d % rank if rank else 0

    # -- the walk --------------------------------------------------------------------
    def lower(self, node):
        """The environment entry of one call_function node."""
        self.node = node
        target = node.target
        name = op_name(target)
        if target is operator.getitem:
            return self.ref(node.args[0])[node.args[1]]
        if self._foldable(node):
            return self._fold(node)
        lowering = LOWERINGS.get(target)
        if lowering is None:  # check_supported() reports these first
            raise ExportError("%s (%s) has no braid lowering" % (name, self.describe(node)))
        try:
            result = lowering(self, *node.args, **node.kwargs)
        except ExportError:
            raise
        except Exception as e:  # a case the lowering did not foresee
            raise ExportError("%s (%s) could not be lowered: %s: %s (arguments %s)"
                              % (name, self.describe(node), type(e).__name__, e,
                                 _arguments(node))) from e
        self._check_shape(result)
        return result

    def _foldable(self, node, is_constant=None):
        if draws_random(node.target):
            return False
        if is_constant is None:
            def is_constant(n):
                return isinstance(self.env[n], torch.Tensor)
        return all(is_constant(a) for a in node.all_input_nodes)

    def check_supported(self, graph, constants):
        """Every op of `graph` that has no lowering and is not computed at
        export time, as one ExportError listing each with its module.
        `constants` holds the placeholders whose values are known."""
        known = set(constants)
        missing = {}
        random = False
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            if node.target is operator.getitem:
                if node.args[0] in known:
                    known.add(node)
                continue
            if self._foldable(node, lambda n: n in known):
                known.add(node)
            elif node.target not in LOWERINGS:
                key = (op_name(node.target), self.describe(node))
                missing.setdefault(key, 0)
                missing[key] += 1
                random |= draws_random(node.target)
        if not missing:
            return
        # An op without a lowering in the forward usually brings some in its
        # backward: name the forward ones with their modules, then the
        # backward ones by name, each with its number of uses.
        forward = {k: n for k, n in missing.items() if k[1].startswith("from ")}
        shown = forward or missing
        lines = ["%s (%s)%s" % (name, where, " x%d" % n if n > 1 else "")
                 for (name, where), n in shown.items()]
        if forward and len(forward) < len(missing):
            uses = collections.Counter()
            for (name, where), n in missing.items():
                if (name, where) not in forward:
                    uses[name] += n
            lines.append("and in %s backward: %s" % (
                "their" if len(forward) > 1 else "its",
                ", ".join("%s%s" % (name, " x%d" % n if n > 1 else "")
                          for name, n in uses.items())))
        hint = ""
        if random:
            hint = ("; random ops other than dropout are not supported (braid draws "
                    "dropout's masks with braid.dropout_mask; other draws would need a "
                    "generator of their own)")
        if legacy_capture():
            hint += ("; torch %s captures without core-ATen decompositions (torch 2.x "
                     "splits ops braid does not lower into ones it does where torch has "
                     "a rule)" % ".".join(torch.__version__.split(".")[:2]))
        raise ExportError("%d aten op%s of the step %s no braid lowering: %s%s "
                          "(`%s --list-ops` prints the %d supported ops)"
                          % (len(shown), "s" if len(shown) > 1 else "",
                             "have" if len(shown) > 1 else "has", "; ".join(lines), hint,
                             module_command("braid.export"), len(LOWERINGS)))

    def _fold(self, node):
        def sub(a):
            if isinstance(a, (list, tuple)):
                return type(a)(sub(x) for x in a)
            return self.env[a] if hasattr(a, "op") and hasattr(a, "target") else a
        with torch.no_grad():
            out = node.target(*sub(node.args), **{k: sub(v) for k, v in node.kwargs.items()})
        return tuple(out) if isinstance(out, (list, tuple)) else out

    def _check_shape(self, result):
        want = self.out_shape()
        if want is None or isinstance(result, (tuple, list)):
            return
        if tuple(result.shape) != want:
            self.fail("internal error: braid computed shape %s, torch %s"
                      % (list(result.shape), list(want)))
        dtype = self.out_dtype()
        if dtype is not None and getattr(result, "dtype", dtype) != dtype and \
                not isinstance(result, torch.Tensor):
            self.fail("internal error: braid computed type %s, torch %s" % (result.dtype, dtype))

    # -- data movement ----------------------------------------------------------------
    def alias(self, x, *args, **kwargs):
        return self.ref(x)

    def assert_tensor_metadata(self, x, *args, **kwargs):
        """torch 2.x's check of a value's dtype and shape (a `.to()` that
        changes nothing): the traced shapes and dtypes are the step's, so it
        holds; nothing is written."""
        return None

    def view(self, x, *args, **kwargs):
        return self.reshape(self.ref(x), self.out_shape())

    def t(self, x):
        r = self.ref(x)
        return self.permute(r, [1, 0]) if len(r.shape) == 2 else r

    def transpose(self, x, d0, d1):
        r = self.ref(x)
        perm = list(range(len(r.shape)))
        if perm:
            d0, d1 = d0 % len(perm), d1 % len(perm)
            perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.permute(r, perm)

    def permute_op(self, x, dims):
        return self.permute(self.ref(x), list(dims))

    def expand(self, x, sizes, implicit=False):
        r = self.ref(x)
        shape = self.out_shape()
        if tuple(r.shape) == shape:
            return r
        return self.broadcast_to(r, shape)

    def split(self, x, split_size, dim=0):
        r = self.ref(x)
        dim = self.dim(dim, len(r.shape))
        size = r.shape[dim]
        sizes = [min(split_size, size - o) for o in range(0, size, split_size)] if split_size else [0]
        return self._chunks(r, sizes, dim)

    def split_with_sizes(self, x, split_sizes, dim=0):
        r = self.ref(x)
        return self._chunks(r, list(split_sizes), self.dim(dim, len(r.shape)))

    def _chunks(self, r, sizes, dim):
        out, offset = [], 0
        for s in sizes:
            shape = list(r.shape)
            shape[dim] = s
            out.append(self._slice(r, dim, offset, shape))
            offset += s
        return tuple(out)

    def _slice(self, r, dim, start, shape, step=1):
        if tuple(shape) == tuple(r.shape):
            return r
        offsets = [0] * len(shape)
        offsets[dim] = start
        strides = None
        if step != 1:
            strides = [1] * len(shape)
            strides[dim] = step
        base = self.materialize(r)
        return Deferred(shape, base.dtype, lambda: self.b.slice(
            base, offsets, tuple(shape), hint="slice", strides=strides))

    def slice(self, x, dim=0, start=None, end=None, step=1):
        r = self.ref(x)
        dim = self.dim(dim, len(r.shape))
        size = r.shape[dim]
        start = 0 if start is None else start
        start = max(0, min(size, start + size if start < 0 else start))
        return self._slice(r, dim, start, self.out_shape(), step)

    def slice_backward(self, grad, input_sizes, dim, start, end, step):
        g = self.value(grad)
        if step != 1:
            self.fail("a slice with step %d" % step)
        shape = tuple(input_sizes)
        dim = self.dim(dim, len(shape))
        size = shape[dim]
        start = max(0, min(size, start + size if start < 0 else start))
        parts = []
        for width in (start, size - start - g.shape[dim]):
            s = list(shape)
            s[dim] = width
            parts.append(self.b.fill(0.0, tuple(s), g.dtype, hint="zeros") if width else None)
        xs = [p for p in (parts[0], g, parts[1]) if p is not None]
        return xs[0] if len(xs) == 1 else self.b.concat(xs, dim, hint="dslice")

    def cat(self, tensors, dim=0):
        # Each piece in the result's type (torch promotes: an f32 class token
        # joined to bf16 patch embeddings under autocast is f32).
        want = self.out_dtype()
        xs = [self.as_dtype(self.value(t), want, "promoted") for t in tensors
              if 0 not in self.ref(t).shape]
        if len(xs) == 1:
            return xs[0]
        return self.b.concat(xs, self.dim(dim, len(xs[0].shape)), hint="cat")

    def _to_copy(self, x, dtype=None, layout=None, device=None, pin_memory=None,
                 non_blocking=False, memory_format=None):
        """A copy, or a conversion of the element type (autocast's casts)."""
        r = self.ref(x)
        want = self.dtype_of(dtype) if dtype is not None else r.dtype
        if want is None:
            self.fail("a conversion to dtype %s" % dtype)
        if want == r.dtype:
            return r
        v = self.value(x)
        if v.dtype in ("bf16", "f16") and want in ("f32", "f64"):
            # A widening, written on first use: a gradient all-reduced in its
            # own half type needs none (braid.export's reduce_dtype).
            d = Deferred(v.shape, want, lambda: self.as_dtype(v, want))
            d.widened_from = v
            return d
        return self.as_dtype(v, want)

    def unsqueeze(self, x, dim):
        return self.reshape(self.ref(x), self.out_shape())

    # -- elementwise ------------------------------------------------------------------------
    def _binary(self, op, a, b, alpha=1):
        """`op` a Binary: the braid op (and builder) of aten's add, sub, mul
        and div."""
        ra, rb = self.ref(a), self.ref(b)
        shape = self.out_shape()
        sa, sb = self.scalar_of(ra), self.scalar_of(rb)
        if isinstance(ra, Scalar):
            if isinstance(rb, Scalar):
                self.fail("two numbers as operands")
            if op in (Binary.ADD, Binary.MUL) and alpha == 1:
                return self._binary(op, b, a)
            # `1 - x` (in GLU's decomposed backward), `1 / x`: the number
            # as a splat of the result's shape and the tensor's type.
            dtype = self.materialize(rb).dtype
            ra = self.b.fill(sa, shape, dtype, hint="cst") if shape else \
                self.b.constant(sa, dtype, hint="cst")
            sa = None
        if sb is not None and alpha != 1:
            sb, alpha = sb * alpha, 1
        if sb is not None:
            x = self.broadcast_to(ra, shape)
            if op is Binary.MUL:
                return x if sb == 1 else self.b.scale(x, sb, hint="scaled")
            if op is Binary.DIV:
                return x if sb == 1 else self.b.scale(x, 1.0 / sb, hint="scaled")
            if sb == 0:
                return x
            c = self.b.fill(sb, shape, x.dtype, hint="cst") if shape else \
                self.b.constant(sb, x.dtype, hint="cst")
            return self.b.add(x, c, hint="add") if op is Binary.ADD else \
                self.b.sub(x, c, hint="sub")
        if sa is not None and op is Binary.MUL and not isinstance(rb, Scalar):
            return self._binary(Binary.MUL, b, a)
        if op is Binary.ADD and alpha == 1:
            for x, m in ((ra, rb), (rb, ra)):
                if self._is_additive_causal(m, shape) and not isinstance(x, torch.Tensor):
                    # In the sum's type: a bf16 score plus an f32 mask
                    # buffer is f32 under autocast.
                    v = self.as_dtype(self.materialize(x), self.out_dtype(), "promoted")
                    return self.b.causal_mask(self.broadcast_to(v, shape), float("-inf"),
                                              hint="masked")
        xb = self.materialize(rb)
        if alpha != 1:
            xb = self.b.scale(xb, alpha, hint="scaled")
        xa = self.materialize(ra)
        if xa.dtype != xb.dtype:
            # torch's type promotion (a bf16 branch added to an f32
            # residual under autocast): each operand in the result's type.
            want = self.out_dtype()
            if want is None or not all(d.startswith(("f", "b")) for d in (xa.dtype, xb.dtype)):
                self.fail("operands of types %s and %s" % (xa.dtype, xb.dtype))
            xa, xb = self.as_dtype(xa, want, "promoted"), self.as_dtype(xb, want, "promoted")
        # A bias broadcast along the leading dimensions becomes a bias_add in
        # braid-compile's canonicalize (braid.add's canonicalizer).
        xa = self.broadcast_to(xa, shape)
        xb = self.broadcast_to(xb, shape)
        return getattr(self.b, op.value)(xa, xb, hint=op.value)

    @staticmethod
    def _is_additive_causal(m, shape):
        """Whether `m` is a constant that, added to a tensor of `shape`, is
        the causal mask: -inf above the diagonal of the last two dimensions,
        0 elsewhere (llama2.c's mask buffer)."""
        if not isinstance(m, torch.Tensor) or not m.dtype.is_floating_point or \
                len(shape) < 2 or shape[-1] != shape[-2]:
            return False
        try:
            full = m.expand(shape)
        except RuntimeError:
            return False
        above = torch.ones(shape[-2:], dtype=torch.bool).triu(1).expand(shape)
        return bool((full[above] == float("-inf")).all()) and bool((full[~above] == 0).all())

    def add(self, a, b, alpha=1):
        return self._binary(Binary.ADD, a, b, alpha)

    def sub(self, a, b, alpha=1):
        return self._binary(Binary.SUB, a, b, alpha)

    def mul(self, a, b):
        return self._binary(Binary.MUL, a, b)

    def div(self, a, b, rounding_mode=None):
        if rounding_mode is not None:
            self.fail("division with rounding_mode=%r" % rounding_mode)
        return self._binary(Binary.DIV, a, b)

    def neg(self, x):
        return self.b.scale(self.value(x), -1.0, hint="neg")

    def relu(self, x):
        return self.b.relu(self.value(x), hint="relu")

    def threshold_backward(self, grad, x, threshold):
        if threshold != 0:
            self.fail("threshold %r (only relu's 0 is supported)" % threshold)
        return self.b.relu_backward(self.value(grad), self.value(x), hint="drelu")

    def gelu(self, x, approximate="none"):
        return self.b.gelu(self.value(x), hint="gelu", tanh=approximate == "tanh")

    def gelu_backward(self, grad, x, approximate="none"):
        return self.b.gelu_backward(self.value(grad), self.value(x), hint="dgelu",
                                    tanh=approximate == "tanh")

    # -- reductions ---------------------------------------------------------------------
    def _reduce(self, op, x, dims, keepdim):
        v = self.value(x)
        rank = len(v.shape)
        dims = sorted({self.dim(d, rank) for d in dims}) if dims else list(range(rank))
        if not dims:
            return v
        return getattr(self.b, op)(v, dims, hint=op.split("_")[1], keep_dims=bool(keepdim))

    def sum_dims(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("reduce_sum", x, dims, keepdim)

    def sum_all(self, x, dtype=None):
        return self._reduce("reduce_sum", x, None, False)

    def mean_all(self, x, dtype=None):
        return self._reduce("reduce_mean", x, None, False)

    def mean_dims(self, x, dims=None, keepdim=False, dtype=None):
        return self._reduce("reduce_mean", x, dims, keepdim)

    # -- linear algebra -------------------------------------------------------------------
    def mm(self, a, b):
        return self.b.matmul(self.value(a), self.value(b), hint="mm")

    def bmm(self, a, b):
        return self.mm(a, b)

    def addmm(self, bias, a, b, beta=1, alpha=1):
        if beta != 1 or alpha != 1:
            self.fail("beta=%r, alpha=%r (only 1 is supported)" % (beta, alpha))
        y = self.mm(a, b)
        return self.b.add(y, self.broadcast_to(self.ref(bias), y.shape), hint="addmm")

    # -- softmax, norms, losses, embeddings --------------------------------------------------


# aten op overload -> lowering, keyed by the torch.ops.aten objects (a key
# torch does not have fails here, at import). Aliases (detach, clone, ...)
# return their operand.
_aten = torch.ops.aten
LOWERINGS = {
    _aten.addmm.default: Lowering.addmm,
    _aten.mm.default: Lowering.mm,
    _aten.bmm.default: Lowering.bmm,
    _aten.t.default: Lowering.t,
    _aten.transpose.int: Lowering.transpose,
    _aten.permute.default: Lowering.permute_op,
    _aten.view.default: Lowering.view,
    _aten._unsafe_view.default: Lowering.view,
    _aten._reshape_alias.default: Lowering.view,
    _aten.reshape.default: Lowering.view,
    _aten.unsqueeze.default: Lowering.unsqueeze,
    _aten.squeeze.dim: Lowering.unsqueeze,
    _aten.squeeze.default: Lowering.unsqueeze,
    _aten.expand.default: Lowering.expand,
    _aten.clone.default: Lowering.alias,
    _aten._to_copy.default: Lowering._to_copy,
    _aten.detach.default: Lowering.alias,
    _aten.alias.default: Lowering.alias,
    _aten.split.Tensor: Lowering.split,
    _aten.split_with_sizes.default: Lowering.split_with_sizes,
    _aten.slice.Tensor: Lowering.slice,
    _aten.slice_backward.default: Lowering.slice_backward,
    _aten.cat.default: Lowering.cat,
    _aten.relu.default: Lowering.relu,
    _aten.threshold_backward.default: Lowering.threshold_backward,
    _aten.gelu.default: Lowering.gelu,
    _aten.gelu_backward.default: Lowering.gelu_backward,
    _aten._softmax.default: Lowering._softmax,
    _aten._softmax_backward_data.default: Lowering._softmax_backward_data,
    _aten._log_softmax.default: Lowering._log_softmax,
    _aten._log_softmax_backward_data.default: Lowering._log_softmax_backward_data,
    _aten.nll_loss_forward.default: Lowering.nll_loss_forward,
    _aten.nll_loss_backward.default: Lowering.nll_loss_backward,
    _aten.native_layer_norm.default: Lowering.native_layer_norm,
    _aten.native_layer_norm_backward.default: Lowering.native_layer_norm_backward,
    _aten.embedding.default: Lowering.embedding,
    _aten.embedding_dense_backward.default: Lowering.embedding_dense_backward,
    _aten.sum.dim_IntList: Lowering.sum_dims,
    _aten.sum.default: Lowering.sum_all,
    _aten.mean.dim: Lowering.mean_dims,
    _aten.mean.default: Lowering.mean_all,
    _aten.add.Tensor: Lowering.add,
    _aten.add.Scalar: Lowering.add,
    _aten.sub.Tensor: Lowering.sub,
    _aten.sub.Scalar: Lowering.sub,
    _aten.mul.Tensor: Lowering.mul,
    _aten.mul.Scalar: Lowering.mul,
    _aten.div.Tensor: Lowering.div,
    _aten.div.Scalar: Lowering.div,
    _aten.neg.default: Lowering.neg,
    _aten.masked_fill.Scalar: Lowering.masked_fill,
    _aten.where.self: Lowering.where,
    _aten.exp.default: Lowering.exp,
    _aten.log.default: Lowering.log,
    _aten.sqrt.default: Lowering.sqrt,
    _aten.rsqrt.default: Lowering.rsqrt,
    _aten.tanh.default: Lowering.tanh,
    _aten.tanh_backward.default: Lowering.tanh_backward,
    _aten.sigmoid.default: Lowering.sigmoid,
    _aten.sigmoid_backward.default: Lowering.sigmoid_backward,
    _aten.silu.default: Lowering.silu,
    _aten.silu_backward.default: Lowering.silu_backward,
    _aten.pow.Tensor_Scalar: Lowering.pow_scalar,
    _aten.empty_like.default: Lowering.empty_like,
    _aten.zeros_like.default: Lowering.zeros_like,
    _aten.ones_like.default: Lowering.ones_like,
    _aten.fill.Scalar: Lowering.fill_scalar,
    _aten.select.int: Lowering.select,
    _aten.select_backward.default: Lowering.select_backward,
    _aten.stack.default: Lowering.stack,
    _aten.constant_pad_nd.default: Lowering.constant_pad_nd,
    _aten.native_dropout.default: Lowering.native_dropout,
    _aten.native_dropout_backward.default: Lowering.native_dropout_backward,
    _aten.bernoulli_.float: Lowering.bernoulli,
    _aten.bernoulli.p: Lowering.bernoulli,
    _aten.index.Tensor: Lowering.index,
    _aten.index_put.default: Lowering.index_put,
    _aten.new_zeros.default: Lowering.new_zeros,
    _aten.unbind.int: Lowering.unbind,
}
# Ops of torch 2.x that torch 1.13 does not have, by overload packet (the
# .default overload): lowered where the installed torch has them, and a
# name torch 2.x does not know fails at import there.
TORCH2_LOWERINGS = {
    "_safe_softmax": Lowering._safe_softmax,
    "_scaled_dot_product_flash_attention_for_cpu":
        Lowering._scaled_dot_product_flash_attention_for_cpu,
    "_scaled_dot_product_flash_attention_for_cpu_backward":
        Lowering._scaled_dot_product_flash_attention_for_cpu_backward,
    "_assert_tensor_metadata": Lowering.assert_tensor_metadata,
}
for _packet, _lowering in TORCH2_LOWERINGS.items():
    if hasattr(_aten, _packet):
        LOWERINGS[getattr(_aten, _packet).default] = _lowering
    elif int(torch.__version__.split(".")[0]) >= 2:
        raise ImportError("braid.aten: torch %s has no aten.%s" % (torch.__version__, _packet))



def legacy_capture():
    """Whether the installed torch predates aot_export_joint_simple and the
    core-ATen decomposition table (Debian's torch 1.13): then braid.export
    captures the step the legacy way, through functorch.compile.aot_function,
    with no decompositions (docs/Export.md, "Capture")."""
    try:
        from torch._functorch.aot_autograd import aot_export_joint_simple  # noqa: F401
        from torch._decomp import core_aten_decompositions  # noqa: F401
    except ImportError:
        return True
    return False


def decompositions():
    """The decompositions braid.export's capture applies: torch's core-ATen
    table less the ops that LOWERINGS lowers, which stay whole
    (`native_layer_norm_backward` is one braid op, not a dozen elementwise
    ones). An op braid does not lower is split into core-ATen ops where
    torch has a rule for it (`mse_loss` into a subtraction, a square and a
    mean). Empty under the legacy capture."""
    if legacy_capture():
        return {}
    from torch._decomp import core_aten_decompositions
    return {op: rule for op, rule in core_aten_decompositions().items()
            if op not in LOWERINGS}


@contextlib.contextmanager
def composites_kept():
    """While torch 2.x's export capture runs: the ops braid lowers whole that
    have a CompositeImplicitAutograd kernel (`silu_backward`), which the
    export would otherwise always decompose (into eight elementwise ops for
    silu's gradient), are kept as they are, the way torch.export keeps the
    ops a decomposition table leaves out (its private
    `_override_composite_implicit_decomp`; a torch without it decomposes
    them, which is slower but not wrong). Nothing under the legacy capture."""
    try:
        from torch.export.exported_program import _override_composite_implicit_decomp
        from torch._export.utils import _check_valid_to_preserve, _special_op_to_preserve_cia
    except ImportError:
        yield
        return
    keep = {op: _special_op_to_preserve_cia for op in LOWERINGS
            if op._can_decompose() and _check_valid_to_preserve(op)}
    with _override_composite_implicit_decomp(keep):
        yield
