"""docs/CostModel.md's formulas, written here independently of braid's C++
from the cluster presets' JSON, for the simulator tests to check against."""

import json
import math
import os
import re

CLUSTERS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "common", "clusters")


VARIANTS = ("-v1", "-fastnvls")


def cluster(name):
    """A preset by name; NAME-v1 is the preset without its "nccl" and
    "gemm_tiles" objects (cost model v1), NAME-fastnvls the preset with an
    NVLS ten times its rings' bus bandwidth (where NVLS all-gathers)."""
    variant = next((v for v in VARIANTS if name.endswith(v)), "")
    with open(os.path.join(CLUSTERS, name[:len(name) - len(variant)] + ".json")) as f:
        c = json.load(f)
    if variant == "-v1":
        del c["nccl"]
        del c["gemm_tiles"]
    if variant == "-fastnvls":
        c["nccl"]["nvls_bus_gb_per_s"] = 10 * c["nccl"]["nvlink_bus_gb_per_s"]
    if variant:
        c["name"] = name
    return c


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


# A kernel in braid-run --dump: its cost, and a matrix product's sizes.
KERNEL = re.compile(r"\[(\d+) flops, (\d+) B read, (\d+) B written, (\w+)\]"
                    r"(?: product (\d+)x(\d+)x(\d+)x(\d+))?")


def dump_kernels(dump):
    """(flops, bytes, dtype, product or None) of each kernel of a dump."""
    out = []
    for m in KERNEL.finditer(dump):
        f, rd, w, dtype = m.group(1, 2, 3, 4)
        product = tuple(int(x) for x in m.group(5, 6, 7, 8)) if m.group(5) else None
        out.append((int(f), int(rd) + int(w), dtype, product))
    return out


def product_seconds(c, product, dtype):
    """v2's GEMM model: tile_m x tile_n x tile_k steps (a product smaller
    than a tile: tiles of its own size) spread evenly over the SMs, each SM
    at 1/sm_count of peak x efficiency, plus the pipelines' fill."""
    t = c["gemm_tiles"]
    batch, m, n, k = product
    tm, tn, tk = min(t["tile_m"], m), min(t["tile_n"], n), min(t["tile_k"], k)
    steps = batch * math.ceil(m / tm) * math.ceil(n / tn) * math.ceil(k / tk)
    per_sm = math.ceil(steps / t["sm_count"])
    rate = c["peak_tflops"][dtype] * 1e12 * c["matmul_efficiency"] / t["sm_count"]
    return per_sm * 2 * tm * tn * tk / rate + t["pipeline_fill_us"] * 1e-6


def kernel_seconds(c, flops, nbytes, dtype, product=None):
    if flops == 0 and nbytes == 0:
        return 0.0
    cal = c.get("calibration")
    measured = cal and any(g["dtype"] == dtype or (dtype == "f16" and g["dtype"] == "bf16")
                           for g in cal["gemm"])
    if product and "gemm_tiles" in c and not measured:
        compute = product_seconds(c, product, dtype)
    else:
        compute = flops / gemm_rate(c, flops, dtype)
    if cal:
        bandwidth = min(cal["memory_bandwidth_gbs"]["kernel"], c["hbm_gb_per_s"]) * 1e9
        launch = cal["launch_us"]["device"] * 1e-6
    else:
        bandwidth = c["hbm_gb_per_s"] * 1e9 * c["memory_efficiency"]
        launch = c["kernel_launch_us"] * 1e-6
    return launch + max(compute, nbytes / bandwidth)


# NCCL 2.30.7's tuning constants (src/graph/tuning.cc), microseconds, by
# protocol LL, LL128, Simple: docs/CostModel.md "Collectives (v2)".
BASE = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)}
NVLINK = {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)}
NET = {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0)}
PROTOCOLS = ("LL", "LL128", "Simple")


def nccl_seconds(c, kind, s, ranks, g, n):
    """Cost model v2: the least over NCCL's algorithms and protocols of
    latency + bytes / algorithm bandwidth."""
    v = c["nccl"]
    p = ranks
    ar = kind == "all_reduce"
    bus = v["nvlink_bus_gb_per_s"] * 1e9
    network = min(g, v["nics_per_node"]) * v["nic_gb_per_s"] * 1e9
    link = bus if n == 1 else min(bus, network)
    if n == 1:
        llmax = (141.0 if v["arch"] == "hopper" else 87.7) * 1e9
    else:
        llmax = (39.0 if n <= 2 else 20.4) * 1e9
    levels = math.floor(math.log2(n))
    options = []
    steps = 2 * (p - 1) if ar else p - 1
    inter = 0 if n == 1 else (2 * (n - 1) if ar else n - 1)
    for i, proto in enumerate(PROTOCOLS):
        b = {"LL": min(llmax, 0.5 * link), "LL128": 0.92 * link, "Simple": link}[proto]
        intra = NVLINK["ring"][i]
        if n > 1:
            intra = max(intra, 3.0 if proto == "Simple" else 1.0)
        net = NET["tree" if g == 1 else "ring"][i]
        lat = BASE["ring"][i] + (steps - inter) * intra + inter * net
        if ar and n > 1 and proto == "Simple":
            lat *= 1.4
        options.append((lat * 1e-6 + s * steps / (p * b), "ring/" + proto))
    if ar and n > 1:
        tree_link = min(bus, 2 * network if n <= 2 else network)
        for i, proto in enumerate(PROTOCOLS):
            b = 0.92 * tree_link
            if proto == "LL":
                b = min(b / 3.8, llmax)
            if proto == "LL128":
                b *= 120 / 128
            lat = BASE["tree"][i] + 2 * ((g - 1) * NVLINK["tree"][i] + levels * NET["tree"][i])
            options.append((lat * 1e-6 + 2 * s / b, "tree/" + proto))
    nvls = v["nvls_bus_gb_per_s"] * 1e9
    # One node: NCCL picks NVLS for an all-reduce from 6 ranks (its model's
    # NVLS bandwidth grows with the ranks, one channel a GPU).
    if ar and nvls > 0 and g >= 2 and (n > 1 or p >= 6):
        if n == 1:
            # One node: the full node's algorithm bandwidth at any group size.
            full = max(c["gpus_per_node"], 2)
            per_byte = 2 * (full - 1) / (full * nvls)
        else:
            per_byte = 2 * (p - 1) / (p * min(nvls, network * (2 if n <= 2 else 1)))
        lat = 25.0 + (2 * levels * 20.9 if n > 1 else 0)
        options.append((lat * 1e-6 + s * per_byte,
                        "nvls/Simple" if n == 1 else "nvls-tree/Simple"))
    if not ar and nvls > 0 and n == 1 and g >= 2 and p <= 32:
        # NCCL's NVLS all-gather / reduce-scatter: V / 2 (g - 1) / g, no
        # algorithm-bandwidth conversion.
        options.append((25.0e-6 + s * 2 * g / ((g - 1) * nvls), "nvls/Simple"))
    return min(options)


def collective_seconds(c, kind, nbytes, ranks):
    """NCCL-style: docs/CostModel.md. Ranks 0..ranks-1, 8 to a node. A group
    of one rank moves nothing: no time, not even the base latency. v2 (the
    cluster has "nccl") for all_reduce, reduce_scatter and all_gather; the
    other kinds by v1's forms at v2's bandwidths."""
    if ranks == 1:
        return 0.0, "none"
    g = min(ranks, c["gpus_per_node"])
    n = math.ceil(ranks / c["gpus_per_node"])
    if "nccl" in c and kind in ("all_reduce", "reduce_scatter", "all_gather"):
        return nccl_seconds(c, kind, float(nbytes), ranks, g, n)
    bnv, bnet = c["nvlink_gb_per_s"] * 1e9, c["network_gb_per_s"] * 1e9
    if "nccl" in c:
        v = c["nccl"]
        bnv = v["nvlink_bus_gb_per_s"] * 1e9
        bnet = min(g, v["nics_per_node"]) * v["nic_gb_per_s"] * 1e9 / g
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
    if kind in ("send", "recv", "send_recv", "collective_permute"):
        return base + hop + s / link, "direct"
    # reduce_scatter and all_gather: one ring pass (all_gather: s is what
    # each rank ends with).
    return base + intra + inter, "ring"
