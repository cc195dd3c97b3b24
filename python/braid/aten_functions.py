"""Lowerings of aten's elementwise functions (exp, log, sqrt, rsqrt, tanh,
sigmoid, silu, pow and their backward), of tensors made like another one
(empty_like, fill), of torch.where and masked_fill with a condition that is a
constant of the step, and of the ops that take or stack slices (select,
stack, unbind and their backward). A mixin of braid.aten.Lowering: the
methods use its value helpers, and braid.aten.LOWERINGS maps the aten ops
onto them."""

import numpy as np
import torch

from braid.aten_values import Deferred, Scalar


class FunctionLowerings:
    # -- elementwise functions ------------------------------------------------
    def _unary_fn(self, kind, x):
        return self.b.unary(kind, self.value(x), hint=kind)

    def exp(self, x):
        return self._unary_fn("exp", x)

    def log(self, x):
        return self._unary_fn("log", x)

    def sqrt(self, x):
        return self._unary_fn("sqrt", x)

    def rsqrt(self, x):
        return self._unary_fn("rsqrt", x)

    def tanh(self, x):
        return self._unary_fn("tanh", x)

    def sigmoid(self, x):
        return self._unary_fn("sigmoid", x)

    def silu(self, x):
        return self._unary_fn("silu", x)

    def tanh_backward(self, grad, output):
        return self.b.unary_backward("tanh", self.value(grad), self.value(output), hint="dtanh")

    def sigmoid_backward(self, grad, output):
        return self.b.unary_backward("sigmoid", self.value(grad), self.value(output),
                                     hint="dsigmoid")

    def silu_backward(self, grad, x):
        return self.b.unary_backward("silu", self.value(grad), self.value(x), hint="dsilu")

    def pow_scalar(self, x, exponent):
        """x ** exponent for a number exponent, with torch's special cases
        (square roots and the identity) written as the ops they are."""
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            self.fail("an exponent that is not a number (%r)" % (exponent,))
        v = self.value(x)
        e = float(exponent)
        if e == 1.0:
            return v
        if e == 0.0:
            return self.b.fill(1.0, v.shape, v.dtype, hint="ones")
        if e in (0.5, -0.5):
            return self.b.unary("sqrt" if e > 0 else "rsqrt", v, hint="pow")
        return self.b.pow(v, e, hint="pow")

    # -- tensors made like another one --------------------------------------------
    def _like(self, value):
        shape, dtype = self.out_shape(), self.out_dtype()
        if dtype is None or not dtype.startswith(("f", "b")):
            self.fail("a tensor of dtype %s (braid fills float tensors)" % dtype)
        # Written on first use: empty_like's values are overwritten by the
        # fill that follows it (silu's backward in torch 1.13).
        d = Deferred(shape, dtype, lambda: self.b.fill(value, shape, dtype, hint="fill"))
        d.fill_value = value
        return d

    def empty_like(self, x, *args, **kwargs):
        return self._like(0.0)

    def zeros_like(self, x, *args, **kwargs):
        return self._like(0.0)

    def ones_like(self, x, *args, **kwargs):
        return self._like(1.0)

    def new_zeros(self, x, size, *args, **kwargs):
        return self._like(0.0)

    def fill_scalar(self, x, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail("a fill value that is not a number (%r)" % (value,))
        return self._like(float(value))

    # -- choosing by a constant mask -------------------------------------------------
    def _mask(self, cond, shape):
        """The condition as a bool tensor of `shape`, which must be known at
        export time (computed from buffers and constants)."""
        c = self.ref(cond)
        if not isinstance(c, torch.Tensor):
            self.fail("only a condition computed from buffers and constants is supported "
                      "(this one depends on the step's inputs or parameters)")
        return c.to(torch.bool).expand(shape)

    def _choose(self, mask, a, b):
        """where(mask, a, b) for a constant mask: an operand when the mask is
        uniform, braid.causal_mask when it is a causal one with a number on
        the masked side, else braid.where with the mask as a constant."""
        shape = self.out_shape()
        if bool(mask.all()):
            return self.broadcast_to(self._operand_of(a, shape), shape)
        if not bool(mask.any()):
            return self.broadcast_to(self._operand_of(b, shape), shape)
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            above = torch.ones(shape[-2:], dtype=torch.bool).triu(1).expand(shape)
            for filled, x, fill in ((~mask, a, b), (mask, b, a)):
                number = self.scalar_of(self.ref(fill))
                if number is not None and torch.equal(filled, above):
                    return self.b.causal_mask(self.broadcast_to(self._operand_of(x, shape), shape),
                                              number, hint="masked")
        xa = self.broadcast_to(self._operand_of(a, shape), shape)
        xb = self.broadcast_to(self._operand_of(b, shape), shape)
        if xa.dtype != xb.dtype:
            want = self.out_dtype()
            xa, xb = self.as_dtype(xa, want, "promoted"), self.as_dtype(xb, want, "promoted")
        return self.b.where(self._bool_constant(mask), xa, xb, hint="where")

    def _operand_of(self, arg, shape):
        """A written value for where's operand: numbers become a fill."""
        r = self.ref(arg)
        number = self.scalar_of(r) if isinstance(r, Scalar) else None
        if number is not None:
            dtype = self.out_dtype() or "f32"
            return self.b.fill(number, tuple(shape), dtype, hint="cst")
        return self.materialize(r)

    def _bool_constant(self, mask):
        key = ("mask", mask.shape, mask.reshape(-1).numpy().tobytes())
        if key not in self._cache:
            bits = np.packbits(mask.reshape(-1).numpy().astype(np.uint8), bitorder="little")
            self._cache[key] = self.b.constant_bytes(bits.tobytes(), tuple(mask.shape), "i1",
                                                     hint="mask")
        return self._cache[key]

    def where(self, cond, a, b):
        return self._choose(self._mask(cond, self.out_shape()), a, b)

    def masked_fill(self, x, mask, value):
        if self.scalar_of(self.ref(value)) is None:
            self.fail("only a fill with a number is supported")
        return self._choose(~self._mask(mask, self.out_shape()), x, value)

    def constant_pad_nd(self, x, pad, value=0):
        """Padding with a number (negative widths crop): per padded
        dimension a concat with splats of `value`, from the last dimension
        on, as torch.nn.functional.pad reads `pad`. Hugging Face's causal-LM
        loss pads its integer labels with the ignore index this way."""
        r = self.ref(x)
        rank = len(r.shape)
        if len(pad) % 2 or len(pad) // 2 > rank:
            self.fail("padding %s for a tensor of rank %d" % (list(pad), rank))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail("a padding value that is not a number (%r)" % (value,))
        for i in range(len(pad) // 2):
            dim, before, after = rank - 1 - i, pad[2 * i], pad[2 * i + 1]
            if before < 0 or after < 0:  # a crop first
                start, size = max(0, -before), r.shape[dim] + min(0, before) + min(0, after)
                shape = list(r.shape)
                shape[dim] = size
                r = self._slice(r, dim, start, shape)
                before, after = max(0, before), max(0, after)
            parts, v = [], self.materialize(r)
            for width in (before, after):
                s = list(v.shape)
                s[dim] = width
                parts.append(self.b.splat(value, tuple(s), v.dtype, hint="pad") if width else None)
            xs = [p for p in (parts[0], v, parts[1]) if p is not None]
            r = xs[0] if len(xs) == 1 else self.b.concat(xs, dim, hint="padded")
        return r

    # -- dropout -----------------------------------------------------------------------------
    def _keep_mask(self, shape, keep):
        """An i1 keep-mask of `shape` drawn with probability `keep`
        (braid.dropout_mask from the step's RandomState)."""
        if self.rng is None:
            self.fail("internal error: a dropout mask without the step's random state")
        return self.b.dropout_mask(self.rng.step, self.rng.rank, tuple(shape), keep,
                                   self.rng.seed, self.rng.next_stream())

    def native_dropout(self, x, p, train):
        """(x / (1 - p) where kept else 0, the keep-mask): torch 2.x's
        dropout. Not in train mode, or at p = 0, x itself."""
        v = self.value(x)
        if not train or p == 0:
            return (v, torch.ones(v.shape, dtype=torch.bool))
        if p >= 1:
            return (self.b.fill(0.0, v.shape, v.dtype, hint="dropped"),
                    torch.zeros(v.shape, dtype=torch.bool))
        keep = self._keep_mask(v.shape, 1.0 - p)
        scaled = self.b.scale(v, 1.0 / (1.0 - p), hint="kept")
        return (self.b.where(keep, scaled, self.b.fill(0.0, v.shape, v.dtype, hint="zeros"),
                             hint="dropout"), keep)

    def native_dropout_backward(self, grad, mask, scale):
        """The gradient where the forward's mask kept, times `scale`."""
        m = self.ref(mask)
        g = self.value(grad)
        if isinstance(m, torch.Tensor):  # no mask drawn: p = 0, p = 1 or not training
            if bool(m.all()):
                return g if scale == 1 else self.b.scale(g, float(scale), hint="ddropout")
            if not bool(m.any()):
                return self.b.fill(0.0, g.shape, g.dtype, hint="ddropout")
            self.fail("internal error: a dropout mask known at export time that is not uniform")
        scaled = g if scale == 1 else self.b.scale(g, float(scale), hint="dkept")
        return self.b.where(m, scaled, self.b.fill(0.0, g.shape, g.dtype, hint="zeros"),
                            hint="ddropout")

    def bernoulli(self, x, p=0.5, generator=None):
        """torch 1.13's dropout draws its mask as bernoulli_(empty, 1 - p): a
        float tensor of ones (kept, with probability p) and zeros."""
        if generator is not None:
            self.fail("a bernoulli draw with its own generator")
        shape, dtype = self.out_shape(), self.out_dtype()
        keep = self._keep_mask(shape, float(p))
        return self.b.where(keep, self.b.fill(1.0, shape, dtype, hint="one"),
                            self.b.fill(0.0, shape, dtype, hint="zero"), hint="bernoulli")

    # -- indexing with a constant index ---------------------------------------------------
    # Indices known at export time (a buffer, a constant) on one dimension:
    # the rows are taken (index) or added into place (index_put's gradient)
    # with slices and concats, one run of consecutive rows at a time. Up to
    # MAX_INDEXED_ROWS rows; a gather op would be the way past that.
    MAX_INDEXED_ROWS = 1024

    def _constant_index(self, indices, rank):
        """(dimension, 1-D index tensor) of aten.index's `indices`: one
        integer tensor known at export time, the dimensions before it None."""
        picked = [(d, i) for d, i in enumerate(indices) if i is not None]
        if len(picked) != 1:
            self.fail("only indexing along one dimension is supported")
        dim, arg = picked[0]
        idx = self.ref(arg)
        if not isinstance(idx, torch.Tensor) or idx.dtype.is_floating_point or \
                idx.dtype == torch.bool:
            self.fail("only an integer index known at export time (a buffer or a constant) "
                      "is supported")
        if idx.dim() != 1:
            self.fail("only a 1-D index is supported, not %s" % list(idx.shape))
        return dim, idx

    def _runs(self, positions):
        """Consecutive runs (start, length) of a list of rows."""
        runs = []
        for p in positions:
            if runs and runs[-1][0] + runs[-1][1] == p:
                runs[-1][1] += 1
            else:
                runs.append([p, 1])
        return runs

    def index(self, x, indices):
        r = self.ref(x)
        dim, idx = self._constant_index(indices, len(r.shape))
        size = r.shape[dim]
        if size > self.MAX_INDEXED_ROWS:
            self.fail("an index into a dimension of %d rows (at most %d are lowered as slices)"
                      % (size, self.MAX_INDEXED_ROWS))
        rows = [int(i) % size if -size <= int(i) < size else None for i in idx]
        if None in rows:
            self.fail("index %s out of range for size %d" % (idx.tolist(), size))
        parts = []
        for start, length in self._runs(rows):
            shape = list(r.shape)
            shape[dim] = length
            parts.append(self.materialize(self._slice(r, dim, start, shape)))
        return parts[0] if len(parts) == 1 else self.b.concat(parts, dim, hint="indexed")

    def index_put(self, base, indices, values, accumulate=False):
        """base with `values`' rows put (added, with accumulate) at the
        index's rows: index's gradient into a new_zeros."""
        b = self.ref(base)
        shape = tuple(b.shape)
        dim, idx = self._constant_index(indices, len(shape))
        size = shape[dim]
        if size > self.MAX_INDEXED_ROWS:
            self.fail("an index_put into a dimension of %d rows (at most %d are lowered as "
                      "slices)" % (size, self.MAX_INDEXED_ROWS))
        v = self.materialize(self.broadcast_to(self.ref(values), shape[:dim] + (len(idx),) +
                                               shape[dim + 1:]))
        zero = getattr(b, "fill_value", None) == 0.0
        sources = {}
        for p, i in enumerate(idx.tolist()):
            j = i % size
            sources[j] = sources.get(j, []) + [p] if accumulate else [p]

        def rows_of(r, start, length):
            s = list(r.shape)
            s[dim] = length
            return self.materialize(self._slice(r, dim, start, s))

        parts = []
        j = 0
        while j < size:
            if j in sources:
                row = None
                for p in sources[j]:
                    piece = rows_of(v, p, 1)
                    row = piece if row is None else self.b.add(row, piece, hint="put_sum")
                if accumulate and not zero:
                    row = self.b.add(rows_of(b, j, 1), row, hint="put_add")
                parts.append(row)
                j += 1
                continue
            length = 1
            while j + length < size and j + length not in sources:
                length += 1
            if zero:
                s = list(shape)
                s[dim] = length
                parts.append(self.b.fill(0.0, tuple(s), v.dtype, hint="zeros"))
            else:
                parts.append(rows_of(b, j, length))
            j += length
        return parts[0] if len(parts) == 1 else self.b.concat(parts, dim, hint="put")

    # -- slices: select, stack, unbind -------------------------------------------------
    def select(self, x, dim, index):
        r = self.ref(x)
        dim = self.dim(dim, len(r.shape))
        size = r.shape[dim]
        if not -size <= index < size:
            self.fail("index %d is out of range for dimension %d of size %d" % (index, dim, size))
        shape = list(r.shape)
        shape[dim] = 1
        return self.reshape(self._slice(r, dim, index % size, shape), self.out_shape())

    def select_backward(self, grad, input_sizes, dim, index):
        g = self.value(grad)
        shape = tuple(input_sizes)
        dim = self.dim(dim, len(shape))
        size = shape[dim]
        index %= size
        one = list(shape)
        one[dim] = 1
        g = self.materialize(self.reshape(g, one))
        parts = []
        for width in (index, size - index - 1):
            s = list(shape)
            s[dim] = width
            parts.append(self.b.fill(0.0, tuple(s), g.dtype, hint="zeros") if width else None)
        xs = [p for p in (parts[0], g, parts[1]) if p is not None]
        return xs[0] if len(xs) == 1 else self.b.concat(xs, dim, hint="dselect")

    def stack(self, tensors, dim=0):
        refs = [self.ref(t) for t in tensors]
        rank = len(refs[0].shape) + 1
        dim = self.dim(dim, rank)
        xs = []
        for r in refs:
            shape = list(r.shape)
            shape.insert(dim, 1)
            xs.append(self.materialize(self.reshape(r, shape)))
        return xs[0] if len(xs) == 1 else self.b.concat(xs, dim, hint="stack")

    def unbind(self, x, dim=0):
        r = self.ref(x)
        dim = self.dim(dim, len(r.shape))
        shape = list(r.shape)
        shape[dim] = 1
        out = list(r.shape)
        del out[dim]
        return tuple(self.reshape(self._slice(r, dim, i, shape), out)
                     for i in range(r.shape[dim]))
