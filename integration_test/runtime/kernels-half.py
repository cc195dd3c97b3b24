# The cpu backend's bf16 and f16: tensors stored in 16 bits, every kernel
# computing and accumulating in f32, every result rounded to the nearest
# even value (runtime/include/braid-runtime/HalfFloat.h).
#
# - Casts round to nearest even, exactly: ties go to the even neighbour
#   (truncation would give the odd one), NaN and infinity stay, f32 values
#   beyond bf16's largest finite value become infinity.
# - Kernels in bf16 and f16 against numpy on the same rounded inputs,
#   computed in f64 and rounded once: within one unit in the last place of
#   the result type (BLAS sums in another order than numpy, which moves a
#   result across a rounding boundary at most once).
# - Accumulation in f32: a sum and a matmul over 4096 ones give exactly 4096
#   (accumulating in bf16 stops at 256, where 256 + 1 rounds back to 256).
# - Collectives on 2 ranks in bf16 and f16: all_reduce sum, avg and max,
#   reduce_scatter, all_gather; combined in f32 and rounded, as NCCL does.
# - braid-fuse-kernels' softmax and bias-gelu folds in bf16 and f16 give the
#   bits of the ops they stand for.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def bf16(x):
    """f32 values rounded to the nearest even bf16, as f32 (NaN kept)."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float32))
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1)))
         & np.uint64(0xFFFF0000)).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, r)


def f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


ROUND = {"bf16": bf16, "f16": f16}
# One unit in the last place, relative: 2^-7 for bf16's 8 significant bits,
# 2^-10 for f16's 11 (the largest gap between neighbours of a binade).
ULP = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}


def ttype(shape, dtype):
    return "tensor<" + "".join("%dx" % d for d in shape) + dtype + ">"


class Step:
    """A step of f32 batch inputs; each case casts them to its type, runs
    one op there, and returns the result cast back to f32 (exactly)."""

    def __init__(self):
        self.args, self.lines, self.results, self.inputs = [], [], [], {}

    def input(self, array, dtype):
        name = "in%d" % len(self.inputs)
        self.inputs[name] = array
        narrow = {np.float32: "f32", np.int64: "i64"}[array.dtype.type]
        self.args.append('%%%s: %s {braid.role = #braid.role<batch "%s">}'
                         % (name, ttype(array.shape, narrow), name))
        if narrow != "f32" or dtype == "f32":
            return "%" + name
        self.lines.append("%%%s_h = braid.cast %%%s : %s -> %s" % (
            name, name, ttype(array.shape, "f32"), ttype(array.shape, dtype)))
        return "%%%s_h" % name

    def op(self, what, text, shape, dtype, ref, tol):
        n = len(self.results)
        self.lines.append(text.replace("%r", "%%r%d" % n))
        self.lines.append("%%w%d = braid.cast %%r%d : %s -> %s" % (
            n, n, ttype(shape, dtype), ttype(shape, "f32")))
        self.results.append(("%%w%d" % n, shape, what, np.asarray(ref, np.float32), tol))

    def module(self):
        types = ", ".join(ttype(s, "f32") for _, s, _, _, _ in self.results)
        body = "\n".join("  " + l for l in self.lines)
        return "func.func @half(%s) -> (%s) {\n%s\n  return %s : %s\n}\n" % (
            ", ".join(self.args), types, body,
            ", ".join(n for n, _, _, _, _ in self.results), types)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def kernels(rng):
    s = Step()
    # Casts: ties to even, specials, overflow.
    one = np.float32(1.0)
    ties = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 1 + 2.0 ** -8 + 2.0 ** -20,
                     np.inf, -np.inf, np.nan, 3.4028235e38, 0.0, 1e-40], np.float32)
    want = np.array([one, 1 + 2.0 ** -6, -one, 1 + 2.0 ** -7, np.inf, -np.inf, np.nan, np.inf,
                     0.0, bf16(np.float32(1e-40))[0]], np.float32)
    s.op("cast f32 -> bf16", "%%r = braid.cast %s : %s -> %s" % (
        s.input(ties, "f32"), ttype(ties.shape, "f32"), ttype(ties.shape, "bf16")),
        ties.shape, "bf16", want, 0)
    halfties = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 70000.0, 6e-8], np.float32)
    s.op("cast f32 -> f16", "%%r = braid.cast %s : %s -> %s" % (
        s.input(halfties, "f32"), ttype(halfties.shape, "f32"), ttype(halfties.shape, "f16")),
        halfties.shape, "f16", [1.0, 1 + 2.0 ** -9, np.inf, f16(6e-8)], 0)

    for dt in ("bf16", "f16"):
        r = ROUND[dt]
        m, k, n = 5, 7, 6
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        s.op("matmul " + dt, "%%r = braid.matmul %s, %s : %s, %s -> %s" % (
            s.input(a, dt), s.input(b, dt), ttype(a.shape, dt), ttype(b.shape, dt), ttype((m, n), dt)),
            (m, n), dt, r(r(a).astype(np.float64) @ r(b).astype(np.float64)), ULP[dt])
        x, y = rng.standard_normal((4, 9)).astype(np.float32), rng.standard_normal((4, 9)).astype(np.float32)
        t = ttype(x.shape, dt)
        s.op("add " + dt, "%%r = braid.add %s, %s : %s" % (s.input(x, dt), s.input(y, dt), t),
             x.shape, dt, r(r(x).astype(np.float64) + r(y)), ULP[dt])
        s.op("mul " + dt, "%%r = braid.mul %s, %s : %s" % (s.input(x, dt), s.input(y, dt), t),
             x.shape, dt, r(r(x).astype(np.float64) * r(y)), ULP[dt])
        s.op("softmax " + dt, "%%r = braid.softmax %s dim = 1 : %s" % (s.input(x, dt), t),
             x.shape, dt, r(softmax(r(x).astype(np.float64))), ULP[dt])
        s.op("reduce_sum " + dt, "%%r = braid.reduce_sum %s dims = [1] : %s -> %s" % (
            s.input(x, dt), t, ttype((4,), dt)), (4,), dt, r(r(x).astype(np.float64).sum(axis=1)),
            ULP[dt])
        # f32 accumulation: 4096 ones.
        ones = np.ones((1, 4096), np.float32)
        s.op("reduce_sum of 4096 ones in " + dt, "%%r = braid.reduce_sum %s dims = [1] : %s -> %s"
             % (s.input(ones, dt), ttype(ones.shape, dt), ttype((1,), dt)), (1,), dt, [4096.0], 0)
        s.op("matmul over 4096 ones in " + dt, "%%r = braid.matmul %s, %s {transpose_b} : %s, %s -> %s"
             % (s.input(ones, dt), s.input(ones, dt), ttype(ones.shape, dt), ttype(ones.shape, dt),
                ttype((1, 1), dt)), (1, 1), dt, [[4096.0]], 0)
    # Byte-moving ops keep the bits: a transpose of bf16 values.
    x = rng.standard_normal((3, 5)).astype(np.float32)
    s.op("transpose bf16", "%%r = braid.transpose %s permutation = [1, 0] : %s -> %s" % (
        s.input(x, "bf16"), ttype(x.shape, "bf16"), ttype((5, 3), "bf16")), (5, 3), "bf16",
        bf16(x).T, 0)
    return s


COLLECTIVES = """
shard.grid @world(shape = 2)
func.func @collectives(%x: tensor<4x3xf32> {{braid.role = #braid.role<batch "x">}})
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>) {{
  %h = braid.cast %x : tensor<4x3xf32> -> tensor<4x3x{T}>
  %sum = braid.all_reduce %h on @world grid_axes = [0] reduction = sum : tensor<4x3x{T}>
  %avg = braid.all_reduce %h on @world grid_axes = [0] reduction = avg : tensor<4x3x{T}>
  %max = braid.all_reduce %h on @world grid_axes = [0] reduction = max : tensor<4x3x{T}>
  %rs = braid.reduce_scatter %h on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<4x3x{T}> -> tensor<2x3x{T}>
  %ag = braid.all_gather %h on @world grid_axes = [0] gather_dim = 0 : tensor<4x3x{T}> -> tensor<8x3x{T}>
  %0 = braid.cast %sum : tensor<4x3x{T}> -> tensor<4x3xf32>
  %1 = braid.cast %avg : tensor<4x3x{T}> -> tensor<4x3xf32>
  %2 = braid.cast %max : tensor<4x3x{T}> -> tensor<4x3xf32>
  %3 = braid.cast %rs : tensor<2x3x{T}> -> tensor<2x3xf32>
  %4 = braid.cast %ag : tensor<8x3x{T}> -> tensor<8x3xf32>
  return %0, %1, %2, %3, %4 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>
}}
"""


def collectives(out, dt, rng):
    r = ROUND[dt]
    x = rng.standard_normal((8, 3)).astype(np.float32) * 10
    mlir, plan = os.path.join(out, "c-%s.mlir" % dt), os.path.join(out, "c-%s.plan" % dt)
    data = os.path.join(out, "c-%s.npz" % dt)
    with open(mlir, "w") as f:
        f.write(COLLECTIVES.format(T=dt))
    np.savez(data, x=x)
    braidtest.compile_step(mlir, plan, "--no-overlap")
    save = os.path.join(out, "c-%s-{rank}.npz" % dt)
    braidtest.braid_run(plan, ranks=2, args=["--data", data, "--save", save])
    h = r(x).reshape(2, 4, 3).astype(np.float64)
    total = r(h[0] + h[1])
    want = [total, r(total / 2), r(np.maximum(h[0], h[1])), None, r(x)]
    for rank in (0, 1):
        got = np.load(save.replace("{rank}", str(rank)))
        want[3] = total[2 * rank:2 * rank + 2]
        for i, (name, w) in enumerate(zip(("all_reduce sum", "all_reduce avg", "all_reduce max", "reduce_scatter", "all_gather"), want)):
            g = got["result%d" % i]
            check(g.shape == w.shape and np.array_equal(g, w.astype(np.float32)),
                  "%s %s on rank %d: max difference %s" % (
                      dt, name, rank, np.abs(g - w).max() if g.shape == w.shape else g.shape))


def folded(out, dt, rng):
    """braid-fuse-kernels' folds in half precision: the scale, mask and
    softmax of attention scores and their backward, and a bias_add with its
    gelu and gelu_backward, compiled with and without the folds, give the
    same bits (the fused kernels round what they keep in f32 between the
    ops they stand for, as storing it would)."""
    t4, t2, tb = ttype((2, 2, 6, 6), dt), ttype((4, 8), dt), ttype((8,), dt)
    f4, f2 = ttype((2, 2, 6, 6), "f32"), ttype((4, 8), "f32")
    inputs = {"s": rng.standard_normal((2, 2, 6, 6)).astype(np.float32),
              "g": rng.standard_normal((2, 2, 6, 6)).astype(np.float32),
              "x": rng.standard_normal((4, 8)).astype(np.float32),
              "b": rng.standard_normal(8).astype(np.float32),
              "dy": rng.standard_normal((4, 8)).astype(np.float32)}
    shapes = {"s": f4, "g": f4, "x": f2, "b": ttype((8,), "f32"), "dy": f2}
    args = ", ".join('%%%s: %s {braid.role = #braid.role<batch "%s">}' % (k, shapes[k], k)
                     for k in inputs)
    lines = ["%%%s_h = braid.cast %%%s : %s -> %s" % (k, k, shapes[k],
                                                      shapes[k].replace("f32", dt))
             for k in inputs]
    lines += [
        "%%sc = braid.scale %%s_h by 3.000000e-01 : %s" % t4,
        "%%m = braid.causal_mask %%sc fill = 0xFFF0000000000000 : %s" % t4,
        "%%p = braid.softmax %%m dim = 3 : %s" % t4,
        "%%d = braid.softmax_backward %%g_h, %%p dim = 3 : %s" % t4,
        "%%dm = braid.causal_mask %%d fill = 0.000000e+00 : %s" % t4,
        "%%ds = braid.scale %%dm by 3.000000e-01 : %s" % t4,
        "%%h = braid.bias_add %%x_h, %%b_h : %s, %s" % (t2, tb),
        "%%y = braid.gelu %%h {approximate_tanh} : %s" % t2,
        "%%dx = braid.gelu_backward %%dy_h, %%h {approximate_tanh} : %s" % t2,
    ]
    results = [("p", t4, f4), ("ds", t4, f4), ("y", t2, f2), ("dx", t2, f2)]
    lines += ["%%%s_w = braid.cast %%%s : %s -> %s" % (r, r, t, f) for r, t, f in results]
    body = "\n".join("  " + l for l in lines)
    types = ", ".join(f for _, _, f in results)
    mlir = os.path.join(out, "folded-%s.mlir" % dt)
    with open(mlir, "w") as f:
        f.write("func.func @folded(%s) -> (%s) {\n%s\n  return %s : %s\n}\n" % (
            args, types, body, ", ".join("%%%s_w" % r for r, _, _ in results), types))
    data = os.path.join(out, "folded-%s.npz" % dt)
    np.savez(data, **inputs)
    got = {}
    for name, flags in (("fused", []), ("unfused", ["--fuse=false"])):
        plan = os.path.join(out, "folded-%s-%s.plan" % (dt, name))
        braidtest.compile_step(mlir, plan, "--no-overlap", *flags)
        save = os.path.join(out, "folded-%s-%s.npz" % (dt, name))
        braidtest.braid_run(plan, args=["--data", data, "--save", save])
        got[name] = dict(np.load(save))
    ir = braidtest.run([braidtest.tool("braid-compile"), mlir, "--no-overlap",
                        "--emit=mlir"]).stdout
    check("causal, scale = 3.000000e-01" in ir and "braid.bias_add" not in ir,
          "%s: the scale, masks and bias fold" % dt)
    same = all(np.array_equal(got["fused"][k], got["unfused"][k]) for k in got["unfused"])
    check(same, "%s: folded and unfolded kernels give the same bits" % dt)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    s = kernels(rng)
    mlir, plan = os.path.join(out, "k.mlir"), os.path.join(out, "k.plan")
    data, save = os.path.join(out, "d.npz"), os.path.join(out, "o.npz")
    with open(mlir, "w") as f:
        f.write(s.module())
    np.savez(data, **s.inputs)
    braidtest.compile_step(mlir, plan, "--no-overlap")
    braidtest.braid_run(plan, args=["--data", data, "--save", save])
    results = np.load(save)
    for i, (_, shape, what, ref, tol) in enumerate(s.results):
        got = results["result%d" % i]
        if got.shape != tuple(shape):
            check(False, "%s: shape %s, expected %s" % (what, got.shape, shape))
            continue
        same_nan = np.array_equal(np.isnan(got), np.isnan(ref))
        finite = np.isfinite(ref)
        inf_ok = np.array_equal(got[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
        scale = np.maximum(np.abs(ref[finite]), 1e-30)
        err = float((np.abs(got[finite] - ref[finite]) / scale).max()) if finite.any() else 0.0
        check(same_nan and inf_ok and err <= tol,
              "%s: max relative difference %.3g (tolerance %g)" % (what, err, tol))
    for dt in ("bf16", "f16"):
        collectives(out, dt, rng)
        folded(out, dt, rng)
    print("kernels-half: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
