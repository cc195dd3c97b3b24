# braid-run --threads: the cpu backend's loops split over a pool of
# threads (CpuParallel.h), its products too (in blocks of rows or columns,
# each a single-threaded BLAS call; CpuKernels.cpp). Arrays large
# enough to be split (256 x 1024) through gelu, its backward, softmax over
# rows and columns, log_softmax, braid.unary, add, mul, scale, bias_add,
# softmax's backward, layer norm and its backward, reductions over the
# leading and the trailing dimension, transpose, slice, broadcast, the
# causal mask, AdamW and SGD, batched matmuls of attention's size (the
# batch split over the threads, heads read through permutations) and larger
# products split into blocks, transposed or not: the
# results with 2
# and 3 threads equal those with 1 bit for bit (each element is computed
# alike, whichever thread takes it), except the products' (each block is a
# BLAS call of its own, and OpenBLAS picks its kernels and their edge
# handling by the call's sizes: with its Haswell kernels a block's element
# adds its K terms in another grouping than the whole product's), which are
# within the bound of two summation orders of K terms,
# |d| <= 2 K u (|A| |B|) elementwise (u = 2^-24); and those of one thread
# are right (numpy, float64). The profile's header says how many threads ran, and a
# count outside 1 to 1024 is refused by name.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t | FileCheck %s
# CHECK: threads: 1 thread per kernel against numpy: 0 failed
# CHECK: threads: 2 threads per kernel as 1 (bit for bit, products within 2 K u |A||B|): 0 failed
# CHECK: threads: 3 threads per kernel as 1 (bit for bit, products within 2 K u |A||B|): 0 failed
# RUN: not braid-run --threads 0 x.plan 2>&1 | FileCheck %s --check-prefix=BAD
# BAD: braid-run: error: --threads must be a positive integer
# RUN: not braid-run --threads 5000 x.plan 2>&1 | FileCheck %s --check-prefix=BIG
# BIG: braid-run: error: --threads must be at most 1024, but is 5000

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402
from kernels import Step, gelu, gelu_grad, randn, softmax  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    shape = (256, 1024)
    t = "tensor<256x1024xf32>"
    s = Step()
    x, g = randn(rng, *shape), randn(rng, *shape)
    for approx in (False, True):
        attr = " {approximate_tanh}" if approx else ""
        s.op("%%r = braid.gelu %s%s : %s" % (s.input(x), attr, t), [gelu(x, approx)])
        s.op("%%r = braid.gelu_backward %s, %s%s : %s" % (s.input(g), s.input(x), attr, t),
             [g * gelu_grad(x, approx)])
    for d in (0, 1):
        sm = softmax(x.astype(np.float64), d)
        s.op("%%r = braid.softmax %s dim = %d : %s" % (s.input(x), d, t), [sm])
        s.op("%%r = braid.log_softmax %s dim = %d : %s" % (s.input(x), d, t), [np.log(sm)])
    for kind, f in (("exp", np.exp), ("tanh", np.tanh),
                    ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))):
        s.op("%%r = braid.unary %s %s : %s" % (kind, s.input(x), t), [f(x.astype(np.float64))])
    for name, f in (("add", np.add), ("mul", np.multiply)):
        s.op("%%r = braid.%s %s, %s : %s" % (name, s.input(x), s.input(g), t), [f(x, g)])
    s.op("%%r = braid.scale %s by 2.500000e-01 : %s" % (s.input(x), t), [x * 0.25])
    bias = randn(rng, shape[1])
    s.op("%%r = braid.bias_add %s, %s : %s, tensor<1024xf32>" % (s.input(x), s.input(bias), t),
         [x + bias])
    sm = softmax(x.astype(np.float64), 1)
    s.op("%%r = braid.softmax_backward %s, %s dim = 1 : %s" % (
        s.input(g), s.input(sm.astype(np.float32)), t),
        [sm * (g - (g * sm).sum(axis=1, keepdims=True))])
    gamma, beta = randn(rng, shape[1]), randn(rng, shape[1])
    xd = x.astype(np.float64)
    mu, var = xd.mean(axis=1, keepdims=True), xd.var(axis=1, keepdims=True)
    rs = 1 / np.sqrt(var + 1e-5)
    s.op("%%r:3 = braid.layer_norm %s, %s, %s eps = 1.000000e-05 : %s, tensor<1024xf32> -> "
         "tensor<256xf32>" % (s.input(x), s.input(gamma), s.input(beta), t),
         [(xd - mu) * rs * gamma + beta, mu.reshape(256), rs.reshape(256)], tol=1e-4)
    # Layer norm's backward: dx by rows, gamma's and beta's gradients by
    # columns, each summed over the rows in order.
    dy = randn(rng, *shape)
    xhat = (xd - mu) * rs
    dyg = dy.astype(np.float64) * gamma
    dxr = rs * (dyg - dyg.mean(axis=1, keepdims=True)
                - xhat * (dyg * xhat).mean(axis=1, keepdims=True))
    s.op("%%r:3 = braid.layer_norm_backward %s, %s, %s, %s, %s : %s, tensor<256xf32>, "
         "tensor<1024xf32>" % (s.input(dy), s.input(x), s.input(mu.reshape(256).astype(np.float32)),
                               s.input(rs.reshape(256).astype(np.float32)), s.input(gamma), t),
         [dxr, (dy * xhat).sum(axis=0), dy.sum(axis=0)], tol=1e-4)
    # Reductions over the leading and the trailing dimension, and the
    # strided copies.
    s.op("%%r = braid.reduce_sum %s dims = [0] : %s -> tensor<1024xf32>" % (s.input(x), t),
         [xd.sum(axis=0)], tol=1e-4)
    s.op("%%r = braid.reduce_sum %s dims = [1] : %s -> tensor<256xf32>" % (s.input(x), t),
         [xd.sum(axis=1)], tol=1e-4)
    s.op("%%r = braid.transpose %s permutation = [1, 0] : %s -> tensor<1024x256xf32>" % (
        s.input(x), t), [x.T])
    s.op("%%r = braid.slice %s offsets = [0, 512] : %s -> tensor<256x512xf32>" % (
        s.input(x), t), [x[:, 512:]])
    s.op("%%r = braid.broadcast %s dims = [0] : tensor<1024xf32> -> %s" % (
        s.input(bias), t), [np.broadcast_to(bias, shape)])
    sq = randn(rng, 64, 64, 64)
    s.op("%%r = braid.causal_mask %s fill = -1.000000e+09 : tensor<64x64x64xf32>" % s.input(sq),
         [np.where(np.triu(np.ones((64, 64), bool), 1), -1e9, sq)])
    # Batched matmuls of attention's size: the batch split over the threads,
    # each product one single-threaded BLAS call; the heads read in place
    # through the permutations braid-fuse-kernels writes.
    # The products' |A| |B| and K, by result index: their bound.
    products = {}

    def product(a, b):
        """Records the last result as the product a @ b (float64 arrays)."""
        products[len(s.results) - 1] = (np.abs(a) @ np.abs(b), a.shape[-1])

    qa, ka = randn(rng, 4, 64, 8, 32), randn(rng, 4, 64, 8, 32)
    s.op("%%r = braid.matmul %s, %s {lhs_permutation = array<i64: 0, 2, 1, 3>, "
         "rhs_permutation = array<i64: 0, 2, 3, 1>} : tensor<4x64x8x32xf32>, "
         "tensor<4x64x8x32xf32> -> tensor<4x8x64x64xf32>" % (s.input(qa), s.input(ka)),
         [qa.astype(np.float64).transpose(0, 2, 1, 3) @ ka.astype(np.float64).transpose(0, 2, 3, 1)],
         tol=1e-4)
    product(qa.astype(np.float64).transpose(0, 2, 1, 3), ka.astype(np.float64).transpose(0, 2, 3, 1))
    pa, va = randn(rng, 32, 64, 64), randn(rng, 32, 64, 32)
    s.op("%%r = braid.matmul %s, %s : tensor<32x64x64xf32>, tensor<32x64x32xf32> -> "
         "tensor<32x64x32xf32>" % (s.input(pa), s.input(va)),
         [pa.astype(np.float64) @ va.astype(np.float64)], tol=1e-4)
    product(pa.astype(np.float64), va.astype(np.float64))
    # Larger products: split into blocks of 64 rows of the result (or
    # columns, where there are more of those), one single-threaded BLAS call
    # each; transposed operands, a count of rows that is no multiple of 64,
    # a batch of products each split.
    for (m_, k_, n_), attr in (((512, 256, 768), ""), ((300, 200, 96), ""), ((512, 200, 96), ""),
                               ((1024, 300, 32), ""), ((640, 100, 64), ""),
                               ((96, 256, 640), ""), ((320, 192, 256), " {transpose_a}"),
                               ((256, 160, 384), " {transpose_b}")):
        la, rb = randn(rng, m_, k_), randn(rng, k_, n_)
        lin = la.T.copy() if "transpose_a" in attr else la
        rin = rb.T.copy() if "transpose_b" in attr else rb
        s.op("%%r = braid.matmul %s, %s%s : tensor<%dx%dxf32>, tensor<%dx%dxf32> -> "
             "tensor<%dx%dxf32>" % (s.input(lin), s.input(rin), attr, *lin.shape, *rin.shape,
                                    m_, n_),
             [la.astype(np.float64) @ rb.astype(np.float64)], tol=1e-4)
        product(la.astype(np.float64), rb.astype(np.float64))
    ba, bb = randn(rng, 2, 256, 128), randn(rng, 2, 128, 256)
    s.op("%%r = braid.matmul %s, %s : tensor<2x256x128xf32>, tensor<2x128x256xf32> -> "
         "tensor<2x256x256xf32>" % (s.input(ba), s.input(bb)),
         [ba.astype(np.float64) @ bb.astype(np.float64)], tol=1e-4)
    product(ba.astype(np.float64), bb.astype(np.float64))
    p, m, v = randn(rng, *shape), randn(rng, *shape), np.abs(randn(rng, *shape))
    step = np.array(3.0, np.float32)
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.95, 1e-8, 0.1
    nm = b1 * m + (1 - b1) * g.astype(np.float64)
    nv = b2 * v + (1 - b2) * g.astype(np.float64) ** 2
    npar = p * (1 - lr * wd) - lr * (nm / (1 - b1 ** 3)) / (np.sqrt(nv / (1 - b2 ** 3)) + eps)
    s.op("%%r:3 = braid.adamw %s, %s, %s, %s, %s lr = %e beta1 = %e beta2 = %e eps = %e "
         "weight_decay = %e : %s, tensor<f32>" % (
             s.input(p), s.input(g), s.input(m), s.input(v), s.input(step), lr, b1, b2, eps,
             wd, t), [npar, nm, nv], tol=1e-4)

    buf = randn(rng, *shape)
    mom, sgd_lr, sgd_wd = 0.9, 0.01, 0.1
    gi = g.astype(np.float64) + sgd_wd * p
    nb = mom * buf + gi
    s.op("%%r:2 = braid.sgd %s, %s, %s lr = %e momentum = %e weight_decay = %e {nesterov} : %s" % (
        s.input(p), s.input(g), s.input(buf), sgd_lr, mom, sgd_wd, t),
        [p - sgd_lr * (gi + mom * nb), nb], tol=1e-5)

    mlir, plan, data = (os.path.join(out, n) for n in ("threads.mlir", "threads.plan",
                                                        "threads.npz"))
    with open(mlir, "w") as f:
        f.write(s.module())
    np.savez(data, **s.inputs)
    braidtest.compile_step(mlir, plan, "--no-overlap")
    saved = {}
    for threads in (1, 2, 3):
        save = os.path.join(out, "threads-%d.npz" % threads)
        p = braidtest.braid_run(plan, args=["--steps", "2", "--data", data, "--save", save,
                                            "--threads", str(threads), "--profile"])
        want = "%d thread%s per kernel" % (threads, "" if threads == 1 else "s")
        header = [line for line in p.stdout.splitlines() if line.startswith("profile: cpu")]
        failed = 0
        if len(header) != 1 or not header[0].endswith(want):
            print("threads: the profile says %s, not %s" % (header, want))
            failed += 1
        with np.load(save) as f:
            saved[threads] = {k: f[k] for k in f.files}
        if threads == 1:
            for i, (name, ref, tol, op) in enumerate(s.results):
                got = saved[1]["result%d" % i]
                diff = braidtest.max_rel_diff(got, ref)
                if not diff <= tol:
                    print("threads: %s %s is %.3g from numpy (at most %g)" % (op, name, diff, tol))
                    failed += 1
            print("threads: 1 thread per kernel against numpy: %d failed" % failed)
        else:
            for k, ref in saved[1].items():
                got = saved[threads][k]
                index = int(k[len("result"):]) if k.startswith("result") else -1
                if index in products:
                    magnitude, terms = products[index]
                    bound = 2 * terms * 2.0 ** -24 * magnitude
                    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                    if got.shape != ref.shape or not np.all(diff <= bound):
                        print("threads: %s (a product) differs with %d threads by more than "
                              "2 K u |A||B|" % (k, threads))
                        failed += 1
                elif not np.array_equal(got, ref):
                    print("threads: %s differs with %d threads" % (k, threads))
                    failed += 1
            print("threads: %d threads per kernel as 1 (bit for bit, products within 2 K u "
                  "|A||B|): %d failed" % (threads, failed))


if __name__ == "__main__":
    main()
