#!/usr/bin/env python3
"""Checks braid's collective cost model against public measurements.

    utils/validate-cost-model.py [--check] [--markdown] [--calibration FILE [--cluster C]]

Reads utils/cost-validation.json (each point a published nccl-tests figure,
a measured matrix product or a measured memory bandwidth, with its source), simulates that collective
or product alone with braid-compile and braid-run --backend=sim on the
point's cluster (on the point's "gpus" ranks of one node where it names
them, else 8 a node), once with cost model v2 (the preset as it is) and once with
v1 (the same preset without its "nccl" and "gemm_tiles" objects), and
prints predicted against measured: the bus bandwidth or TFLOP/s and the
ratio of predicted to measured time (above 1: the model is slower than the
measurement). --calibration FILE checks braid-gpu-bench's measured products
instead (utils/gpu-check.sh's calibration.json from a lent GPU). A point of 1 MiB and above is within when the ratio is within
15% of 1, a smaller one within 25% (issue 16's bounds); a point that names an
algorithm is within when v2 picks the one NCCL was seen to pick.

--markdown prints the table of docs/CostModel.md "Validation" (which
integration_test/sim/cost-validation.py keeps equal to this output);
--check exits 1 if a point is outside its bound, other than those the data
marks as an expected miss, with the reason, or if such a point comes within.
"""

import argparse
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

DATA = os.path.join(benchlib.ROOT, "utils", "cost-validation.json")
CLUSTERS = os.path.join(benchlib.ROOT, "common", "clusters")
PEAK = 8 << 30
WHO = "validate-cost-model"


def cluster_file(point, model, out):
    """The point's cluster as a file: the preset with the point's node count
    (and NVLS off where the run disabled it); v1 drops the "nccl" and
    "gemm_tiles" objects."""
    with open(os.path.join(CLUSTERS, point["cluster"] + ".json")) as f:
        c = json.load(f)
    c = copy.deepcopy(c)
    c["nodes"] = point.get("nodes", 1)
    name = "%s-%dn" % (point["cluster"], c["nodes"])
    if point.get("nvls", True) is False:
        c["nccl"]["nvls_bus_gb_per_s"] = 0.0
        name += "-nonvls"
    if model == "v1":
        del c["nccl"]
        del c["gemm_tiles"]
    c["name"] = name + "-" + model
    path = os.path.join(out, c["name"] + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def step(kind, ranks, size, out):
    """A step of one collective of `size` bytes (nccl-tests' size: what each
    rank reduces, or gathers in all), on all ranks."""
    n = size // 4
    full, part = "tensor<%dxf32>" % n, "tensor<%dxf32>" % (n // ranks)
    if kind == "all_reduce":
        op = "%%0 = braid.all_reduce %%x on @world grid_axes = [0] reduction = sum : %s" % full
        arg, res = full, full
    elif kind == "all_gather":
        op = ("%%0 = braid.all_gather %%x on @world grid_axes = [0] gather_dim = 0 : %s -> %s"
              % (part, full))
        arg, res = part, full
    else:
        op = ("%%0 = braid.reduce_scatter %%x on @world grid_axes = [0] reduction = sum "
              "scatter_dim = 0 : %s -> %s" % (full, part))
        arg, res = full, part
    path = os.path.join(out, "%s-%d-%d.mlir" % (kind, ranks, size))
    with open(path, "w") as f:
        f.write("shard.grid @world(shape = %d)\n"
                "func.func @step(%%x: %s {braid.role = #braid.role<batch \"x\">}) -> %s {\n"
                "  %s\n  return %%0 : %s\n}\n" % (ranks, arg, res, op, res))
    return path


def gemm_step(point, out):
    """A step of one matrix product [m, k] x [k, n] in the point's dtype."""
    m, n, k, t = point["m"], point["n"], point["k"], point["dtype"]
    a, b, r = ("tensor<%dx%dx%s>" % (x, y, t) for x, y in ((m, k), (k, n), (m, n)))
    path = os.path.join(out, "gemm-%s-%d-%d-%d.mlir" % (t, m, n, k))
    with open(path, "w") as f:
        f.write("func.func @step(%%a: %s {braid.role = #braid.role<batch \"a\">},\n"
                "                %%b: %s {braid.role = #braid.role<batch \"b\">}) -> %s {\n"
                "  %%0 = braid.matmul %%a, %%b : %s, %s -> %s\n  return %%0 : %s\n}\n"
                % (a, b, r, a, b, r, r))
    return path


def kernel_time(mlir, cluster):
    """The simulated time of the step's kernels."""
    tag = os.path.basename(cluster).replace(".json", "")
    return benchlib.play(mlir, cluster, [], WHO, tag)[0]["compute_time"]


def evaluate_gemms(points, out):
    rows = []
    for i, p in enumerate(points, 1):
        mlir = gemm_step(p, out)
        flops = 2 * p["m"] * p["n"] * p["k"]
        t2 = kernel_time(mlir, cluster_file(p, "v2", out))
        t1 = kernel_time(mlir, cluster_file(p, "v1", out))
        measured = flops / (p["tflops"] * 1e12)
        bound = 0.15
        rows.append(dict(index=i, point=p, flops=flops, t2=t2, t1=t1, r2=t2 / measured,
                         r1=t1 / measured, within=abs(t2 / measured - 1) <= bound))
    return rows


def memory_step(point, out):
    """A step of one memory-bound kernel: a relu over `bytes` of f32, which
    reads and writes them once each."""
    t = "tensor<%dxf32>" % (point["bytes"] // 4)
    path = os.path.join(out, "memory-%d.mlir" % point["bytes"])
    with open(path, "w") as f:
        f.write("func.func @step(%%x: %s {braid.role = #braid.role<batch \"x\">}) -> %s {\n"
                "  %%0 = braid.relu %%x : %s\n  return %%0 : %s\n}\n" % (t, t, t, t))
    return path


def evaluate_memory(points, out):
    rows = []
    for i, p in enumerate(points, 1):
        mlir = memory_step(p, out)
        moved = 2 * p["bytes"]
        t2 = kernel_time(mlir, cluster_file(p, "v2", out))
        t1 = kernel_time(mlir, cluster_file(p, "v1", out))
        measured = moved / (p["gb_per_s"] * 1e9)
        rows.append(dict(index=i, point=p, moved=moved, t2=t2, t1=t1, r2=t2 / measured,
                         r1=t1 / measured, within=abs(t2 / measured - 1) <= 0.15))
    return rows


def memory_markdown(rows):
    lines = ["| # | cluster | kernel | measured GB/s | model GB/s | model / measured | within "
             "| source |", "|---:|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        p = r["point"]
        lines.append("| %d | %s | read + write %s | %.0f | %.0f | %.3f | %s | %s |" % (
            r["index"], p["cluster"], size_text(p["bytes"]), p["gb_per_s"],
            r["moved"] / r["t2"] / 1e9, r["r2"], "yes" if r["within"] else "**no**",
            p["source_short"]))
    return "\n".join(lines)


def describe(r):
    """A point, for messages."""
    p = r["point"]
    if "collective" in p:
        return "%s %s on %s" % (p["collective"], size_text(r["size"]), p["cluster"])
    if "dtype" in p:
        return "%s %dx%dx%d on %s" % (p["dtype"], p["m"], p["n"], p["k"], p["cluster"])
    return "memory-bound %s on %s" % (size_text(p["bytes"]), p["cluster"])


def gemm_markdown(rows):
    lines = ["| # | cluster | dtype | m x n x k | measured TFLOP/s | v2 TFLOP/s | v2 / measured "
             "| v1 / measured | within | source |",
             "|---:|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        p = r["point"]
        lines.append("| %d | %s | %s | %d x %d x %d | %.1f | %.1f | %.3f | %.3f | %s | %s |" % (
            r["index"], p["cluster"], p["dtype"], p["m"], p["n"], p["k"], p["tflops"],
            r["flops"] / r["t2"] / 1e12, r["r2"], r["r1"], "yes" if r["within"] else "**no**",
            p["source_short"]))
    return "\n".join(lines)


def simulate(mlir, cluster, out):
    """(seconds, algorithm) of the step's one collective."""
    tag = os.path.basename(cluster).replace(".json", "")
    report, spans = benchlib.play(mlir, cluster, ["--no-overlap"], WHO, tag)
    comm = [e for e in spans if e["cat"] == "comm"]
    return report["comm_time"], comm[0]["args"]["algorithm"]


def bus_factor(kind, ranks):
    """nccl-tests' bus bandwidth over algorithm bandwidth."""
    return 2 * (ranks - 1) / ranks if kind == "all_reduce" else (ranks - 1) / ranks


def size_text(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return "%g %s" % (size / (1 << shift), unit)
    return "%d B" % size


def evaluate(points, out):
    rows = []
    for i, p in enumerate(points, 1):
        ranks = p.get("gpus", 8 * p["nodes"])
        size = PEAK if p["size"] == "peak" else p["size"]
        mlir = step(p["collective"], ranks, size, out)
        t2, a2 = simulate(mlir, cluster_file(p, "v2", out), out)
        t1, a1 = simulate(mlir, cluster_file(p, "v1", out), out)
        row = dict(index=i, point=p, ranks=ranks, size=size, t2=t2, a2=a2, t1=t1, a1=a1)
        if "algorithm" in p:
            row["within"] = a2 == p["algorithm"]
        else:
            measured = size * bus_factor(p["collective"], ranks) / (p["busbw"] * 1e9)
            row["measured"] = measured
            row["r2"], row["r1"] = t2 / measured, t1 / measured
            bound = 0.15 if size >= 1 << 20 else 0.25
            row["within"] = abs(row["r2"] - 1) <= bound
        rows.append(row)
    return rows


def markdown(rows):
    lines = ["| # | cluster | GPUs | collective | size | measured busbw | v2 busbw | v2 algorithm "
             "| v2 / measured | v1 / measured | within | source |",
             "|---:|---|---:|---|---|---:|---:|---|---:|---:|---|---|"]
    for r in rows:
        p = r["point"]
        size = ("peak (%s)" % size_text(r["size"])) if p["size"] == "peak" else size_text(r["size"])
        if p.get("nvls", True) is False:
            size += ", NVLS off"
        if "algorithm" in p:
            measured, v2bus, r2, r1 = "NCCL chose %s" % p["algorithm"], "", "", ""
        else:
            factor = bus_factor(p["collective"], r["ranks"])
            measured = "%.1f GB/s" % p["busbw"]
            v2bus = "%.1f GB/s" % (r["size"] * factor / r["t2"] / 1e9)
            r2, r1 = "%.3f" % r["r2"], "%.3f" % r["r1"]
        within = "yes" if r["within"] else "**no**"
        if "expected_miss" in p:
            within += " (expected: see below)"
        lines.append("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | [%s](%s) |" % (
            r["index"], p["cluster"] if p["nodes"] == 1 else "%d x 8 H100" % p["nodes"],
            r["ranks"], p["collective"], size, measured, v2bus, r["a2"], r2, r1, within,
            p["url"].split("github.com/")[-1], p["url"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 on a point outside its bound")
    ap.add_argument("--markdown", action="store_true", help="print the docs tables only")
    ap.add_argument("--calibration", metavar="FILE",
                    help="check the GEMM model against braid-gpu-bench's calibration.json "
                         "instead (utils/gpu-check.sh writes it on a lent GPU)")
    ap.add_argument("--cluster", default="h200-8",
                    help="the preset the calibration's GPU is (default h200-8)")
    args = ap.parse_args()
    with open(DATA) as f:
        data = json.load(f)
    gemms = data["gemm"]
    if args.calibration:
        # A lent GPU's braid-gpu-bench measurements, each a point.
        with open(args.calibration) as f:
            cal = json.load(f)
        gemms = [dict(cluster=args.cluster, dtype=g["dtype"], m=g["m"], n=g["n"], k=g["k"],
                      tflops=g["tflops"], source_short="%s (%s)" % (
                          os.path.basename(args.calibration), cal["device"]))
                 for g in cal["gemm"] if g["dtype"] in ("f32", "bf16", "f16")]
    with tempfile.TemporaryDirectory() as out:
        rows = [] if args.calibration else evaluate(data["points"], out)
        gemm_rows = evaluate_gemms(gemms, out)
        memory_rows = [] if args.calibration else evaluate_memory(data["memory"], out)
    if args.markdown:
        if rows:
            print(markdown(rows))
            print()
        print(gemm_markdown(gemm_rows))
        if memory_rows:
            print()
            print(memory_markdown(memory_rows))
    else:
        for r in gemm_rows + memory_rows:
            print("%2d %-6s %s: v2 %.3f, v1 %.3f of the measured time" % (
                r["index"], "ok" if r["within"] else "MISS", describe(r), r["r2"], r["r1"]))
    if not args.markdown and rows:
        for r in rows:
            p = r["point"]
            what = ("algorithm %s, NCCL chose %s" % (r["a2"], p["algorithm"]) if "algorithm" in p
                    else "v2 %.3f (%s), v1 %.3f (%s) of the measured time"
                    % (r["r2"], r["a2"], r["r1"], r["a1"]))
            print("%2d %-6s %s %d GPUs %s %s: %s" % (
                r["index"], "ok" if r["within"] else "MISS", p["collective"], r["ranks"],
                size_text(r["size"]), p["cluster"], what))
        ratios = [r["r2"] for r in rows if "r2" in r]
        print("%d points: %d within, v2 time ratio %.3f..%.3f" % (
            len(rows), sum(r["within"] for r in rows), min(ratios), max(ratios)))
    if args.check:
        bad = [r for r in rows + gemm_rows + memory_rows
               if r["within"] == ("expected_miss" in r["point"])]
        for r in bad:
            print("%s: point %d (%s): %s" % (
                WHO, r["index"], describe(r), "an expected miss is within its bound: drop the "
                "mark" if r["within"] else "outside its bound"), file=sys.stderr)
        if bad:
            sys.exit(1)


if __name__ == "__main__":
    main()
