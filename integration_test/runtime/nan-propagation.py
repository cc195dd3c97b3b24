# NaN and infinity through the cpu kernels, against PyTorch's own kernels on
# the same inputs: a non-finite input must give a non-finite output exactly
# where PyTorch gives one (relu(NaN) is NaN, not 0; relu's backward passes
# the gradient where the input is NaN, as threshold_backward does), and the
# finite outputs must agree within 1e-5 relative (a few float32 roundings).
# One NaN in a batch that trains to finite losses and NaN weights is the
# failure this guards against.
#
# REQUIRES: numpy, torch, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t
# RUN: env BRAID_BIN=%braid_bin BRAID_CPU_MATH=scalar %python %s %t.scalar

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from kernels import Step, ttype  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = np.array([[1.5, np.nan, -2.0, 0.0], [np.inf, -np.inf, 3.0, -0.5],
                  [0.25, -1.0, 2.0, -3.0]], np.float32)
    g = np.array([[0.5, 2.0, -1.0, 4.0], [1.0, -2.0, 0.5, 3.0],
                  [np.nan, 1.0, -1.0, 2.0]], np.float32)
    gamma = np.ones(4, np.float32)
    beta = np.zeros(4, np.float32)
    t = lambda a: torch.from_numpy(a.copy())  # noqa: E731
    s = Step()
    xi, gi = s.input(x), s.input(g)
    ga, be = s.input(gamma), s.input(beta)
    labels = np.array([2, 0, 1], np.int64)
    li = s.input(labels)
    T = ttype(x.shape)
    cases = [
        ("relu", "%%r = braid.relu %s : %s" % (xi, T), [F.relu(t(x))]),
        ("relu_backward", "%%r = braid.relu_backward %s, %s : %s" % (gi, xi, T),
         [torch.ops.aten.threshold_backward(t(g), t(x), 0.0)]),
        ("gelu", "%%r = braid.gelu %s : %s" % (xi, T), [F.gelu(t(x))]),
        ("softmax", "%%r = braid.softmax %s dim = 1 : %s" % (xi, T), [F.softmax(t(x), 1)]),
        ("log_softmax", "%%r = braid.log_softmax %s dim = 1 : %s" % (xi, T),
         [F.log_softmax(t(x), 1)]),
        ("scale", "%%r = braid.scale %s by 2.0 : %s" % (xi, T), [t(x) * 2]),
        ("add", "%%r = braid.add %s, %s : %s" % (xi, gi, T), [t(x) + t(g)]),
        ("reduce_sum", "%%r = braid.reduce_sum %s dims = [1] : %s -> %s" % (
            xi, T, ttype((3,))), [t(x).sum(1)]),
        ("matmul", "%%r = braid.matmul %s, %s {transpose_b} : %s, %s -> %s" % (
            xi, gi, T, T, ttype((3, 3))), [t(x) @ t(g).T]),
        ("cross_entropy", "%%r = braid.cross_entropy %s, %s reduction = sum : %s, %s -> %s" % (
            xi, li, T, ttype((3,), "i64"), "tensor<f32>"),
         [F.cross_entropy(t(x), torch.from_numpy(labels), reduction="sum")]),
        ("gelu_backward", "%%r = braid.gelu_backward %s, %s : %s" % (gi, xi, T),
         [torch.ops.aten.gelu_backward(t(g), t(x))]),
        ("layer_norm", "%%r:3 = braid.layer_norm %s, %s, %s eps = 1.0e-05 : %s, %s -> %s" % (
            xi, ga, be, T, ttype((4,)), ttype((3,))),
         [r.reshape(-1) if r.dim() > 1 and r.shape[-1] == 1 else r for r in
          torch.ops.aten.native_layer_norm(t(x), [4], t(gamma), t(beta), 1e-5)]),
    ]
    for name, text, refs in cases:
        s.op(text, [r.detach().numpy() for r in refs])
    mlir, plan = os.path.join(out, "nan.mlir"), os.path.join(out, "nan.plan")
    data, save = os.path.join(out, "nan.npz"), os.path.join(out, "nan-out.npz")
    with open(mlir, "w") as f:
        f.write(s.module())
    np.savez(data, **s.inputs)
    braidtest.compile_step(mlir, plan, "--no-overlap")
    braidtest.braid_run(plan, args=["--data", data, "--save", save])
    got = np.load(save)
    failures = 0
    for i, (_, ref, tol, op) in enumerate(s.results):
        value = got["result%d" % i]
        same_shape = value.shape == ref.shape
        bad_ref, bad_got = ~np.isfinite(ref), ~np.isfinite(value)
        same_mask = same_shape and (bad_ref == bad_got).all() and \
            (np.isnan(ref) == np.isnan(value)).all()
        finite = same_mask and (not (~bad_ref).any() or braidtest.max_rel_diff(
            np.where(bad_ref, 0, value), np.where(bad_ref, 0, ref)) <= tol)
        ok = same_shape and same_mask and finite
        failures += not ok
        print("%s %s: non-finite at %s (PyTorch %s)" % (
            "ok  " if ok else "FAIL", op, np.argwhere(bad_got).tolist() if same_shape else "?",
            np.argwhere(bad_ref).tolist()))
    print("nan-propagation: %d of %d ops differ from PyTorch" % (failures, len(s.results)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
