# The simulator against the cost formulas, computed here independently from
# the cluster's JSON: a step without communication takes exactly the sum of
# its kernel times (matrix products by v2's tiles), and a step of one
# collective exactly the formula's time (cost model v2: all_reduce on 1, 8,
# 16, 64 and 256 GPUs by ring, tree, NVLS and NVLS tree with the protocols,
# reduce_scatter and all_gather on 8 and 64; v1: ring and tree), to 1e-12
# relative; every other collective kind (all_gather, all_to_all,
# collective_broadcast, collective_permute, send, recv) in its synchronous
# and its start form, in a node and across nodes, to the same bound; two
# collectives on two streams share the links (the sum of their times); a
# kernel under an all-reduce runs slower by the contention factor until it
# ends.
#
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from costformulas import (VARIANTS, cluster, collective_seconds, dump_kernels,  # noqa: E402
                          kernel_seconds)


def simulate(plan, cluster_name, out):
    """A preset by name; NAME-v1 and NAME-fastnvls (costformulas.cluster)
    by a file."""
    report = out + ".report.json"
    if cluster_name.endswith(VARIANTS):
        path = out + "." + cluster_name + ".json"
        with open(path, "w") as f:
            json.dump(cluster(cluster_name), f)
        cluster_name = path
    braidtest.run([braidtest.tool("braid-run"), "--backend=sim", "--cluster=" + cluster_name,
                   plan, "--report", report])
    with open(report) as f:
        return json.load(f)


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures = 0

    # 1. No communication: kernels in f32 and bf16, one rank.
    mlir = os.path.join(out, "kernels.mlir")
    with open(mlir, "w") as f:
        f.write("""
func.func @step(%a: tensor<256x512xf32> {braid.role = #braid.role<batch "a">},
                %b: tensor<512x1024xf32> {braid.role = #braid.role<batch "b">},
                %c: tensor<64x128xbf16> {braid.role = #braid.role<batch "c">},
                %d: tensor<128x4096xbf16> {braid.role = #braid.role<batch "d">})
    -> (tensor<256x1024xf32>, tensor<64x4096xbf16>) {
  %0 = braid.matmul %a, %b : tensor<256x512xf32>, tensor<512x1024xf32> -> tensor<256x1024xf32>
  %1 = braid.gelu %0 : tensor<256x1024xf32>
  %2 = braid.add %1, %0 : tensor<256x1024xf32>
  %3 = braid.reshape %2 : tensor<256x1024xf32> -> tensor<1024x256xf32>
  %4 = braid.reshape %3 : tensor<1024x256xf32> -> tensor<256x1024xf32>
  %5 = braid.matmul %c, %d : tensor<64x128xbf16>, tensor<128x4096xbf16> -> tensor<64x4096xbf16>
  %6 = braid.relu %5 : tensor<64x4096xbf16>
  return %4, %6 : tensor<256x1024xf32>, tensor<64x4096xbf16>
}
""")
    plan = os.path.join(out, "kernels.plan")
    braidtest.compile_step(mlir, plan, "--no-overlap")
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    costs = dump_kernels(dump)
    for name in ("h100-8", "a100-8"):
        c = cluster(name)
        expected = 0.0
        for flops, nbytes, dtype, product in costs:
            expected += kernel_seconds(c, flops, nbytes, dtype, product)
        got = simulate(plan, name, os.path.join(out, "kernels-" + name))
        ok = close(got["step_time"], expected) and close(got["compute_time"], expected) \
            and got["comm_time"] == 0 and got["efficiency"] == 1.0
        print("%s no communication on %s: %d kernels, step %.12e s, sum of kernel times %.12e s" % (
            "ok  " if ok else "FAIL", name, len(costs), got["step_time"], expected))
        failures += not ok
    if len(costs) < 5:
        print("FAIL expected at least 5 kernels in the dump, got %d" % len(costs))
        failures += 1
    # The plan records each matrix product's sizes (batch, m, n, k), which
    # v2's GEMM model times by its tiles.
    products = [p for *_, p in costs if p]
    ok = products == [(1, 256, 1024, 512), (1, 64, 4096, 128)]
    print("%s the dump's matrix products: %s" % ("ok  " if ok else "FAIL", products))
    failures += not ok

    # 2. One collective.
    # v2 (the presets) over its algorithms and protocols, and v1 (NAME-v1).
    cases = [("all_reduce", 8, "h100-8", 64 << 20), ("all_reduce", 8, "h100-8", 64 << 10),
             ("all_reduce", 64, "h100-8x8", 64 << 20), ("all_reduce", 16, "h100-8x8", 8 << 30),
             ("all_reduce", 256, "h100-8x32", 4096), ("all_reduce", 256, "h100-8x32", 256 << 20),
             ("all_reduce", 256, "h100-8x32", 16 << 20), ("reduce_scatter", 64, "h100-8x8", 32 << 20), ("all_reduce", 8, "a100-8", 1 << 20),
             ("all_reduce", 8, "a100-8", 256 << 20), ("all_gather", 8, "h100-8", 4 << 20),
             ("all_gather", 64, "h100-8x8", 32 << 20), ("all_reduce", 1, "h100-8", 64 << 20),
             ("all_reduce", 64, "h100-8x8-v1", 64 << 20), ("all_reduce", 256, "h100-8x32-v1", 4096),
             ("all_reduce", 256, "h100-8x32-v1", 256 << 20),
             ("reduce_scatter", 64, "h100-8x8-v1", 32 << 20),
             # NVLS all-reduce in part of a node (the full node's algorithm
             # bandwidth); NVLS all-gather and reduce-scatter where NVLS is
             # fast enough to beat the ring.
             ("all_reduce", 4, "h100-8", 256 << 20), ("all_reduce", 6, "h100-8", 256 << 20),
             ("all_gather", 8, "h100-8-fastnvls", 256 << 20),
             ("reduce_scatter", 4, "h100-8-fastnvls", 256 << 20)]
    algorithms = set()
    for kind, ranks, name, nbytes in cases:
        n = nbytes // 4
        shape = "tensor<%dxf32>" % n
        if kind == "all_reduce":
            op = "%%0 = braid.all_reduce %%x on @world grid_axes = [0] reduction = sum : %s" % shape
            rtype = shape
        elif kind == "all_gather":
            # nbytes is what each rank ends with (getCommBytes of all_gather).
            rtype, shape = shape, "tensor<%dxf32>" % (n // ranks)
            op = ("%%0 = braid.all_gather %%x on @world grid_axes = [0] gather_dim = 0 "
                  ": %s -> %s" % (shape, rtype))
        else:
            rtype = "tensor<%dxf32>" % (n // ranks)
            op = ("%%0 = braid.reduce_scatter %%x on @world grid_axes = [0] reduction = sum scatter_dim = 0 "
                  ": %s -> %s" % (shape, rtype))
        mlir = os.path.join(out, "%s-%d-%d.mlir" % (kind, ranks, nbytes))
        with open(mlir, "w") as f:
            f.write("shard.grid @world(shape = %d)\n"
                    "func.func @step(%%x: %s {braid.role = #braid.role<batch \"x\">}) -> %s {\n"
                    "  %s\n  return %%0 : %s\n}\n" % (ranks, shape, rtype, op, rtype))
        plan = mlir.replace(".mlir", ".plan")
        braidtest.compile_step(mlir, plan, "--no-overlap")
        got = simulate(plan, name, plan)
        expected, algorithm = collective_seconds(cluster(name), kind, nbytes, ranks)
        algorithms.add(algorithm + (" (v1)" if name.endswith("-v1") else
                                    " (fast NVLS)" if name.endswith("-fastnvls") else ""))
        ok = close(got["step_time"], expected) and close(got["comm_time"], expected) \
            and got["compute_time"] == 0
        print("%s %s of %d bytes on %d GPUs (%s): step %.12e s, formula (%s) %.12e s" % (
            "ok  " if ok else "FAIL", kind, nbytes, ranks, name, got["step_time"], algorithm,
            expected))
        failures += not ok
    # 2b. Every other collective kind, synchronous (--no-overlap) and as a
    # start and wait (the default pipeline). Bytes by braid::getCommBytes:
    # all_gather by what it gathers, recv by what it receives, the others by
    # their input. A send and its receive are one transfer between the pair
    # of ranks, timed by where the two lie.
    for ranks, name in ((8, "h100-8"), (64, "h100-8x8")):
        n = 1 << 18
        nbytes = 4 * n
        full, part = "tensor<%dxf32>" % n, "tensor<%dxf32>" % (n // ranks)
        steps = {
            "all_gather": ("%%0 = braid.all_gather %%x on @world grid_axes = [0] gather_dim = 0 "
                           ": %s -> %s" % (part, full), part, full, nbytes),
            "all_to_all": ("%%0 = braid.all_to_all %%x on @world grid_axes = [0] split_dim = 0 "
                           "concat_dim = 0 : %s -> %s" % (full, full), full, full, nbytes),
            "collective_broadcast": ("%%0 = braid.collective_broadcast %%x on @world grid_axes = [0] "
                                     "root = 3 : %s -> %s" % (full, full), full, full, nbytes),
            "collective_permute": ("%%0 = braid.collective_permute %%x on @world grid_axes = [0] "
                                   "offset = 1 : %s -> %s" % (full, full), full, full, nbytes),
        }
        for kind, (op, itype, rtype, moved) in steps.items():
            for flags, form in ((["--no-overlap"], "sync"), ([], "start")):
                mlir = os.path.join(out, "%s-%d-%s.mlir" % (kind, ranks, form))
                with open(mlir, "w") as f:
                    f.write("shard.grid @world(shape = %d)\n"
                            "func.func @step(%%x: %s {braid.role = #braid.role<batch \"x\">}) -> %s {\n"
                            "  %s\n  return %%0 : %s\n}\n" % (ranks, itype, rtype, op, rtype))
                plan = mlir.replace(".mlir", ".plan")
                braidtest.compile_step(mlir, plan, "--cluster=" + name, *flags)
                dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
                started = (kind + "_start") in dump
                got = simulate(plan, name, plan)
                expected, _ = collective_seconds(cluster(name), kind, moved, ranks)
                ok = (close(got["step_time"], expected) and close(got["comm_time"], expected)
                      and started == (form == "start"))
                print("%s %s (%s form) of %d bytes on %d GPUs: step %.12e s, formula %.12e s" % (
                    "ok  " if ok else "FAIL", kind, form, moved, ranks, got["step_time"], expected))
                failures += not ok
        # A send and its receive between the two stages of a pipeline on
        # pairs of ranks, there and back: stage 0 sends, then receives what
        # stage 1 sends back after receiving (docs/Pipeline.md).
        mlir = os.path.join(out, "send-recv-%d.mlir" % ranks)
        pair = "tensor<%dxf32>" % n
        stage = "attributes {braid.stage = #braid.stage<grid = @pairs, axis = 1, index = %d>}"
        with open(mlir, "w") as f:
            f.write("""shard.grid @pairs(shape = %dx2)
func.func @first(%%x: %s {braid.role = #braid.role<batch "x">}) -> %s %s {
  braid.send %%x on @pairs grid_axes = [1] peer = 1 : %s
  %%0 = braid.recv on @pairs grid_axes = [1] peer = 1 : %s
  return %%0 : %s
}
func.func @second() %s {
  %%0 = braid.recv on @pairs grid_axes = [1] peer = 0 : %s
  braid.send %%0 on @pairs grid_axes = [1] peer = 0 : %s
  return
}
""" % (ranks // 2, pair, pair, stage % 0, pair, pair, pair, stage % 1, pair, pair))
        plan = mlir.replace(".mlir", ".plan")
        braidtest.compile_step(mlir, plan, "--cluster=" + name, "--no-overlap")
        got = simulate(plan, name, plan)
        # The pair is on one node on both clusters (ranks 2k, 2k + 1).
        t, _ = collective_seconds(cluster(name), "send", nbytes, 2)
        ok = close(got["step_time"], 2 * t) and close(got["comm_time"], 2 * t)
        print("%s send and recv of %d bytes in pairs of %d GPUs: step %.12e s, formula 2 x %.12e s" % (
            "ok  " if ok else "FAIL", nbytes, ranks, got["step_time"], t))
        failures += not ok

    # A middle stage meets each neighbour in its own transfers: stage 1
    # receives a large tensor from stage 0, then exchanges a small one with
    # stage 2 in a send-receive, while stage 2 posts its send-receive at
    # once. Each transfer meets the transfer of its own pair and direction:
    # the step is the large transfer, then the small exchange (its two
    # halves at once, one each way).
    mlir = os.path.join(out, "middle-stage.mlir")
    big, small = 64 << 20, 1 << 20
    tb, ts = "tensor<%dxf32>" % (big // 4), "tensor<%dxf32>" % (small // 4)
    stage = "attributes {braid.stage = #braid.stage<grid = @line, axis = 0, index = %d>}"
    with open(mlir, "w") as f:
        f.write("""shard.grid @line(shape = 3)
func.func @first(%%x: %s {braid.role = #braid.role<batch "x">}) %s {
  braid.send %%x on @line grid_axes = [0] peer = 1 : %s
  return
}
func.func @middle(%%s: %s {braid.role = #braid.role<batch "s">}) -> (%s, %s) %s {
  %%0 = braid.recv on @line grid_axes = [0] peer = 0 : %s
  %%1 = braid.send_recv %%s on @line grid_axes = [0] send_peer = 2 recv_peer = 2 : %s -> %s
  return %%0, %%1 : %s, %s
}
func.func @last(%%z: %s {braid.role = #braid.role<batch "z">}) -> %s %s {
  %%0 = braid.send_recv %%z on @line grid_axes = [0] send_peer = 1 recv_peer = 1 : %s -> %s
  return %%0 : %s
}
""" % (tb, stage % 0, tb, ts, tb, ts, stage % 1, tb, ts, ts, tb, ts, ts, ts, stage % 2, ts, ts, ts))
    plan = os.path.join(out, "middle-stage.plan")
    braidtest.compile_step(mlir, plan, "--cluster=h100-8", "--no-overlap")
    got = simulate(plan, "h100-8", plan)
    t_big, _ = collective_seconds(cluster("h100-8"), "send", big, 2)
    t_small, _ = collective_seconds(cluster("h100-8"), "send", small, 2)
    ok = close(got["step_time"], t_big + t_small)
    print("%s a middle stage receives %d bytes from stage 0, then exchanges %d bytes with stage 2: "
          "step %.12e s, formula %.12e s + %.12e s" % (
              "ok  " if ok else "FAIL", big, small, got["step_time"], t_big, t_small))
    failures += not ok

    # 3. Two collectives at once on two streams share the links: on a 2x4
    # grid, an all-reduce over each axis (different groups, so different
    # communication streams) ends after exactly the sum of their times.
    mlir = os.path.join(out, "two-streams.mlir")
    a, b = 8 << 20, 24 << 20
    with open(mlir, "w") as f:
        f.write("""shard.grid @world(shape = 2x4)
func.func @step(%%x: tensor<%dxf32> {braid.role = #braid.role<batch "x">},
                %%y: tensor<%dxf32> {braid.role = #braid.role<batch "y">})
    -> (tensor<%dxf32>, tensor<%dxf32>) {
  %%0 = braid.all_reduce %%x on @world grid_axes = [0] reduction = sum : tensor<%dxf32>
  %%1 = braid.all_reduce %%y on @world grid_axes = [1] reduction = sum : tensor<%dxf32>
  return %%0, %%1 : tensor<%dxf32>, tensor<%dxf32>
}
""" % ((a // 4, b // 4) * 4))
    plan = os.path.join(out, "two-streams.plan")
    braidtest.compile_step(mlir, plan, "--comm-streams=2")
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    got = simulate(plan, "h100-8", plan)
    c = cluster("h100-8")
    ta, _ = collective_seconds(c, "all_reduce", a, 2)
    tb, _ = collective_seconds(c, "all_reduce", b, 4)
    ok = ("stream comm 1" in dump and close(got["step_time"], ta + tb) and
          close(got["comm_time"], ta + tb))
    print("%s two all-reduces on two streams: step %.12e s, sum of their times %.12e s" % (
        "ok  " if ok else "FAIL", got["step_time"], ta + tb))
    failures += not ok

    # 4. Contention: a kernel that runs while an all-reduce is in flight runs
    # 1 + a times slower (a = compute_slowdown_during_comm) until the
    # all-reduce ends, then at full speed.
    mlir = os.path.join(out, "contention.mlir")
    with open(mlir, "w") as f:
        f.write("""shard.grid @world(shape = 8)
func.func @step(%x: tensor<4194304xf32> {braid.role = #braid.role<batch "x">},
                %p: tensor<2048x2048xf32> {braid.role = #braid.role<batch "p">})
    -> (tensor<4194304xf32>, tensor<2048x2048xf32>) {
  %0 = braid.all_reduce %x on @world grid_axes = [0] reduction = sum : tensor<4194304xf32>
  %1 = braid.matmul %p, %p : tensor<2048x2048xf32>, tensor<2048x2048xf32> -> tensor<2048x2048xf32>
  return %0, %1 : tensor<4194304xf32>, tensor<2048x2048xf32>
}
""")
    plan = os.path.join(out, "contention.plan")
    braidtest.compile_step(mlir, plan)
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    (flops, nbytes, dtype, product), = dump_kernels(dump)
    c = cluster("h100-8")
    k = kernel_seconds(c, flops, nbytes, dtype, product)
    m, _ = collective_seconds(c, "all_reduce", 4194304 * 4, 8)
    slow = 1 + c["compute_slowdown_during_comm"]
    # Both start at 0; the kernel does m / slow of its work by m.
    expected = m + (k - m / slow) if k > m / slow else k * slow
    got = simulate(plan, "h100-8", plan)
    ok = close(got["step_time"], max(expected, m)) and got["overlap_fraction"] == 1.0
    print("%s kernel of %.3e s under an all-reduce of %.3e s: step %.12e s, expected %.12e s" % (
        "ok  " if ok else "FAIL", k, m, got["step_time"], max(expected, m)))
    failures += not ok

    want = {"none", "ring/LL", "ring/LL128", "ring/Simple", "tree/LL", "tree/LL128",
            "nvls/Simple", "nvls-tree/Simple", "ring (v1)", "tree (v1)",
            "nvls/Simple (fast NVLS)"}
    if algorithms != want:
        print("FAIL the cases should exercise %s, got %s" % (sorted(want), sorted(algorithms)))
        failures += 1
    print("sim-exact: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
