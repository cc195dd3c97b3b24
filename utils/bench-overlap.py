#!/usr/bin/python3
"""Overlap benchmark: braid's schedule against naive and DDP-style schedules
on the simulated cluster.

For each model x cluster case, generates the data-parallel training step
(python/braid/models.py, bf16), compiles it three ways with braid-compile
--cluster=CLUSTER:
  naive  --schedule=naive  one all-reduce after the backward, optimizer after
  ddp    --schedule=ddp    25 MiB buckets (1 MiB first) in reverse order, one
                           communication stream, optimizer after every wait
  braid  (the default)     buckets sized by the cost model, started as soon
                           as ready, weight gradients first, each bucket's
                           update right after its wait
simulates each with braid-run --backend=sim, and prints a markdown table:
step time, exposed communication and efficiency of each schedule,
braid's speedup over naive and over ddp, and braid's peak memory per GPU
(marked where it exceeds the cluster's GPU memory). Then it checks the claims of
docs/Benchmarks.md (braid at least as fast as ddp on every row; efficiency
>= 0.95 wherever communication is at most compute) and exits 1 if one fails.

usage: /usr/bin/python3 utils/bench-overlap.py [--quick] [--cases N ...] [--keep DIR]
"""

import argparse
import os
import sys
import tempfile
import time

import benchlib

# (model, cluster, generator options): per-GPU micro-batches as commonly
# trained (GPT-2 1024 tokens x 8, BERT 512 x 16, Llama 4096 x 1).
GPT = ["--batch", "8"]
BERT = ["--batch", "16"]
LLAMA = ["--batch", "1"]
CASES = [
    ("gpt2-small", "a100-8", GPT),
    ("gpt2-small", "h100-8", GPT),
    ("gpt2-small", "h100-8x32", GPT),
    ("gpt2-medium", "h200-8", GPT),
    ("gpt2-medium", "h100-8x8", GPT),
    ("gpt2-xl", "h100-8", GPT),
    ("gpt2-xl", "h100-8x8", GPT),
    ("gpt2-xl", "h100-8x32", GPT),
    ("bert-large", "a100-8", BERT),
    ("bert-large", "h100-8x8", BERT),
    ("llama2-7b", "h100-8", LLAMA),
    ("llama2-7b", "h100-8x8", LLAMA),
    ("llama2-7b", "h100-8x32", LLAMA),
    ("llama2-13b", "h100-8x32", LLAMA),
    # Communication-bound: one short sequence a GPU.
    ("gpt2-small", "h100-8x32", ["--batch", "1", "--seq", "256"]),
    ("llama2-7b", "h100-8x32", ["--batch", "1", "--seq", "512"]),
]
QUICK = [0, 6, 10]  # one per cluster size: 8, 64 and 256 GPUs
SCHEDULES = [("naive", ["--schedule=naive"]), ("ddp", ["--schedule=ddp"]), ("braid", [])]
GPUS = {"a100-8": 8, "h100-8": 8, "h200-8": 8, "h100-8x8": 64, "h100-8x32": 256}


def case(model, cluster, options, work, layers=None, cost_model="v2"):
    mlir = os.path.join(work, "%s-%s.mlir" % (model, cluster))
    extra = ["--layers", str(layers)] if layers else []
    benchlib.generate([model, "--dtype", "bf16", "--world-size", str(GPUS[cluster]), *options,
                       *extra], mlir, "bench-overlap")
    return benchlib.simulate(mlir, cluster, SCHEDULES, "bench-overlap", cost_model)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="three cases (8, 64, 256 GPUs) with 2 layers each (tests)")
    parser.add_argument("--cases", type=int, nargs="+", help="case numbers (1-based) to run")
    parser.add_argument("--keep", help="keep the generated files in this directory")
    benchlib.add_cost_model_option(parser)
    args = parser.parse_args()
    chosen = list(range(len(CASES)))
    if args.quick:
        chosen = QUICK
    if args.cases:
        bad = [c for c in args.cases if not 1 <= c <= len(CASES)]
        if bad:
            parser.error("cases are 1..%d" % len(CASES))
        chosen = [c - 1 for c in args.cases]
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-")
    os.makedirs(work, exist_ok=True)

    print("| # | model | cluster | GPUs | compute ms | comm ms (braid) | step ms naive / ddp / braid "
          "| exposed comm ms naive / ddp / braid | efficiency naive / ddp / braid "
          "| braid vs naive | braid vs ddp | peak GiB/GPU (braid) |")
    print("|---:|---|---|---:|---:|---:|---|---|---|---:|---:|---:|")
    failures = []
    start = time.time()
    for k in chosen:
        model, cluster, options = CASES[k]
        r = case(model, cluster, options, work, layers=2 if args.quick else None,
                 cost_model=args.cost_model)
        n, d, b = r["naive"], r["ddp"], r["braid"]
        ms = lambda x: "%.3f" % (x * 1e3)  # noqa: E731
        print("| %d | %s | %s | %d | %s | %s | %s / %s / %s | %s / %s / %s | %.3f / %.3f / %.3f "
              "| %.3fx | %.4fx | %s |" % (
                  k + 1, model, cluster, GPUS[cluster], ms(b["compute_time"]), ms(b["comm_time"]),
                  ms(n["step_time"]), ms(d["step_time"]), ms(b["step_time"]),
                  ms(n["exposed_comm"]), ms(d["exposed_comm"]), ms(b["exposed_comm"]),
                  n["efficiency"], d["efficiency"], b["efficiency"],
                  n["step_time"] / b["step_time"], d["step_time"] / b["step_time"],
                  benchlib.peak_gib(b, 1)))
        sys.stdout.flush()
        if b["step_time"] > d["step_time"] * (1 + 1e-9):
            failures.append("case %d (%s on %s): braid %.6f ms slower than ddp %.6f ms" % (
                k + 1, model, cluster, b["step_time"] * 1e3, d["step_time"] * 1e3))
        if b["comm_time"] <= b["compute_time"] and b["efficiency"] < 0.95:
            failures.append("case %d (%s on %s): efficiency %.3f < 0.95 with communication <= "
                            "compute" % (k + 1, model, cluster, b["efficiency"]))
    print()
    print("%d cases, %.0f s. Claims: braid >= ddp on every row; efficiency >= 0.95 where "
          "communication <= compute: %s" % (len(chosen), time.time() - start,
                                            "hold" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
