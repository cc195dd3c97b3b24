# braid.collective_permute on the cpu backend (MPI), on every rank: on 2
# and 4 ranks over the whole world (offsets 1, -1 and 3), and on a 2x2 grid
# over each axis (groups of two), synchronous (--no-overlap) and as a start
# and wait (the default pipeline). Rank r of a group of n must end with the
# tensor of rank (r - offset) mod n. --save keeps rank 0's results only, so
# the step all-gathers every permuted tensor: rank 0 then holds what each
# rank received, and each rank's is checked against numpy. The values are
# copied, not computed: they must match exactly.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

WORLD = """
shard.grid @world(shape = {R})
func.func @permute(%x: tensor<1x{N}xf32> {{braid.role = #braid.role<batch "x">}})
    -> (tensor<{R}x{N}xf32>, tensor<{R}x{N}xf32>, tensor<{R}x{N}xf32>) {{
  %a = braid.collective_permute %x on @world grid_axes = [0] offset = 1 : tensor<1x{N}xf32> -> tensor<1x{N}xf32>
  %b = braid.collective_permute %x on @world grid_axes = [0] offset = -1 : tensor<1x{N}xf32> -> tensor<1x{N}xf32>
  %c = braid.collective_permute %x on @world grid_axes = [0] offset = 3 : tensor<1x{N}xf32> -> tensor<1x{N}xf32>
  %ga = braid.all_gather %a on @world grid_axes = [0] gather_dim = 0 : tensor<1x{N}xf32> -> tensor<{R}x{N}xf32>
  %gb = braid.all_gather %b on @world grid_axes = [0] gather_dim = 0 : tensor<1x{N}xf32> -> tensor<{R}x{N}xf32>
  %gc = braid.all_gather %c on @world grid_axes = [0] gather_dim = 0 : tensor<1x{N}xf32> -> tensor<{R}x{N}xf32>
  return %ga, %gb, %gc : tensor<{R}x{N}xf32>, tensor<{R}x{N}xf32>, tensor<{R}x{N}xf32>
}}
"""

GRID = """
shard.grid @grid(shape = 2x2)
func.func @permute(%x: tensor<1x{N}xf32> {{braid.role = #braid.role<batch "x">}})
    -> (tensor<4x{N}xf32>, tensor<4x{N}xf32>) {{
  %a = braid.collective_permute %x on @grid grid_axes = [0] offset = 1 : tensor<1x{N}xf32> -> tensor<1x{N}xf32>
  %b = braid.collective_permute %x on @grid grid_axes = [1] offset = 1 : tensor<1x{N}xf32> -> tensor<1x{N}xf32>
  %ga = braid.all_gather %a on @grid grid_axes = [0, 1] gather_dim = 0 : tensor<1x{N}xf32> -> tensor<4x{N}xf32>
  %gb = braid.all_gather %b on @grid grid_axes = [0, 1] gather_dim = 0 : tensor<1x{N}xf32> -> tensor<4x{N}xf32>
  return %ga, %gb : tensor<4x{N}xf32>, tensor<4x{N}xf32>
}}
"""


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures = 0
    N = 5

    def run(name, text, R, expected):
        nonlocal failures
        rng = np.random.default_rng(R)
        x = rng.standard_normal((R, 1, N)).astype(np.float32)  # x[r]: rank r's
        mlir = os.path.join(out, name + ".mlir")
        with open(mlir, "w") as f:
            f.write(text.format(R=R, N=N))
        data = os.path.join(out, name + ".npz")
        np.savez(data, x=x.reshape(R, N))
        save = os.path.join(out, name + "-out.npz")
        for flags, form in ((["--no-overlap"], "sync"), ([], "start")):
            plan = os.path.join(out, name + "-" + form + ".plan")
            braidtest.compile_step(mlir, plan, *flags)
            dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
            if ("collective_permute_start" in dump) != (form == "start"):
                print("FAIL %s: the %s plan has the wrong form" % (name, form))
                failures += 1
            braidtest.braid_run(plan, ranks=R, args=["--data", data, "--save", save,
                                                     "--timeout", "60"])
            got = np.load(save)
            for k, (what, sources) in enumerate(expected):
                value = got["result%d" % k]
                ref = np.stack([x[s][0] for s in sources])
                ok = value.shape == ref.shape and np.array_equal(value, ref)
                print("%s %s (%s form) %s: rank r holds rank %s's tensor" % (
                    "ok  " if ok else "FAIL", name, form, what, sources))
                failures += not ok

    for R in (2, 4):
        run("world%d" % R, WORLD, R, [
            ("offset 1", [(r - 1) % R for r in range(R)]),
            ("offset -1", [(r + 1) % R for r in range(R)]),
            ("offset 3", [(r - 3) % R for r in range(R)])])
    # On the 2x2 grid rank r = 2 * i + j: axis 0 pairs ranks j and 2 + j,
    # axis 1 pairs 2 * i and 2 * i + 1.
    run("grid2x2", GRID, 4, [
        ("axis 0, offset 1", [2, 3, 0, 1]),
        ("axis 1, offset 1", [1, 0, 3, 2])])
    print("collective-permute: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
