# Every compute and optimizer kernel of the cpu backend against a numpy
# reference, forward and backward, on random shapes (three seeds). All cases
# of a seed are one step function: one braid-compile and one braid-run.
# The vectorized functions (CpuVectorMath.h) run at every width this CPU
# has: the widest by default, then AVX2 and one lane (BRAID_CPU_MATH;
# threads.py runs them split over threads).
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t
# RUN: env BRAID_BIN=%braid_bin BRAID_CPU_MATH=avx2 %python %s %t.avx2
# RUN: env BRAID_BIN=%braid_bin BRAID_CPU_MATH=scalar %python %s %t.scalar

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402


def ttype(shape, dtype="f32"):
    return "tensor<" + "".join("%dx" % d for d in shape) + dtype + ">"


class Step:
    """Collects cases into one function: inputs are batch arguments,
    references are compared with the function's results."""

    def __init__(self):
        self.args, self.lines, self.results, self.inputs = [], [], [], {}
        self.n = 0

    def input(self, array):
        name = "in%d" % len(self.inputs)
        self.inputs[name] = array
        dtype = {np.float32: "f32", np.int64: "i64", np.int32: "i32"}[array.dtype.type]
        self.args.append("%%%s: %s {braid.role = #braid.role<batch \"%s\">}"
                         % (name, ttype(array.shape, dtype), name))
        return "%" + name

    def op(self, text, refs, tol=1e-5, checks=None):
        """`text` defines %r (or %r:N); refs are the expected results.
        `checks` names the op the case is for when it is not text's (an i1
        result read through braid.where)."""
        self.n += 1
        v = "v%d" % self.n
        self.lines.append(text.replace("%r", "%" + v))
        for i, ref in enumerate(refs):
            name = "%%%s#%d" % (v, i) if len(refs) > 1 else "%" + v
            self.results.append((name, ref, tol, checks or text.split("=")[1].split()[0]))

    def module(self):
        types = ", ".join(ttype(r.shape) for _, r, _, _ in self.results)
        body = "\n".join("  " + l for l in self.lines)
        names = ", ".join(n for n, _, _, _ in self.results)
        return ("func.func @kernels(%s) -> (%s) {\n%s\n  return %s : %s\n}\n"
                % (", ".join(self.args), types, body, names, types))


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu(x, approx):
    x = x.astype(np.float64)
    if approx:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_grad(x, approx):
    x = x.astype(np.float64)
    if approx:
        c = math.sqrt(2 / math.pi)
        t = np.tanh(c * (x + 0.044715 * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def attention(q, k, v, causal, scale, dout):
    """Scaled dot-product attention in float64, with grouped key/value
    heads: (output, logsumexp, (dq, dk, dv)) for the output gradient dout."""
    q, k, v, dout = (a.astype(np.float64) for a in (q, k, v, dout))
    group = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = scale * q @ kr.transpose(0, 1, 3, 2)
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape[-2:], bool), 1), -np.inf, scores)
    mx = scores.max(axis=-1, keepdims=True)
    lse = mx + np.log(np.exp(scores - mx).sum(axis=-1, keepdims=True))
    p = np.exp(scores - lse)
    o = p @ vr
    ds = p * (dout @ vr.transpose(0, 1, 3, 2) - (dout * o).sum(axis=-1, keepdims=True))
    dq = scale * ds @ kr
    dk = (scale * ds.transpose(0, 1, 3, 2) @ q).reshape(k.shape[:2] + (group,) + k.shape[2:])
    dv = (p.transpose(0, 1, 3, 2) @ dout).reshape(v.shape[:2] + (group,) + v.shape[2:])
    return o, lse[..., 0], (dq, dk.sum(axis=2), dv.sum(axis=2))


def philox_keeps(seed, rank, step, stream, n, keep):
    """braid.dropout_mask's bits, by a numpy Philox4x32-10 of its own
    (common/include/braid-common/Philox.h is the kernels')."""
    M = np.uint64(0xFFFFFFFF)
    i = np.arange(n, dtype=np.uint64)
    c = [i & M, i >> np.uint64(32), np.full(n, step, np.uint64), np.full(n, stream, np.uint64)]
    k0, k1 = np.uint64(seed), np.uint64(rank)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & M, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & M]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M, (k1 + np.uint64(0xBB67AE85)) & M
    return (c[0] >> np.uint64(8)).astype(np.float64) / 16777216.0 < keep


def build_folded(s, rng):
    """The folded forms braid-fuse-kernels writes (their own random draws,
    so that the cases of build keep theirs)."""
    dim = lambda lo=1, hi=9: int(rng.integers(lo, hi))
    # softmax and its backward with the scale and causal mask that
    # braid-fuse-kernels folds into them (scale alone along another
    # dimension too).
    scores = randn(rng, dim(1, 3), 2, 6, 6)
    gy = randn(rng, *scores.shape)
    causal = np.triu(np.ones((6, 6), bool), 1)
    ref = softmax(np.where(causal, -np.inf, scores.astype(np.float64) * 0.3), 3)
    t4 = ttype(scores.shape)
    s.op("%%r = braid.softmax %s dim = 3 {causal, scale = 0.3} : %s" % (s.input(scores), t4),
         [ref])
    dref = np.where(causal, 0, ref * (gy - (gy * ref).sum(axis=3, keepdims=True))) * 0.3
    s.op("%%r = braid.softmax_backward %s, %s dim = 3 {causal, scale = 0.3} : %s" % (
        s.input(gy), s.input(ref.astype(np.float32)), t4), [dref])
    ref = softmax(scores.astype(np.float64) * -2.0, 1)
    s.op("%%r = braid.softmax %s dim = 1 {scale = -2.0} : %s" % (s.input(scores), t4), [ref])
    s.op("%%r = braid.softmax_backward %s, %s dim = 1 {scale = -2.0} : %s" % (
        s.input(gy), s.input(ref.astype(np.float32)), t4),
        [ref * (gy - (gy * ref).sum(axis=1, keepdims=True)) * -2.0])

    # gelu and its backward with the bias braid-fuse-kernels folds in: of
    # x + bias.
    shape = (dim(), dim(), dim())
    x, y = randn(rng, *shape), randn(rng, *shape)
    t = ttype(shape)
    for approx in (False, True):
        attr = " {approximate_tanh}" if approx else ""
        bias = randn(rng, shape[-1])
        xb = x + bias  # float32, as braid.bias_add adds
        bt = ttype(bias.shape)
        s.op("%%r = braid.gelu %s, %s%s : %s, %s" % (s.input(x), s.input(bias), attr, t, bt),
             [gelu(xb, approx)])
        s.op("%%r = braid.gelu_backward %s, %s, %s%s : %s, %s" % (
            s.input(y), s.input(x), s.input(bias), attr, t, bt), [y * gelu_grad(xb, approx)])

    # Operands read and results written through permutations (what
    # braid-fuse-kernels folds attention's head transposes into): the
    # scores of q and k stored [B, S, H, D], the values through a
    # transpose into a result stored [B, S, H, D], the key gradient's
    # product written with its rows of unit stride, a shared weight read
    # transposed.
    B, S, H, D, S2 = dim(1, 3), dim(2, 6), dim(1, 4), dim(1, 5), dim(2, 6)
    q, k = randn(rng, B, S, H, D), randn(rng, B, S, H, D)
    p4, v = randn(rng, B, H, S, S), randn(rng, B, S, H, D)
    g4 = randn(rng, B, H, S, S2)
    w2 = randn(rng, 3, D)

    def perm(name, p):
        return "%s = array<i64: %s>" % (name, ", ".join(map(str, p)))

    s.op("%%r = braid.matmul %s, %s {%s, %s} : %s, %s -> %s" % (
        s.input(q), s.input(k), perm("lhs_permutation", (0, 2, 1, 3)),
        perm("rhs_permutation", (0, 2, 3, 1)), ttype(q.shape), ttype(k.shape),
        ttype((B, H, S, S))), [q.transpose(0, 2, 1, 3) @ k.transpose(0, 2, 3, 1)])
    s.op("%%r = braid.matmul %s, %s {%s, %s} : %s, %s -> %s" % (
        s.input(p4), s.input(v), perm("rhs_permutation", (0, 2, 1, 3)),
        perm("result_permutation", (0, 2, 1, 3)), ttype(p4.shape), ttype(v.shape),
        ttype((B, S, H, D))), [(p4 @ v.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)])
    s.op("%%r = braid.matmul %s, %s {%s, %s, transpose_a} : %s, %s -> %s" % (
        s.input(q), s.input(g4), perm("lhs_permutation", (0, 2, 1, 3)),
        perm("result_permutation", (0, 3, 1, 2)), ttype(q.shape), ttype(g4.shape),
        ttype((B, S2, H, D))),
        [(q.transpose(0, 2, 1, 3).swapaxes(2, 3) @ g4).transpose(0, 3, 1, 2)])
    s.op("%%r = braid.matmul %s, %s {%s} : %s, %s -> %s" % (
        s.input(q), s.input(w2), perm("rhs_permutation", (1, 0)), ttype(q.shape),
        ttype(w2.shape), ttype((B, S, H, 3))), [q @ w2.T])

    # Operands read through slices of a batch dimension (what
    # braid-fuse-kernels folds a fused projection's q/k/v slices into):
    # qkv stored [B, S, 3H, D], q its heads 0..H-1, k H..2H-1, v 2H..3H-1;
    # and a plain leading dimension sliced, with a shared rhs.
    qkv = randn(rng, B, S, 3 * H, D)
    qs, ks, vs = qkv[:, :, :H], qkv[:, :, H:2 * H], qkv[:, :, 2 * H:]
    tq = ttype(qkv.shape)

    def cut(name, offset, size, dim=2):
        return "%s = array<i64: %d, %d, %d>" % (name, dim, offset, size)

    s.op("%%r = braid.matmul %s, %s {%s, %s, %s, %s} : %s, %s -> %s" % (
        s.input(qkv), s.input(qkv), perm("lhs_permutation", (0, 2, 1, 3)), cut("lhs_slice", 0, H),
        perm("rhs_permutation", (0, 2, 3, 1)), cut("rhs_slice", H, H), tq, tq,
        ttype((B, H, S, S))), [qs.transpose(0, 2, 1, 3) @ ks.transpose(0, 2, 3, 1)])
    s.op("%%r = braid.matmul %s, %s {%s, %s, %s} : %s, %s -> %s" % (
        s.input(p4), s.input(qkv), perm("rhs_permutation", (0, 2, 1, 3)),
        cut("rhs_slice", 2 * H, H), perm("result_permutation", (0, 2, 1, 3)),
        ttype(p4.shape), tq, ttype((B, S, H, D))),
        [(p4 @ vs.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)])
    s.op("%%r = braid.matmul %s, %s {%s, %s, %s, transpose_a} : %s, %s -> %s" % (
        s.input(qkv), s.input(g4), perm("lhs_permutation", (0, 2, 1, 3)), cut("lhs_slice", H, H),
        perm("result_permutation", (0, 3, 1, 2)), tq, ttype(g4.shape), ttype((B, S2, H, D))),
        [(ks.transpose(0, 2, 1, 3).swapaxes(2, 3) @ g4).transpose(0, 3, 1, 2)])
    a3 = randn(rng, 5, dim(1, 4), dim(1, 4))
    w3 = randn(rng, a3.shape[2], dim(1, 4))
    s.op("%%r = braid.matmul %s, %s {%s} : %s, %s -> %s" % (
        s.input(a3), s.input(w3), cut("lhs_slice", 1, 3, dim=0), ttype(a3.shape),
        ttype(w3.shape), ttype((3, a3.shape[1], w3.shape[1]))), [a3[1:4] @ w3])


def build(rng):
    s = Step()
    dim = lambda lo=1, hi=9: int(rng.integers(lo, hi))

    # matmul: plain, transposed, batched, batched with a shared rhs.
    for ta in (False, True):
        for tb in (False, True):
            m, k, n = dim(), dim(), dim()
            a = randn(rng, *((k, m) if ta else (m, k)))
            b = randn(rng, *((n, k) if tb else (k, n)))
            ref = (a.T if ta else a) @ (b.T if tb else b)
            flags = ", ".join(f for f, on in (("transpose_a", ta), ("transpose_b", tb)) if on)
            attr = " {%s}" % flags if flags else ""
            s.op("%%r = braid.matmul %s, %s%s : %s, %s -> %s" % (
                s.input(a), s.input(b), attr, ttype(a.shape), ttype(b.shape), ttype(ref.shape)), [ref])
    bt, m, k, n = dim(1, 4), dim(), dim(), dim()
    a, b, w = randn(rng, bt, m, k), randn(rng, bt, k, n), randn(rng, n, k)
    s.op("%%r = braid.matmul %s, %s : %s, %s -> %s" % (
        s.input(a), s.input(b), ttype(a.shape), ttype(b.shape), ttype((bt, m, n))), [a @ b])
    s.op("%%r = braid.matmul %s, %s {transpose_b} : %s, %s -> %s" % (
        s.input(a), s.input(w), ttype(a.shape), ttype(w.shape), ttype((bt, m, n))), [a @ w.T])

    shape = (dim(), dim(), dim())
    x, y = randn(rng, *shape), randn(rng, *shape)
    y_safe = np.where(np.abs(y) < 0.1, 0.5, y).astype(np.float32)
    t = ttype(shape)
    for name, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)):
        yy = y_safe if name == "div" else y
        s.op("%%r = braid.%s %s, %s : %s" % (name, s.input(x), s.input(yy), t), [f(x, yy)])
    s.op("%%r = braid.scale %s by 2.500000e-01 : %s" % (s.input(x), t), [x * 0.25])
    s.op("%%r = braid.cast %s : %s -> %s" % (s.input(x), t, t), [x])
    s.op("%%r = braid.relu %s : %s" % (s.input(x), t), [np.maximum(x, 0)])
    s.op("%%r = braid.relu_backward %s, %s : %s" % (s.input(y), s.input(x), t), [np.where(x > 0, y, 0)])
    for approx in (False, True):
        attr = " {approximate_tanh}" if approx else ""
        s.op("%%r = braid.gelu %s%s : %s" % (s.input(x), attr, t), [gelu(x, approx)])
        s.op("%%r = braid.gelu_backward %s, %s%s : %s" % (s.input(y), s.input(x), attr, t),
             [y * gelu_grad(x, approx)])
    # braid.unary (positive inputs where the function needs them), its
    # backward from the saved output (tanh, sigmoid) or input (silu),
    # braid.pow, and braid.where with a constant mask.
    xd, pos = x.astype(np.float64), np.abs(x).astype(np.float64) + 0.25
    sig = 1 / (1 + np.exp(-xd))
    funcs = {"exp": (xd, np.exp(xd)), "log": (pos, np.log(pos)), "sqrt": (pos, np.sqrt(pos)),
             "rsqrt": (pos, 1 / np.sqrt(pos)), "tanh": (xd, np.tanh(xd)),
             "sigmoid": (xd, sig), "silu": (xd, xd * sig)}
    for kind, (arg, ref) in funcs.items():
        s.op("%%r = braid.unary %s %s : %s" % (kind, s.input(arg.astype(np.float32)), t), [ref])
    th, sg = np.tanh(x).astype(np.float32), (1 / (1 + np.exp(-xd))).astype(np.float32)
    for kind, saved, grad in (("tanh", th, 1 - th.astype(np.float64) ** 2),
                              ("sigmoid", sg, sg * (1 - sg.astype(np.float64))),
                              ("silu", x, sig * (1 + xd * (1 - sig)))):
        s.op("%%r = braid.unary_backward %s %s, %s : %s" % (kind, s.input(y), s.input(saved), t),
             [y * grad])
    for e, arg in ((2.0, xd), (3.0, xd), (0.5, pos), (-1.5, pos)):
        s.op("%%r = braid.pow %s exponent = %r : %s" % (s.input(arg.astype(np.float32)), e, t),
             [arg ** e])
    mask = rng.random(shape) < 0.5
    dense = str(mask.tolist()).replace("True", "true").replace("False", "false")
    m = "%%mask%d" % s.n
    s.lines.append("%s = braid.constant dense<%s> : %s" % (m, dense, ttype(shape, "i1")))
    s.op("%%r = braid.where %s, %s, %s : %s, %s" % (m, s.input(x), s.input(y), ttype(shape, "i1"), t),
         [np.where(mask, x, y)])
    # dropout_mask: the same bits as the numpy Philox, for two steps, ranks
    # and streams (the results are compared as floats: 1.0 kept, 0.0 not).
    for step, rank, stream, keep in ((0, 0, 0, 0.9), (7, 1, 3, 0.5)):
        seed = int(rng.integers(0, 2 ** 32))
        n = int(np.prod(shape))
        ref = philox_keeps(seed, rank, step, stream, n, keep).reshape(shape)
        m = "%%drop%d" % s.n
        s.lines.append("%s = braid.dropout_mask %s, %s keep = %r seed = %d stream = %d : %s" % (
            m, s.input(np.array(step, np.float32)), s.input(np.array(rank, np.int64)), keep,
            seed, stream, ttype(shape, "i1")))
        one, zero = "%%one%d" % s.n, "%%zero%d" % s.n
        s.lines.append("%s = braid.fill 1.0 : %s" % (one, t))
        s.lines.append("%s = braid.fill 0.0 : %s" % (zero, t))
        s.op("%%r = braid.where %s, %s, %s : %s, %s" % (m, one, zero, ttype(shape, "i1"), t),
             [ref.astype(np.float64)], tol=0, checks="braid.dropout_mask")
    bias = randn(rng, shape[-1])
    s.op("%%r = braid.bias_add %s, %s : %s, %s" % (s.input(x), s.input(bias), t, ttype(bias.shape)), [x + bias])
    # A bias over the last two dimensions (a positional embedding, as
    # braid.add's canonicalizer folds a broadcast into the sum).
    pos = randn(rng, *shape[1:])
    s.op("%%r = braid.bias_add %s, %s : %s, %s" % (s.input(x), s.input(pos), t, ttype(pos.shape)), [x + pos])

    # Reductions over random subsets of dimensions.
    for op, f in (("reduce_sum", np.sum), ("reduce_mean", np.mean)):
        for keep in (False, True):
            dims = sorted(rng.choice(3, size=int(rng.integers(1, 4)), replace=False).tolist())
            ref = f(x.astype(np.float64), axis=tuple(dims), keepdims=keep)
            attr = " {keep_dims}" if keep else ""
            s.op("%%r = braid.%s %s dims = [%s]%s : %s -> %s" % (
                op, s.input(x), ", ".join(map(str, dims)), attr, t, ttype(ref.shape)), [ref])

    for d in range(3):
        sm = softmax(x.astype(np.float64), d)
        s.op("%%r = braid.softmax %s dim = %d : %s" % (s.input(x), d, t), [sm])
        s.op("%%r = braid.log_softmax %s dim = %d : %s" % (s.input(x), d, t), [np.log(sm)])
        s.op("%%r = braid.softmax_backward %s, %s dim = %d : %s" % (
            s.input(y), s.input(sm.astype(np.float32)), d, t),
            [sm * (y - (y * sm).sum(axis=d, keepdims=True))])
        lsm = np.log(sm).astype(np.float32)
        s.op("%%r = braid.log_softmax_backward %s, %s dim = %d : %s" % (
            s.input(y), s.input(lsm), d, t),
            [y - np.exp(lsm.astype(np.float64)) * y.sum(axis=d, keepdims=True)])

    # softmax {safe}: a fully masked row is 0 (a NaN without safe), the
    # other rows a softmax.
    masked = randn(rng, 3, 4)
    masked[1] = -np.inf
    ref = softmax(masked.astype(np.float64), 1)
    ref[1] = 0
    s.op("%%r = braid.softmax %s dim = 1 {safe} : %s" % (s.input(masked), ttype(masked.shape)),
         [ref])

    sq = randn(rng, dim(1, 4), 5, 5)
    mask = np.triu(np.ones((5, 5), bool), 1)
    s.op("%%r = braid.causal_mask %s fill = -1.000000e+09 : %s" % (s.input(sq), ttype(sq.shape)),
         [np.where(mask, -1e9, sq)])

    # Fused attention with grouped key/value heads, causal and not, a key
    # sequence of its own length, and its backward.
    for causal in (False, True):
        B, kvh, group, S, D, Dv = dim(1, 3), dim(1, 3), dim(1, 3), dim(1, 7), dim(1, 6), dim(1, 6)
        Skv = S if causal else dim(1, 7)
        H, scale = kvh * group, float(rng.uniform(0.2, 1.0))
        q, k, v = randn(rng, B, H, S, D), randn(rng, B, kvh, Skv, D), randn(rng, B, kvh, Skv, Dv)
        o, lse, grads = attention(q, k, v, causal, scale, dout := randn(rng, B, H, S, Dv))
        attr = " {causal}" if causal else ""
        types = "%s, %s, %s" % (ttype(q.shape), ttype(k.shape), ttype(v.shape))
        s.op("%%r:2 = braid.attention %s, %s, %s%s scale = %r : %s -> %s, %s" % (
            s.input(q), s.input(k), s.input(v), attr, scale, types, ttype(o.shape),
            ttype(lse.shape)), [o, lse])
        s.op("%%r:3 = braid.attention_backward %s, %s, %s, %s, %s, %s%s scale = %r : "
             "%s, %s, %s" % (s.input(dout), s.input(q), s.input(k), s.input(v),
                             s.input(o.astype(np.float32)), s.input(lse.astype(np.float32)),
                             attr, scale, ttype(o.shape), types, ttype(lse.shape)), grads)

    # layer_norm over one and two trailing dimensions, and its backward.
    for k in (1, 2):
        gshape = shape[3 - k:]
        g, b = randn(rng, *gshape), randn(rng, *gshape)
        axes = tuple(range(3 - k, 3))
        xd = x.astype(np.float64)
        mu = xd.mean(axis=axes, keepdims=True)
        var = xd.var(axis=axes, keepdims=True)
        rs = 1 / np.sqrt(var + 1e-5)
        xhat = (xd - mu) * rs
        lead = shape[:3 - k]
        s.op("%%r:3 = braid.layer_norm %s, %s, %s eps = 1.000000e-05 : %s, %s -> %s" % (
            s.input(x), s.input(g), s.input(b), t, ttype(gshape), ttype(lead)),
            [xhat * g + b, mu.reshape(lead), rs.reshape(lead)], tol=1e-4)
        dy = y.astype(np.float64)
        n = int(np.prod(gshape))
        dyg = dy * g
        dx = rs * (dyg - dyg.sum(axis=axes, keepdims=True) / n
                   - xhat * (dyg * xhat).sum(axis=axes, keepdims=True) / n)
        lead_axes = tuple(range(3 - k))
        s.op("%%r:3 = braid.layer_norm_backward %s, %s, %s, %s, %s : %s, %s, %s" % (
            s.input(y), s.input(x), s.input(mu.reshape(lead).astype(np.float32)),
            s.input(rs.reshape(lead).astype(np.float32)), s.input(g), t, ttype(lead), ttype(gshape)),
            [dx, (dy * xhat).sum(axis=lead_axes), dy.sum(axis=lead_axes)], tol=1e-4)

    # Losses, both reductions, i64 and i32 labels.
    rows, classes = dim(2, 12), dim(2, 12)
    logits = randn(rng, rows, classes)
    for ltype, npt in (("i64", np.int64), ("i32", np.int32)):
        labels = rng.integers(0, classes, rows).astype(npt)
        lp = np.log(softmax(logits.astype(np.float64), 1))
        for red in ("mean", "sum"):
            div = rows if red == "mean" else 1
            pick = lp[np.arange(rows), labels]
            lt, ct = ttype((rows, classes)), ttype((rows,), ltype)
            s.op("%%r = braid.cross_entropy %s, %s reduction = %s : %s, %s -> tensor<f32>" % (
                s.input(logits), s.input(labels), red, lt, ct), [np.array(-pick.sum() / div)])
            lpf = lp.astype(np.float32)
            s.op("%%r = braid.nll_loss %s, %s reduction = %s : %s, %s -> tensor<f32>" % (
                s.input(lpf), s.input(labels), red, lt, ct),
                [np.array(-lpf.astype(np.float64)[np.arange(rows), labels].sum() / div)])
            grad = np.array(1.5, np.float32)
            onehot = np.eye(classes)[labels]
            s.op("%%r = braid.cross_entropy_backward %s, %s, %s reduction = %s : tensor<f32>, %s, %s" % (
                s.input(grad), s.input(logits), s.input(labels), red, lt, ct),
                [1.5 * (np.exp(lp) - onehot) / div])
            s.op("%%r = braid.nll_loss_backward %s, %s, %s reduction = %s : tensor<f32>, %s, %s" % (
                s.input(grad), s.input(lpf), s.input(labels), red, lt, ct), [-1.5 * onehot / div])

    # ignore_index (torch's): ignored rows add nothing, get a zero gradient
    # and are not counted in the mean; -100 (torch's default) and -1
    # (nanoGPT's), whatever the label type. A mean over no rows is NaN.
    for ltype, npt, ignore in (("i64", np.int64, -100), ("i32", np.int32, -1)):
        labels = rng.integers(0, classes, rows).astype(npt)
        labels[rng.permutation(rows)[:max(1, rows // 3)]] = ignore
        keep = labels != ignore
        safe = np.where(keep, labels, 0)
        lp = np.log(softmax(logits.astype(np.float64), 1))
        lpf = lp.astype(np.float32)
        lt, ct = ttype((rows, classes)), ttype((rows,), ltype)
        onehot = np.eye(classes)[safe] * keep[:, None]
        for red in ("mean", "sum"):
            div = keep.sum() if red == "mean" else 1
            pick = np.where(keep, lp[np.arange(rows), safe], 0)
            attr = "reduction = %s ignore_index = %d" % (red, ignore)
            s.op("%%r = braid.cross_entropy %s, %s %s : %s, %s -> tensor<f32>" % (
                s.input(logits), s.input(labels), attr, lt, ct), [np.array(-pick.sum() / div)])
            s.op("%%r = braid.nll_loss %s, %s %s : %s, %s -> tensor<f32>" % (
                s.input(lpf), s.input(labels), attr, lt, ct),
                [np.array(-np.where(keep, lpf.astype(np.float64)[np.arange(rows), safe], 0).sum()
                          / div)])
            grad = np.array(1.5, np.float32)
            s.op("%%r = braid.cross_entropy_backward %s, %s, %s %s : tensor<f32>, %s, %s" % (
                s.input(grad), s.input(logits), s.input(labels), attr, lt, ct),
                [1.5 * (np.exp(lp) * keep[:, None] - onehot) / div])
            s.op("%%r = braid.nll_loss_backward %s, %s, %s %s : tensor<f32>, %s, %s" % (
                s.input(grad), s.input(lpf), s.input(labels), attr, lt, ct),
                [-1.5 * onehot / div])
    every = np.full(rows, -100, np.int64)
    s.op("%%r = braid.cross_entropy %s, %s reduction = mean ignore_index = -100 : %s, %s -> "
         "tensor<f32>" % (s.input(logits), s.input(every), ttype((rows, classes)),
                          ttype((rows,), "i64")), [np.array(np.nan)])

    # The vocabulary-parallel cross-entropy: shard `index` of `parts` holds
    # columns [index * C, (index + 1) * C); the loss and gradient from every
    # shard's summary equal cross_entropy of the whole logits (labels fall
    # in every shard, and outside this one).
    parts, index = 3, int(rng.integers(0, 3))
    whole = randn(rng, rows, parts * classes) * 3
    labels = rng.integers(0, parts * classes, rows).astype(np.int64)
    lt = ttype((rows, classes))
    piece = lambda p: np.ascontiguousarray(whole[:, p * classes:(p + 1) * classes])
    def stats_of(p):
        x = piece(p).astype(np.float64)
        m = x.max(1)
        local = labels - p * classes
        inside = (local >= 0) & (local < classes)
        t = np.where(inside, x[np.arange(rows), np.clip(local, 0, classes - 1)], 0)
        return np.stack([m, np.exp(x - m[:, None]).sum(1), t], 1)[None]
    idx = s.input(np.array(index, np.int64))
    s.op("%%r = braid.cross_entropy_shard_stats %s, %s, %s parts = %d : %s, %s -> %s" % (
        s.input(piece(index)), s.input(labels), idx, parts, lt, ttype((rows,), "i64"),
        ttype((1, rows, 3))), [stats_of(index)])
    stats = np.concatenate([stats_of(p) for p in range(parts)]).astype(np.float32)
    lpw = np.log(softmax(whole.astype(np.float64), 1))
    for red in ("mean", "sum"):
        div = rows if red == "mean" else 1
        s.op("%%r = braid.cross_entropy_shard_loss %s reduction = %s : %s -> tensor<f32>" % (
            s.input(stats), red, ttype(stats.shape)),
            [np.array(-lpw[np.arange(rows), labels].sum() / div)])
        full = 1.5 * (np.exp(lpw) - np.eye(parts * classes)[labels]) / div
        s.op("%%r = braid.cross_entropy_shard_backward %s, %s, %s, %s, %s reduction = %s : "
             "tensor<f32>, %s, %s, %s" % (
                 s.input(np.array(1.5, np.float32)), s.input(piece(index)), s.input(labels),
                 s.input(stats), idx, red, lt, ttype((rows,), "i64"), ttype(stats.shape)),
             [full[:, index * classes:(index + 1) * classes]])
    # ignore_index: an ignored row's summary is (0, 0, 0) on every shard,
    # which the loss skips; its gradient is zero; the mean counts the rest.
    labels = labels.copy()  # the ops above keep theirs
    labels[rng.permutation(rows)[:max(1, rows // 3)]] = -100
    keep = labels != -100
    stats_ig = [np.where(keep[None, :, None], stats_of(p), 0) for p in range(parts)]
    s.op("%%r = braid.cross_entropy_shard_stats %s, %s, %s parts = %d ignore_index = -100 : "
         "%s, %s -> %s" % (s.input(piece(index)), s.input(labels), idx, parts, lt,
                           ttype((rows,), "i64"), ttype((1, rows, 3))), [stats_ig[index]])
    stats = np.concatenate(stats_ig).astype(np.float32)
    safe = np.where(keep, labels, 0)
    for red in ("mean", "sum"):
        div = keep.sum() if red == "mean" else 1
        s.op("%%r = braid.cross_entropy_shard_loss %s reduction = %s : %s -> tensor<f32>" % (
            s.input(stats), red, ttype(stats.shape)),
            [np.array(-np.where(keep, lpw[np.arange(rows), safe], 0).sum() / div)])
        full = 1.5 * (np.exp(lpw) - np.eye(parts * classes)[safe]) * keep[:, None] / div
        s.op("%%r = braid.cross_entropy_shard_backward %s, %s, %s, %s, %s reduction = %s "
             "ignore_index = -100 : tensor<f32>, %s, %s, %s" % (
                 s.input(np.array(1.5, np.float32)), s.input(piece(index)), s.input(labels),
                 s.input(stats), idx, red, lt, ttype((rows,), "i64"), ttype(stats.shape)),
             [full[:, index * classes:(index + 1) * classes]])

    # Embedding and its backward (repeated ids accumulate).
    vocab, width = dim(2, 10), dim()
    table = randn(rng, vocab, width)
    ids = rng.integers(0, vocab, (dim(1, 4), dim())).astype(np.int64)
    s.op("%%r = braid.embedding %s, %s : %s, %s -> %s" % (
        s.input(table), s.input(ids), ttype(table.shape), ttype(ids.shape, "i64"),
        ttype(ids.shape + (width,))), [table[ids]])
    g = randn(rng, *(ids.shape + (width,)))
    ref = np.zeros((vocab, width))
    np.add.at(ref, ids.reshape(-1), g.reshape(-1, width))
    s.op("%%r = braid.embedding_backward %s, %s : %s, %s -> %s" % (
        s.input(g), s.input(ids), ttype(g.shape), ttype(ids.shape, "i64"), ttype(ref.shape)), [ref])
    # With a padding row (torch.nn.Embedding(padding_idx=P)): its tokens
    # add nothing, the other rows are as before. The batch holds P.
    pad = int(ids.reshape(-1)[0])
    ref_pad = ref.copy()
    ref_pad[pad] = 0
    s.op("%%r = braid.embedding_backward %s, %s padding_idx = %d : %s, %s -> %s" % (
        s.input(g), s.input(ids), pad, ttype(g.shape), ttype(ids.shape, "i64"),
        ttype(ref.shape)), [ref_pad])

    # One shard of a table split by rows: ids elsewhere give zero rows and
    # add no gradient.
    shard = randn(rng, vocab, width)
    ids3 = rng.integers(0, parts * vocab, (dim(1, 4), dim())).astype(np.int64)
    local = ids3 - index * vocab
    inside = (local >= 0) & (local < vocab)
    ref = np.where(inside[..., None], shard[np.clip(local, 0, vocab - 1)], 0)
    s.op("%%r = braid.embedding_shard %s, %s, %s parts = %d : %s, %s -> %s" % (
        s.input(shard), s.input(ids3), idx, parts, ttype(shard.shape), ttype(ids3.shape, "i64"),
        ttype(ids3.shape + (width,))), [ref])
    g3 = randn(rng, *(ids3.shape + (width,)))
    ref = np.zeros((vocab, width))
    np.add.at(ref, local[inside], g3[inside])
    s.op("%%r = braid.embedding_shard_backward %s, %s, %s parts = %d : %s, %s -> %s" % (
        s.input(g3), s.input(ids3), idx, parts, ttype(g3.shape), ttype(ids3.shape, "i64"),
        ttype(ref.shape)), [ref])
    # The padding row is a row of the whole table: this shard's row
    # pad3 - index * vocab when it holds it, nothing otherwise.
    pad3 = int(ids3.reshape(-1)[0])
    keep = inside & (ids3 != pad3)
    ref_pad = np.zeros((vocab, width))
    np.add.at(ref_pad, local[keep], g3[keep])
    s.op("%%r = braid.embedding_shard_backward %s, %s, %s parts = %d padding_idx = %d : "
         "%s, %s -> %s" % (s.input(g3), s.input(ids3), idx, parts, pad3, ttype(g3.shape),
                           ttype(ids3.shape, "i64"), ttype(ref.shape)), [ref_pad])

    # One rank's piece along an inner dimension (dimension 1 of 3).
    whole = randn(rng, shape[0], 3 * shape[1], shape[2])
    s.op("%%r = braid.shard_slice %s, %s dim = 1 parts = 3 : %s -> %s" % (
        s.input(whole), idx, ttype(whole.shape), t),
        [whole[:, index * shape[1]:(index + 1) * shape[1]]])
    # The piece a ring step takes: (index + shift) mod parts.
    block = (index - 2) % 3
    s.op("%%r = braid.shard_slice %s, %s dim = 1 parts = 3 shift = -2 : %s -> %s" % (
        s.input(whole), idx, ttype(whole.shape), t),
        [whole[:, block * shape[1]:(block + 1) * shape[1]]])
    # Its inverse over the pieces of a ring: piece k into block
    # (index + shifts[k]) mod 3.
    pieces = [randn(rng, shape[0], shape[1], shape[2]) for _ in range(3)]
    shifts = [0, -1, 1]
    joined = np.zeros((shape[0], 3 * shape[1], shape[2]))
    for piece_k, shift in zip(pieces, shifts):
        b = (index + shift) % 3
        joined[:, b * shape[1]:(b + 1) * shape[1]] = piece_k
    s.op("%%r = braid.shard_concat %s at %s dim = 1 shifts = [0, -1, 1] : %s -> %s" % (
        ", ".join(s.input(p) for p in pieces), idx, ", ".join([t] * 3),
        ttype(joined.shape)), [joined])

    # Data movement.
    s.op("%%r = braid.reshape %s : %s -> %s" % (s.input(x), t, ttype((shape[0] * shape[1], shape[2]))),
         [x.reshape(shape[0] * shape[1], shape[2])])
    perm = rng.permutation(3).tolist()
    s.op("%%r = braid.transpose %s permutation = [%s] : %s -> %s" % (
        s.input(x), ", ".join(map(str, perm)), t, ttype(x.transpose(perm).shape)), [x.transpose(perm)])
    v = randn(rng, shape[1])
    s.op("%%r = braid.broadcast %s dims = [0, 2] : %s -> %s" % (s.input(v), ttype(v.shape), t),
         [np.broadcast_to(v[None, :, None], shape)])
    big = randn(rng, 9, 10)
    s.op("%%r = braid.slice %s offsets = [1, 2] strides = [2, 3] : %s -> %s" % (
        s.input(big), ttype(big.shape), ttype((4, 3))), [big[1:9:2, 2:10:3]])
    parts = [randn(rng, shape[0], dim(), shape[2]) for _ in range(3)]
    ref = np.concatenate(parts, axis=1)
    s.op("%%r = braid.concat %s dim = 1 : %s -> %s" % (
        ", ".join(s.input(p) for p in parts), ", ".join(ttype(p.shape) for p in parts),
        ttype(ref.shape)), [ref])
    s.op("%r = braid.constant dense<[[1.0, 2.0], [3.0, 4.5]]> : tensor<2x2xf32>",
         [np.array([[1, 2], [3, 4.5]])])
    s.op("%%r = braid.fill 3.250000e+00 : %s" % t, [np.full(shape, 3.25)])

    # Optimizers, as torch.optim defines them.
    p, gr, buf = randn(rng, *shape), randn(rng, *shape), randn(rng, *shape)
    for nesterov in (False, True):
        lr, mom, wd, damp = 0.1, 0.9, 0.01, 0.0 if nesterov else 0.2
        g2 = gr + wd * p
        nb = mom * buf + (1 - damp) * g2
        np_ = p - lr * (g2 + mom * nb if nesterov else nb)
        attr = " {nesterov}" if nesterov else " {dampening = %e}" % damp
        s.op("%%r:2 = braid.sgd %s, %s, %s lr = %e momentum = %e weight_decay = %e%s : %s" % (
            s.input(p), s.input(gr), s.input(buf), lr, mom, wd, attr, t), [np_, nb])
    m_, v_ = randn(rng, *shape), np.abs(randn(rng, *shape))
    step = np.array(3.0, np.float32)
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.95, 1e-8, 0.1
    nm = b1 * m_ + (1 - b1) * gr
    nv = b2 * v_ + (1 - b2) * gr.astype(np.float64) ** 2
    npar = p * (1 - lr * wd) - lr * (nm / (1 - b1 ** 3)) / (np.sqrt(nv / (1 - b2 ** 3)) + eps)
    s.op("%%r:3 = braid.adamw %s, %s, %s, %s, %s lr = %e beta1 = %e beta2 = %e eps = %e "
         "weight_decay = %e : %s, tensor<f32>" % (
             s.input(p), s.input(gr), s.input(m_), s.input(v_), s.input(step),
             lr, b1, b2, eps, wd, t), [npar, nm, nv], tol=1e-4)
    # A scheduled learning rate: an operand (here a batch input), not the
    # attribute.
    lr2 = np.array(0.03, np.float32)
    npar2 = p * (1 - float(lr2) * wd) - float(lr2) * (nm / (1 - b1 ** 3)) / (
        np.sqrt(nv / (1 - b2 ** 3)) + eps)
    s.op("%%r:3 = braid.adamw %s, %s, %s, %s, %s lr = %s beta1 = %e beta2 = %e eps = %e "
         "weight_decay = %e : %s, tensor<f32>" % (
             s.input(p), s.input(gr), s.input(m_), s.input(v_), s.input(step), s.input(lr2),
             b1, b2, eps, wd, t), [npar2, nm, nv], tol=1e-4)
    # A gradient scale (clipping's factor), with a constant and with a
    # scheduled learning rate.
    c = np.array(0.4, np.float32)
    gs = 0.4 * gr.astype(np.float64)
    nm3 = b1 * m_ + (1 - b1) * gs
    nv3 = b2 * v_ + (1 - b2) * gs ** 2
    for lr3, text in ((lr, "%e" % lr), (float(lr2), s.input(lr2))):
        npar3 = p * (1 - lr3 * wd) - lr3 * (nm3 / (1 - b1 ** 3)) / (
            np.sqrt(nv3 / (1 - b2 ** 3)) + eps)
        s.op("%%r:3 = braid.adamw %s, %s, %s, %s, %s lr = %s grad_scale = %s beta1 = %e "
             "beta2 = %e eps = %e weight_decay = %e : %s, tensor<f32>" % (
                 s.input(p), s.input(gr), s.input(m_), s.input(v_), s.input(step), text,
                 s.input(c), b1, b2, eps, wd, t), [npar3, nm3, nv3], tol=1e-4)
    # Lion (braid.optimizers.Lion): the sign of an interpolation, lr-sized
    # steps; with weight decay, a scheduled rate and a gradient scale. An
    # interpolation that is exactly 0 moves nothing (sign(0) = 0). The
    # reference's interpolation is float64 arithmetic on the same float32
    # inputs in the kernels' order, so its sign is theirs: the only error
    # left is the float32 rounding of the results.
    lb1, lb2, lwd = 0.9, 0.99, 0.5
    for lr4, text, scale4 in ((1e-3, "%e" % 1e-3, None), (float(lr2), s.input(lr2), c)):
        g4 = gr.astype(np.float64) * (1.0 if scale4 is None else float(scale4))
        m64 = m_.astype(np.float64)
        cc = lb1 * m64 + (1 - lb1) * g4
        ref_p = p.astype(np.float64) * (1 - lr4 * lwd) - lr4 * np.sign(cc)
        ref_m = lb2 * m64 + (1 - lb2) * g4
        s.op("%%r:2 = braid.lion %s, %s, %s lr = %s%s beta1 = %e beta2 = %e weight_decay = %e"
             " : %s" % (s.input(p), s.input(gr), s.input(m_), text,
                        "" if scale4 is None else " grad_scale = %s" % s.input(scale4),
                        lb1, lb2, lwd, t), [ref_p, ref_m])
    zero = np.zeros(shape, np.float32)
    s.op("%%r:2 = braid.lion %s, %s, %s lr = %e beta1 = %e beta2 = %e weight_decay = %e : %s" % (
        s.input(p), s.input(zero), s.input(zero), 0.5, lb1, lb2, 0.0, t), [p, zero])
    # Gradient clipping: a sum of squares over several tensors, torch's
    # clipping factor on both sides of 1, a scale by a computed scalar.
    s.op("%%r = braid.sum_squares %s, %s : %s, %s -> tensor<f32>" % (
        s.input(p), s.input(gr), t, t),
        [np.array((p.astype(np.float64) ** 2).sum() + (gr.astype(np.float64) ** 2).sum())])
    for sumsq, max_norm in ((16.0, 1.0), (0.25, 1.0), (0.0, 0.5)):
        s.op("%%r = braid.clip_coefficient %s max_norm = %e : tensor<f32>" % (
            s.input(np.array(sumsq, np.float32)), max_norm),
            [np.array(min(1.0, max_norm / (np.sqrt(sumsq) + 1e-6)))])
    lr2, mom = np.array(0.25, np.float32), 0.9
    nb = mom * buf + (gr + 0.01 * p)
    s.op("%%r:2 = braid.sgd %s, %s, %s lr = %s momentum = %e weight_decay = %e : %s"
         % (s.input(p), s.input(gr), s.input(buf), s.input(lr2), mom, 0.01, t),
         [p - float(lr2) * nb, nb])
    nb = mom * buf + (0.4 * gr + 0.01 * p)
    s.op("%%r:2 = braid.sgd %s, %s, %s lr = %s grad_scale = %s momentum = %e weight_decay = %e "
         ": %s" % (s.input(p), s.input(gr), s.input(buf), s.input(lr2), s.input(c), mom, 0.01, t),
         [p - float(lr2) * nb, nb])
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures, checked = [], 0
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        s = build(rng)
        build_folded(s, np.random.default_rng([seed, 17]))
        mlir, plan = os.path.join(out, "k%d.mlir" % seed), os.path.join(out, "k%d.plan" % seed)
        data, save = os.path.join(out, "d%d.npz" % seed), os.path.join(out, "o%d.npz" % seed)
        with open(mlir, "w") as f:
            f.write(s.module())
        np.savez(data, **s.inputs)
        braidtest.compile_step(mlir, plan, "--no-overlap")
        braidtest.braid_run(plan, args=["--steps", "1", "--data", data, "--save", save])
        results = np.load(save)
        for i, (name, ref, tol, op) in enumerate(s.results):
            got = results["result%d" % i]
            checked += 1
            if got.shape != np.shape(ref):
                failures.append("seed %d %s %s: shape %s, expected %s" % (seed, op, name, got.shape, np.shape(ref)))
                continue
            # NaN where the reference is NaN (a mean over no rows), and
            # nowhere else.
            nan = np.isnan(np.asarray(ref, dtype=np.float64))
            if not np.array_equal(np.isnan(got), nan):
                failures.append("seed %d %s %s: NaN at %s, expected at %s" % (
                    seed, op, name, np.argwhere(np.isnan(got)).tolist(), np.argwhere(nan).tolist()))
                continue
            diff = braidtest.max_rel_diff(np.asarray(got)[~nan], np.asarray(ref)[~nan])
            if not diff <= tol:
                failures.append("seed %d %s %s: max relative difference %.3g > %g" % (seed, op, name, diff, tol))
    # Every result of every seed was read, and every kernel of the op table
    # (generated from ODS) has a case: a new kernel cannot go untested, and
    # a backend that returns nothing cannot pass with zero checks.
    from braid.op_table import OPS, InstrKind
    kernels = {"braid." + n for n, op in OPS.items() if op.kind is InstrKind.Kernel}
    tested = {op for _, _, _, op in s.results}
    if checked != 3 * len(s.results) or checked == 0:
        failures.append("%d results checked, %d expected" % (checked, 3 * len(s.results)))
    if kernels - tested:
        failures.append("kernels without a case: %s" % ", ".join(sorted(kernels - tested)))
    for f in failures:
        print("FAIL", f)
    print("kernels: %d results checked (every one of the %d kernel ops of braid's op table), "
          "%d failed" % (checked, len(kernels & tested), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
