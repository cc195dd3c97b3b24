#!/usr/bin/python3
"""Tensor-parallel benchmark: braid's overlapped schedule against a
Megatron-style baseline on simulated clusters.

For each case, generates the global training step with Megatron's layout
(python3 -m braid.models PRESET --tp 8 --vocab-parallel, bf16: the token
table and lm head split by vocabulary too), lets braid-compile partition
it (braid-tensor-parallel) and schedule it two ways for the cluster:
  megatron  --schedule=megatron  the tensor-parallel all-reduces synchronous
                                 on the compute stream, the data-parallel
                                 gradients in DDP's buckets (25 MiB, 1 MiB
                                 first), optimizer after every wait
  braid     (the default)        every collective started as early and
                                 waited as late as dependencies allow,
                                 buckets sized by the cost model
  braid+sp  (braid-compile's        the same with braid-sequence-parallel:
             default)              reduce-scatters and all-gathers around the
                                   per-token ops, which run on 1/t of the
                                   tokens
simulates each with braid-run --backend=sim, and prints a markdown table:
step time, exposed communication, the memory plan's peak per rank, and
braid's speedup. Exits 1 if braid (without sequence parallelism) is slower
than the baseline on a row, or sequence parallelism does not lower the peak.

usage: /usr/bin/python3 utils/bench-tensor-parallel.py [--quick] [--keep DIR]
"""

import argparse
import os
import sys
import tempfile
import time

import benchlib

# (preset, cluster, data-parallel ranks, generator options): t = 8, the
# ranks of one node; micro-batches as commonly trained with tensor
# parallelism.
CASES = [
    ("gpt2-medium", "h100-8", 1, ["--batch", "8"]),
    ("gpt2-medium", "h100-8x8", 8, ["--batch", "8"]),
    ("llama2-7b", "h100-8", 1, ["--batch", "1"]),
    ("llama2-7b", "h100-8x8", 8, ["--batch", "1"]),
]
TP = 8
SCHEDULES = [("megatron", ["--schedule=megatron", "--sequence-parallel=false"]),
             ("braid", ["--sequence-parallel=false"]), ("braid+sp", [])]


def case(model, cluster, dp, options, work, layers=None, cost_model="v2"):
    mlir = os.path.join(work, "%s-%s.mlir" % (model, cluster))
    extra = ["--layers", str(layers)] if layers else []
    benchlib.generate([model, "--dtype", "bf16", "--world-size", str(dp * TP), "--tp", str(TP),
                       "--vocab-parallel", *options, *extra], mlir, "bench-tensor-parallel")
    return benchlib.simulate(mlir, cluster, SCHEDULES, "bench-tensor-parallel", cost_model)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 layers per model (tests)")
    parser.add_argument("--keep", help="keep the generated files in this directory")
    benchlib.add_cost_model_option(parser)
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-tp-")
    os.makedirs(work, exist_ok=True)

    print("| model | cluster | dp x tp | compute ms | step ms megatron / braid / braid+sp "
          "| exposed comm ms megatron / braid / braid+sp "
          "| peak GiB/rank megatron / braid / braid+sp | braid vs megatron | braid+sp vs megatron |")
    print("|---|---|---|---:|---|---|---|---:|---:|")
    failures = []
    start = time.time()
    for model, cluster, dp, options in CASES:
        r = case(model, cluster, dp, options, work, layers=2 if args.quick else None,
                 cost_model=args.cost_model)
        m, b, p = r["megatron"], r["braid"], r["braid+sp"]
        ms = lambda x: "%.3f" % (x * 1e3)  # noqa: E731
        gib = benchlib.peak_gib
        print("| %s | %s | %d x %d | %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %.4fx "
              "| %.4fx |" % (
                  model, cluster, dp, TP, ms(b["compute_time"]),
                  ms(m["step_time"]), ms(b["step_time"]), ms(p["step_time"]),
                  ms(m["exposed_comm"]), ms(b["exposed_comm"]), ms(p["exposed_comm"]),
                  gib(m), gib(b), gib(p), m["step_time"] / b["step_time"],
                  m["step_time"] / p["step_time"]))
        sys.stdout.flush()
        if b["step_time"] > m["step_time"] * (1 + 1e-9):
            failures.append("%s on %s: braid %.6f ms slower than megatron %.6f ms" % (
                model, cluster, b["step_time"] * 1e3, m["step_time"] * 1e3))
        if p["peak_memory_bytes"] >= b["peak_memory_bytes"]:
            failures.append("%s on %s: sequence parallelism does not lower the peak (%d >= %d)"
                            % (model, cluster, p["peak_memory_bytes"], b["peak_memory_bytes"]))
    print()
    print("%d cases, %.0f s. Claims: braid >= the Megatron-style baseline on every row, "
          "sequence parallelism lowers the peak: %s" % (
        len(CASES), time.time() - start, "holds" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
