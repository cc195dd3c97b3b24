# A step that returns its state in another order than it takes it: the
# updated `a` comes back as `b` and the updated `b` as `a` (found by
# utils/fuzz-compiler.py, which swapped two result roles). The updates are
# made in place, so copying the carried results back to their arguments is
# a cycle: a <- (the bytes of b), b <- (the bytes of a). braid-run copies
# them as one parallel assignment, through host memory where they form a
# cycle; copied one after the other, the second copy read what the first
# had written, and --check-memory reported it. Checked on 1 rank with
# --check-memory: after one step a = b0 - lr g and b = a0 - lr g, exactly;
# after two, a = a0 - 2 lr g.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

STEP = """
shard.grid @world(shape = 1)
func.func @swap(
    %a: tensor<4xf32> {braid.role = #braid.role<parameter "a">},
    %b: tensor<4xf32> {braid.role = #braid.role<parameter "b">},
    %ma: tensor<4xf32> {braid.role = #braid.role<optimizer_state "a.momentum">},
    %mb: tensor<4xf32> {braid.role = #braid.role<optimizer_state "b.momentum">},
    %g: tensor<4xf32> {braid.role = #braid.role<batch "g">})
    -> (tensor<4xf32> {braid.role = #braid.role<parameter "b">},
        tensor<4xf32> {braid.role = #braid.role<parameter "a">},
        tensor<4xf32> {braid.role = #braid.role<optimizer_state "a.momentum">},
        tensor<4xf32> {braid.role = #braid.role<optimizer_state "b.momentum">}) {
  %na:2 = braid.sgd %a, %g, %ma lr = 0.5 momentum = 0.0 weight_decay = 0.0 : tensor<4xf32>
  %nb:2 = braid.sgd %b, %g, %mb lr = 0.5 momentum = 0.0 weight_decay = 0.0 : tensor<4xf32>
  return %na#0, %nb#0, %na#1, %nb#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlir, plan = os.path.join(out, "swap.mlir"), os.path.join(out, "swap.plan")
    with open(mlir, "w") as f:
        f.write(STEP)
    braidtest.compile_step(mlir, plan)
    a0 = np.array([1, 2, 3, 4], np.float32)
    b0 = np.array([10, 20, 30, 40], np.float32)
    g = np.array([2, 4, 6, 8], np.float32)
    zeros = np.zeros(4, np.float32)
    params, data = os.path.join(out, "p.npz"), os.path.join(out, "d.npz")
    np.savez(params, **{"a": a0, "b": b0, "a.momentum": zeros, "b.momentum": zeros})
    np.savez(data, g=g)
    failures = 0
    for steps, want_a, want_b in ((1, b0 - 0.5 * g, a0 - 0.5 * g), (2, a0 - g, b0 - g)):
        save = os.path.join(out, "s%d.npz" % steps)
        braidtest.braid_run(plan, args=["--steps", str(steps), "--params", params, "--data", data,
                                        "--check-memory", "--save", save])
        got = np.load(save)
        ok = np.array_equal(got["a"], want_a) and np.array_equal(got["b"], want_b)
        print("%s %d step%s: a %s, b %s" % ("ok  " if ok else "FAIL", steps,
                                            "s" if steps > 1 else "", got["a"], got["b"]))
        failures += not ok
    print("carry-permuted: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
