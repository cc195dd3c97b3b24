#!/usr/bin/env python3
"""Cost model v1 against v2 on whole training steps, side by side.

    /usr/bin/python3 utils/bench-cost-models.py [--quick]

Two data-parallel bf16 steps, each compiled and simulated on its preset
twice: with cost model v2 (the preset as it is) and with v1 (the preset
without its "nccl" and "gemm_tiles" objects, docs/CostModel.md):

- GEMM-heavy: Llama-2 7B, 1 x 4096 tokens a GPU, on h100-8 (its step is
  matrix products);
- latency-heavy: GPT-2 small, 1 x 256 tokens a GPU, on h100-8x32 (256 GPUs:
  small kernels, and collectives that cross 32 nodes).

For each it prints the step's figures, the compute split into matrix
products and the other kernels, and the collectives by the algorithm and
protocol each ran with (from the simulator's trace), so that every
difference between the columns has its cause next to it. --quick: 2 layers.
"""

import argparse
import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

WHO = "bench-cost-models"
STEPS = [("GEMM-heavy", "llama2-7b", "h100-8", 8, ["--batch", "1"]),
         ("latency-heavy", "gpt2-small", "h100-8x32", 256, ["--batch", "1", "--seq", "256"])]


def v1_cluster(name, out):
    with open(os.path.join(benchlib.ROOT, "common", "clusters", name + ".json")) as f:
        c = json.load(f)
    del c["nccl"]
    del c["gemm_tiles"]
    c["name"] = name + "-v1"
    path = os.path.join(out, c["name"] + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def simulate(mlir, cluster, tag):
    r, spans = benchlib.play(mlir, cluster, [], WHO, tag)
    # The matrix products' share of the compute, uncontended: from the naive
    # schedule, whose kernels never run under a collective.
    _, serial = benchlib.play(mlir, cluster, ["--schedule=naive"], WHO, tag + "-naive")
    matmul = sum(e["dur"] for e in serial if e["cat"] == "compute" and e["name"] == "matmul")
    r["matmul_ms"] = matmul * 1e-3
    algorithms = collections.Counter()
    for e in spans:
        if e["cat"] == "comm":
            algorithms[e["args"]["algorithm"]] += 1
    r["algorithms"] = ", ".join("%d %s" % (n, a) for a, n in sorted(algorithms.items()))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 layers a model")
    args = ap.parse_args()
    print("| step | model | cluster | GPUs | model | compute ms | of it matmul ms | comm ms "
          "| step ms | exposed comm ms | collectives a rank, by algorithm/protocol |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as out:
        for what, model, cluster, gpus, options in STEPS:
            mlir = os.path.join(out, "%s-%s.mlir" % (model, cluster))
            layers = ["--layers", "2"] if args.quick else []
            benchlib.generate([model, "--dtype", "bf16", "--world-size", str(gpus), *options,
                               *layers], mlir, WHO)
            for tag, c in (("v1", v1_cluster(cluster, out)), ("v2", cluster)):
                r = simulate(mlir, c, tag)
                print("| %s | %s | %s | %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %s |" % (
                    what, model, cluster, gpus, tag, r["compute_time"] * 1e3, r["matmul_ms"],
                    r["comm_time"] * 1e3, r["step_time"] * 1e3, r["exposed_comm"] * 1e3,
                    r["algorithms"] or "none"))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
