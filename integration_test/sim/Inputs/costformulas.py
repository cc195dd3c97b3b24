"""docs/CostModel.md's formulas, written here independently of braid's C++
from the cluster presets' JSON, for the simulator tests to check against."""

import json
import math
import os

CLUSTERS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "common", "clusters")


def cluster(name):
    with open(os.path.join(CLUSTERS, name + ".json")) as f:
        return json.load(f)


def gemm_rate(c, flops, dtype):
    """FLOP/s: the calibration's measured rates interpolated linearly in
    log n at the cube size (flops / 2)^(1/3), held at the ends; else peak x
    matmul efficiency."""
    cal = c.get("calibration")
    key = {"bf16": "bf16", "f16": "f16", "f32": "f32"}.get(dtype)
    points = []
    if cal and key:
        points = sorted(((g["m"] * g["n"] * g["k"]) ** (1 / 3), g["tflops"] * 1e12)
                        for g in cal["gemm"] if g["dtype"] == key)
        if not points and key == "f16":
            points = sorted(((g["m"] * g["n"] * g["k"]) ** (1 / 3), g["tflops"] * 1e12)
                            for g in cal["gemm"] if g["dtype"] == "bf16")
    if not points:
        return c["peak_tflops"][dtype] * 1e12 * c["matmul_efficiency"]
    n = (flops / 2) ** (1 / 3)
    if n <= points[0][0]:
        return points[0][1]
    if n >= points[-1][0]:
        return points[-1][1]
    for (n0, r0), (n1, r1) in zip(points, points[1:]):
        if n0 < n <= n1:
            return r0 + math.log(n / n0) / math.log(n1 / n0) * (r1 - r0)


def kernel_seconds(c, flops, nbytes, dtype):
    if flops == 0 and nbytes == 0:
        return 0.0
    cal = c.get("calibration")
    compute = flops / gemm_rate(c, flops, dtype)
    if cal:
        bandwidth = min(cal["memory_bandwidth_gbs"]["kernel"], c["hbm_gb_per_s"]) * 1e9
        launch = cal["launch_us"]["device"] * 1e-6
    else:
        bandwidth = c["hbm_gb_per_s"] * 1e9 * c["memory_efficiency"]
        launch = c["kernel_launch_us"] * 1e-6
    return launch + max(compute, nbytes / bandwidth)


def collective_seconds(c, kind, nbytes, ranks):
    """NCCL-style: docs/CostModel.md. Ranks 0..ranks-1, 8 to a node. A group
    of one rank moves nothing: no time, not even the base latency."""
    if ranks == 1:
        return 0.0, "none"
    g = min(ranks, c["gpus_per_node"])
    n = math.ceil(ranks / c["gpus_per_node"])
    bnv, bnet = c["nvlink_gb_per_s"] * 1e9, c["network_gb_per_s"] * 1e9
    anv, anet = c["nvlink_latency_us"] * 1e-6, c["network_latency_us"] * 1e-6
    base = c["collective_base_latency_us"] * 1e-6
    s = float(nbytes)
    intra = (g - 1) * anv + (g - 1) / g * s / bnv
    inter = (n - 1) * anet + (n - 1) / n * (s / g) / bnet
    if kind == "all_reduce":
        ring = base + 2 * intra + 2 * ((n - 1) * anet + (n - 1) / n * (s / g) / bnet)
        if n == 1:
            return ring, "ring"
        tree = (base + 2 * (g - 1) * anv + 2 * math.ceil(math.log2(n)) *
                c["tree_network_latency_us"] * 1e-6 + 2 * (g - 1) / g * s / bnv + 2 * (s / g) / bnet)
        return min((ring, "ring"), (tree, "tree"))
    net = n > 1
    hop = anet if net else anv
    link = bnet if net else bnv
    if kind == "all_to_all":
        return base + (ranks - 1) * hop + s * max((g - 1) / ranks / bnv,
                                                  (ranks - g) / ranks / bnet), "direct"
    if kind == "collective_broadcast":
        return base + (ranks - 1) * hop + s / link, "direct"
    if kind in ("send", "recv", "collective_permute"):
        return base + hop + s / link, "direct"
    # reduce_scatter and all_gather: one ring pass (all_gather: s is what
    # each rank ends with).
    return base + intra + inter, "ring"
