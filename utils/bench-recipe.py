#!/usr/bin/python3
"""Training-recipe benchmark: what gradient accumulation and gradient
clipping cost, and what accumulation buys, on the simulated cluster.

For each model x cluster case, generates the data-parallel step
(python/braid/models.py, bf16) with k = 1, 2, 4, 8 micro-batches of the same
per-GPU micro-batch (`--micro-batches K`: the forward and backward k times,
gradients accumulated, each all-reduced once after its gradient in the last
micro-batch), compiles it with braid's schedule and the DDP-style one
(--schedule=ddp) for the cluster, simulates both with braid-run
--backend=sim and prints a markdown table: compute and communication per
optimizer step, the step time and exposed communication of each schedule,
the time per micro-batch (what a training run pays per micro-batch of
data) against k = 1, and braid's peak memory. Then it checks the claims of
docs/Benchmarks.md: communication once per step (its time within 10% of
k = 1's at every k), the time per micro-batch falling as k grows on a
communication-bound case, and braid at least as fast as ddp on every row,
and exits 1 if one fails.

A third table compares precisions at k = 1: pure bf16 (every tensor,
`--dtype bf16`), bf16 compute with f32 master weights, optimizer state and
AdamW (`--autocast bf16`, as braid.export's autocast="bf16"), its gradients
all-reduced in f32 or in bf16 (`--reduce-dtype bf16`). It checks that f32
gradients cost more than 1.5x the communication of bf16 ones, that bf16
ones cost pure bf16's (within 10%), and that master weights cost compute
and memory.

A second table compares each case's step (k = 1) with gradient clipping
(`--max-grad-norm 1.0`: a squared norm per bucket as it lands, the clipping
factor, every update scaled by it) and without: the updates cannot start
before the last bucket lands, so the step pays the optimizer after the
communication. It checks that clipping adds no communication and that its
compute (one read of every gradient for the squared norms; the scaling is
fused into the updates) stays within 10% of the unclipped step's.

usage: /usr/bin/python3 utils/bench-recipe.py [--quick] [--keep DIR]
"""

import argparse
import os
import sys
import tempfile
import time

import benchlib

# Communication-bound (one short sequence a GPU on 256 GPUs, where
# accumulation is what training runs use to amortize the all-reduce) and a
# compute-bound one.
CASES = [
    ("gpt2-small", "h100-8x32", ["--batch", "1", "--seq", "256"], (1, 2, 4, 8)),
    ("llama2-7b", "h100-8x32", ["--batch", "1", "--seq", "512"], (1, 4)),
    ("gpt2-medium", "h100-8x8", ["--batch", "8"], (1, 4)),
]
QUICK = [("gpt2-small", "h100-8x32", ["--batch", "1", "--seq", "256"], (1, 4))]
SCHEDULES = [("ddp", ["--schedule=ddp"]), ("braid", [])]
# Pure bf16 (every tensor), then bf16 compute with f32 master weights, the
# gradients all-reduced in f32 or in bf16.
PRECISIONS = [("pure bf16", ["--dtype", "bf16"]),
              ("bf16 + f32 master, f32 reduce", ["--autocast", "bf16"]),
              ("bf16 + f32 master, bf16 reduce", ["--autocast", "bf16", "--reduce-dtype", "bf16"])]
GPUS = {"h100-8x8": 64, "h100-8x32": 256}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one case, k = 1 and 4, 2 layers (tests)")
    parser.add_argument("--keep", help="keep the generated files in this directory")
    benchlib.add_cost_model_option(parser)
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-")
    os.makedirs(work, exist_ok=True)
    print("| model | cluster | GPUs | micro-batches k | compute ms | comm ms | step ms ddp / braid "
          "| exposed comm ms ddp / braid | braid ms per micro-batch | vs k = 1 | peak GiB braid |")
    print("|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|")
    failures = []
    start = time.time()
    for model, cluster, options, ks in (QUICK if args.quick else CASES):
        first = None
        for k in ks:
            mlir = os.path.join(work, "%s-%s-k%d.mlir" % (model, cluster, k))
            layers = ["--layers", "2"] if args.quick else []
            benchlib.generate([model, "--dtype", "bf16", "--world-size", str(GPUS[cluster]),
                               "--micro-batches", str(k), *options, *layers], mlir,
                              "bench-recipe")
            r = benchlib.simulate(mlir, cluster, SCHEDULES, "bench-recipe", args.cost_model)
            d, b = r["ddp"], r["braid"]
            per = b["step_time"] / k
            first = first or dict(b, per=per)
            ms = lambda x: "%.3f" % (x * 1e3)
            print("| %s | %s | %d | %d | %s | %s | %s / %s | %s / %s | %s | %.3fx | %s |" % (
                model, cluster, GPUS[cluster], k, ms(b["compute_time"]), ms(b["comm_time"]),
                ms(d["step_time"]), ms(b["step_time"]), ms(d["exposed_comm"]),
                ms(b["exposed_comm"]), ms(per), first["per"] / per,
                benchlib.peak_gib(b)))
            sys.stdout.flush()
            what = "%s on %s, k = %d" % (model, cluster, k)
            if b["step_time"] > d["step_time"] * (1 + 1e-9):
                failures.append("%s: braid %.6f ms slower than ddp %.6f ms" % (
                    what, b["step_time"] * 1e3, d["step_time"] * 1e3))
            if abs(b["comm_time"] - first["comm_time"]) > 0.1 * first["comm_time"]:
                failures.append("%s: communication %.3f ms, k = 1's %.3f ms: not once per step"
                                % (what, b["comm_time"] * 1e3, first["comm_time"] * 1e3))
            if k > 1 and first["exposed_comm"] > 0 and per >= first["per"]:
                failures.append("%s: %.3f ms per micro-batch, not below k = 1's %.3f ms with "
                                "communication exposed there" % (what, per * 1e3,
                                                                 first["per"] * 1e3))
    print()
    print("| model | cluster | GPUs | compute ms plain / clipped | step ms plain / clipped "
          "| exposed comm ms plain / clipped | clipping costs |")
    print("|---|---|---:|---|---|---|---:|")
    for model, cluster, options, _ in (QUICK if args.quick else CASES):
        rows = {}
        for name, extra in (("plain", []), ("clipped", ["--max-grad-norm", "1.0"])):
            mlir = os.path.join(work, "%s-%s-%s.mlir" % (model, cluster, name))
            layers = ["--layers", "2"] if args.quick else []
            benchlib.generate([model, "--dtype", "bf16", "--world-size", str(GPUS[cluster]),
                               *extra, *options, *layers], mlir, "bench-recipe")
            rows[name] = benchlib.simulate(mlir, cluster, SCHEDULES[1:], "bench-recipe",
                                           args.cost_model)["braid"]
        p, c = rows["plain"], rows["clipped"]
        ms = lambda x: "%.3f" % (x * 1e3)
        print("| %s | %s | %d | %s / %s | %s / %s | %s / %s | %+.1f%% |" % (
            model, cluster, GPUS[cluster], ms(p["compute_time"]), ms(c["compute_time"]),
            ms(p["step_time"]), ms(c["step_time"]), ms(p["exposed_comm"]),
            ms(c["exposed_comm"]), 100 * (c["step_time"] / p["step_time"] - 1)))
        sys.stdout.flush()
        what = "%s on %s, clipped" % (model, cluster)
        # By bytes: the bucket planner may cut the same bytes differently
        # around the clipping's extra compute.
        if c["comm_bytes"] != p["comm_bytes"]:
            failures.append("%s: communication moves %d bytes, unclipped %d" % (
                what, c["comm_bytes"], p["comm_bytes"]))
        if c["compute_time"] > 1.10 * p["compute_time"]:
            failures.append("%s: compute %.3f ms, more than 10%% over unclipped %.3f ms" % (
                what, c["compute_time"] * 1e3, p["compute_time"] * 1e3))
    print()
    print("| model | cluster | GPUs | precision | compute ms | comm ms | step ms | exposed comm ms "
          "| vs pure bf16 | peak GiB |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for model, cluster, options, _ in (QUICK if args.quick else CASES):
        rows = {}
        for name, extra in PRECISIONS:
            mlir = os.path.join(work, "%s-%s-%s.mlir" % (model, cluster, name.replace(" ", "-")))
            layers = ["--layers", "2"] if args.quick else []
            benchlib.generate([model, *extra, "--world-size", str(GPUS[cluster]), *options,
                               *layers], mlir, "bench-recipe")
            rows[name] = r = benchlib.simulate(mlir, cluster, SCHEDULES[1:],
                                               "bench-recipe", args.cost_model)["braid"]
            pure = rows[PRECISIONS[0][0]]
            ms = lambda x: "%.3f" % (x * 1e3)
            print("| %s | %s | %d | %s | %s | %s | %s | %s | %.3fx | %s |" % (
                model, cluster, GPUS[cluster], name, ms(r["compute_time"]), ms(r["comm_time"]),
                ms(r["step_time"]), ms(r["exposed_comm"]), r["step_time"] / pure["step_time"],
                benchlib.peak_gib(r)))
            sys.stdout.flush()
        pure, f32, half = (rows[n] for n, _ in PRECISIONS)
        what = "%s on %s" % (model, cluster)
        # f32 gradients move twice the bytes of bf16 ones; bf16 gradients
        # the same as pure bf16's. By bytes: the times differ by how many
        # buckets the planner cuts, each paying a collective's latency.
        if not 1.9 * pure["comm_bytes"] <= f32["comm_bytes"] <= 2.1 * pure["comm_bytes"]:
            failures.append("%s: f32 gradient all-reduces move %d bytes, not twice bf16's %d"
                            % (what, f32["comm_bytes"], pure["comm_bytes"]))
        if abs(half["comm_bytes"] - pure["comm_bytes"]) > 0.01 * pure["comm_bytes"]:
            failures.append("%s: bf16-reduced gradients move %d bytes, not pure bf16's %d"
                            % (what, half["comm_bytes"], pure["comm_bytes"]))
        # Master weights cost compute (the casts, an f32 optimizer) and
        # memory (f32 parameters and state next to the bf16 copies).
        for n, r in (("f32 reduce", f32), ("bf16 reduce", half)):
            if not (r["compute_time"] > pure["compute_time"]
                    and r["peak_memory_bytes"] > pure["peak_memory_bytes"]):
                failures.append("%s, master weights with %s: compute or memory not above pure "
                                "bf16's" % (what, n))
    print()
    print("%.0f s. Claims: communication once per step (within 10%% of k = 1's); the time per "
          "micro-batch falls with k where k = 1 exposes communication; braid >= ddp on every "
          "row; clipping adds no communication and at most 10%% compute; f32 master weights cost "
          "compute and memory, f32 gradients twice bf16's bytes: %s" % (
              time.time() - start, "hold" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
