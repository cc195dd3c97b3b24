# Every collective of the cpu backend (MPI) on 2 and 4 ranks, synchronous
# and started/waited, against numpy: all_reduce (sum, avg, max, min; f32 and
# i64; a bucket of two), reduce_scatter (sum and avg), all_gather, all_to_all,
# collective_broadcast, and send/recv; reduce_scatter, all_gather and
# all_to_all also along inner dimensions (dimension 1 of 3, and the last),
# which the runtime packs through staging memory; axis_index (each rank's
# own index); and send/recv (on a one-rank group: every rank sends
# to itself, since one SPMD program names one peer index on every rank).
# Every rank saves its results (--save with {rank}) and every rank's are
# checked: shapes exactly, values within 1e-6 relative (a float32 sum of at
# most 4 terms rounds to 2 ulp, 2.4e-7; a wrong chunk, root or peer is off
# by O(1)).
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

STEP = """
shard.grid @world(shape = {R})
shard.grid @pairs(shape = {R}x1)
func.func @collectives(
    %x: tensor<{N}x3xf32> {{braid.role = #braid.role<batch "x">}},
    %y: tensor<3xf32> {{braid.role = #braid.role<batch "y">}},
    %i: tensor<4xi64> {{braid.role = #braid.role<batch "i">}},
    %z: tensor<2x{W}x3xf32> {{braid.role = #braid.role<batch "z">}})
    -> (tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>,
        tensor<4xi64>, tensor<3xf32>, tensor<2x3xf32>, tensor<{G}x3xf32>,
        tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>,
        tensor<{N}x3xf32>, tensor<3xf32>,
        tensor<2x2x3xf32>, tensor<2x{WG}x3xf32>, tensor<2x{W}x3xf32>, tensor<2x{W}x{L}xf32>,
        tensor<2x{W}x3xf32>, tensor<i64>, tensor<2x3xf32>) {{
  %sum = braid.all_reduce %x on @world grid_axes = [0] reduction = sum : tensor<{N}x3xf32>
  %avg = braid.all_reduce %x on @world grid_axes = [0] reduction = avg : tensor<{N}x3xf32>
  %max = braid.all_reduce %x on @world grid_axes = [0] reduction = max : tensor<{N}x3xf32>
  %min = braid.all_reduce %x on @world grid_axes = [0] reduction = min : tensor<{N}x3xf32>
  %isum = braid.all_reduce %i on @world grid_axes = [0] reduction = sum : tensor<4xi64>
  %bucket:2 = braid.all_reduce %y, %x on @world grid_axes = [0] reduction = avg : tensor<3xf32>, tensor<{N}x3xf32>
  %rs = braid.reduce_scatter %x on @world grid_axes = [0] reduction = sum scatter_dim = 0 : tensor<{N}x3xf32> -> tensor<2x3xf32>
  %ag = braid.all_gather %x on @world grid_axes = [0] gather_dim = 0 : tensor<{N}x3xf32> -> tensor<{G}x3xf32>
  %a2a = braid.all_to_all %x on @world grid_axes = [0] split_dim = 0 concat_dim = 0 : tensor<{N}x3xf32> -> tensor<{N}x3xf32>
  %bc = braid.collective_broadcast %x on @world grid_axes = [0] root = 1 : tensor<{N}x3xf32> -> tensor<{N}x3xf32>
  %rs1 = braid.reduce_scatter %z on @world grid_axes = [0] reduction = sum scatter_dim = 1 : tensor<2x{W}x3xf32> -> tensor<2x2x3xf32>
  %ag1 = braid.all_gather %z on @world grid_axes = [0] gather_dim = 1 : tensor<2x{W}x3xf32> -> tensor<2x{WG}x3xf32>
  %a2a1 = braid.all_to_all %z on @world grid_axes = [0] split_dim = 1 concat_dim = 1 : tensor<2x{W}x3xf32> -> tensor<2x{W}x3xf32>
  %ag2 = braid.all_gather %z on @world grid_axes = [0] gather_dim = 2 : tensor<2x{W}x3xf32> -> tensor<2x{W}x{L}xf32>
  %fz = braid.all_gather_start %rs1 on @world grid_axes = [0] gather_dim = 1 : tensor<2x2x3xf32> -> !braid.future<tensor<2x{W}x3xf32>>
  %idx = braid.axis_index on @world grid_axes = [0] : tensor<i64>
  %rsa = braid.reduce_scatter %x on @world grid_axes = [0] reduction = avg scatter_dim = 0 : tensor<{N}x3xf32> -> tensor<2x3xf32>
  %f = braid.all_reduce_start %x on @world grid_axes = [0] reduction = sum : tensor<{N}x3xf32>
  %s = braid.send_start %x on @pairs grid_axes = [1] peer = 0 : tensor<{N}x3xf32> -> !braid.future<>
  %r = braid.recv_start on @pairs grid_axes = [1] peer = 0 : !braid.future<tensor<{N}x3xf32>>
  braid.wait %s : !braid.future<>
  %recv = braid.wait %r : !braid.future<tensor<{N}x3xf32>>
  %async = braid.wait %f : !braid.future<tensor<{N}x3xf32>>
  %agz = braid.wait %fz : !braid.future<tensor<2x{W}x3xf32>>
  return %sum, %avg, %max, %min, %isum, %bucket#0, %rs, %ag, %a2a, %bc, %async, %recv, %bucket#1, %y,
      %rs1, %ag1, %a2a1, %ag2, %agz, %idx, %rsa
      : tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>,
        tensor<4xi64>, tensor<3xf32>, tensor<2x3xf32>, tensor<{G}x3xf32>,
        tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>, tensor<{N}x3xf32>,
        tensor<{N}x3xf32>, tensor<3xf32>,
        tensor<2x2x3xf32>, tensor<2x{WG}x3xf32>, tensor<2x{W}x3xf32>, tensor<2x{W}x{L}xf32>,
        tensor<2x{W}x3xf32>, tensor<i64>, tensor<2x3xf32>
}}
"""


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures = 0
    for R in (2, 4):
        N = 2 * R
        rng = np.random.default_rng(R)
        x = rng.standard_normal((R, N, 3)).astype(np.float32)   # x[r]: rank r's
        y = rng.standard_normal((R, 3)).astype(np.float32)
        i = rng.integers(-100, 100, (R, 4)).astype(np.int64)
        W = 2 * R
        # Quarters of small integers: their sums are exact in float32, in
        # any order.
        z = (rng.integers(-8, 9, (R, 2, W, 3)) / 4).astype(np.float32)
        mlir = os.path.join(out, "c%d.mlir" % R)
        with open(mlir, "w") as f:
            f.write(STEP.format(R=R, N=N, G=N * R, W=W, WG=W * R, L=3 * R))
        data = os.path.join(out, "c%d.npz" % R)
        np.savez(data, x=x.reshape(R * N, 3), y=y.reshape(R * 3), i=i.reshape(R * 4),
                 z=np.concatenate(list(z), axis=0))
        save = os.path.join(out, "c%d-out-{rank}.npz" % R)
        for flags in ([], ["--no-overlap"]):
            plan = os.path.join(out, "c%d.plan" % R)
            braidtest.compile_step(mlir, plan, *flags)
            for r in range(R):  # no result of an earlier run may pass for this one's
                if os.path.exists(save.replace("{rank}", str(r))):
                    os.remove(save.replace("{rank}", str(r)))
            braidtest.braid_run(plan, ranks=R, args=["--data", data, "--save", save,
                                                     "--timeout", "60"])
            names = ["sum", "avg", "max", "min", "i64 sum", "bucket[0]", "reduce_scatter",
                     "all_gather", "all_to_all", "broadcast", "started all_reduce",
                     "send/recv", "bucket[1]", "input", "reduce_scatter dim 1",
                     "all_gather dim 1", "all_to_all dim 1", "all_gather last dim",
                     "started all_gather dim 1 of the reduce_scatter", "axis_index",
                     "reduce_scatter avg"]
            for r in range(R):
                got = np.load(save.replace("{rank}", str(r)))
                # Rank r's chunk r of the sum; of all_to_all, chunk r of
                # every rank's x, in rank order.
                a2a = np.concatenate([x[s][2 * r:2 * r + 2] for s in range(R)])
                expected = [x.sum(0), x.mean(0), x.max(0), x.min(0), i.sum(0), y.mean(0),
                            x.sum(0)[2 * r:2 * r + 2], x.reshape(R * N, 3), a2a, x[1],
                            x.sum(0), x[r], x.mean(0), y[r],
                            z.sum(0)[:, 2 * r:2 * r + 2], np.concatenate(list(z), axis=1),
                            np.concatenate([z[s][:, 2 * r:2 * r + 2] for s in range(R)], axis=1),
                            np.concatenate(list(z), axis=2), z.sum(0),
                            np.array(r, np.int64), x.mean(0)[2 * r:2 * r + 2]]
                for k, (name, ref) in enumerate(zip(names, expected)):
                    value = got["result%d" % k]
                    ok = (value.shape == ref.shape and value.dtype == ref.dtype and
                          braidtest.max_rel_diff(value, ref) <= 1e-6)
                    print("%s %d ranks %s, rank %d: %s" % (
                        "ok  " if ok else "FAIL", R, " ".join(flags) or "overlap", r, name))
                    failures += not ok
    print("collectives: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
