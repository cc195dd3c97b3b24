#!/usr/bin/python3
"""Pipeline benchmark: the schedules of braid-pipeline side by side on
simulated clusters (docs/Pipeline.md).

For each case, generates the step of one micro-batch with a pipeline axis
(python3 -m braid.models PRESET --dtype bf16 --pp P --micro-batches M
--schedule-pp NAME: the stages balanced by the cost model), lets
braid-compile split it into stage programs and schedule them, simulates
each with braid-run --backend=sim on the cluster (the pipeline axis
outermost: stages on different nodes, data parallelism within a node), and
prints a markdown table: step time, the simulated bubble fraction against
GPipe's and 1F1B's (p - 1)/(m + p - 1), the memory plan's peak of the first
and the last stage, and rank 0's exposed communication. GPT-2's presets tie
the lm head to the token embedding: the last stage keeps a copy of the
table (docs/Pipeline.md, "Tied parameters"). A case braid-compile refuses
prints its error in its row.

Claims checked (exit 1 otherwise): 1F1B's step no more than 2% above
GPipe's (the same bubble in theory; its transfers overlap more); 1F1B's
peak no larger than GPipe's on any stage (stage i holds p - i
micro-batches' activations, GPipe every stage all m). The peak also holds
the stage's parameters and optimizer state, so where the last stage's lm
head outweighs a block's activations (--quick: one block a stage) it need
not fall along the stages.

usage: /usr/bin/python3 utils/bench-pipeline.py [--quick] [--keep DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import benchlib

# (preset, cluster, pipeline stages, micro-batches): 64 GPUs, so the
# data-parallel ranks are 64 / p.
CASES = [
    ("llama2-7b", "h100-8x8", 4, 16),
    ("llama2-7b", "h100-8x8", 8, 16),
    ("llama2-13b", "h100-8x8", 4, 16),
    ("llama2-13b", "h100-8x8", 8, 32),
    ("gpt2-xl", "h100-8x8", 4, 16),
    ("gpt2-xl", "h100-8x8", 8, 32),
]
SCHEDULES = ("gpipe", "1f1b")
GPUS = 64


def case(model, cluster, pp, m, schedule, work, layers):
    """The sim report of one case, or the error braid-compile gives."""
    mlir = os.path.join(work, "%s-pp%d-%s.mlir" % (model, pp, schedule))
    extra = ["--layers", str(layers)] if layers else []
    benchlib.generate([model, "--dtype", "bf16", "--world-size", str(GPUS // pp), "--pp",
                       str(pp), "--micro-batches", str(m), "--schedule-pp", schedule, *extra],
                      mlir, "bench-pipeline")
    plan = mlir.replace(".mlir", ".plan")
    p = subprocess.run([os.path.join(benchlib.BIN, "braid-compile"), mlir,
                        "--cluster=" + cluster, "-o", plan],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        errors = [line for line in p.stderr.splitlines() if "error:" in line]
        return None, (errors[0].split("error: ", 1)[1] if errors else p.stderr.strip())
    report = plan + ".json"
    benchlib.run([os.path.join(benchlib.BIN, "braid-run"), "--backend=sim", plan,
                  "--report", report], "bench-pipeline")
    with open(report) as f:
        return json.load(f), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one block per stage (8 blocks) and 8 micro-batches (tests)")
    parser.add_argument("--keep", help="keep the generated files in this directory")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-pp-")
    os.makedirs(work, exist_ok=True)

    print("| model | cluster | pp x dp | m | schedule | step ms | bubble (formula) "
          "| peak GiB first / last stage | exposed comm ms |")
    print("|---|---|---|---:|---|---:|---|---|---:|")
    failures = []
    start = time.time()
    for model, cluster, pp, m in CASES:
        if args.quick:
            m = 8
        rows = {}
        for schedule in SCHEDULES:
            r, error = case(model, cluster, pp, m, schedule, work, 8 if args.quick else None)
            if error:
                print("| %s | %s | %d x %d | %d | %s | refused: %s | | | |" % (
                    model, cluster, pp, GPUS // pp, m, schedule, error))
                continue
            rows[schedule] = r
            formula = (pp - 1) / (m + pp - 1)
            mem = [s["peak_memory_bytes"] / 2 ** 30 for s in r["stages"]]
            print("| %s | %s | %d x %d | %d | %s | %.1f | %.4f (%.4f) | %.2f / %.2f%s | %.1f |" % (
                model, cluster, pp, GPUS // pp, m, schedule, r["step_time"] * 1e3,
                r["bubble_fraction"], formula, mem[0], mem[-1],
                "" if r["fits"] else " **does not fit**", r["exposed_comm"] * 1e3))
            sys.stdout.flush()
        if len(rows) == 2:
            g, o = rows["gpipe"], rows["1f1b"]
            if o["step_time"] > 1.02 * g["step_time"]:
                failures.append("%s pp %d: 1F1B's step %.1f ms is more than 2%% above GPipe's "
                                "%.1f ms" % (model, pp, o["step_time"] * 1e3,
                                             g["step_time"] * 1e3))
            for i, (a, b) in enumerate(zip(g["stages"], o["stages"])):
                if b["peak_memory_bytes"] > a["peak_memory_bytes"]:
                    failures.append("%s pp %d: 1F1B's stage %d holds more than GPipe's" % (
                        model, pp, i))
    print()
    print("%d cases, %.0f s. Claims: 1F1B's step at most 2%% above GPipe's, its peak no "
          "larger than GPipe's on any stage: %s" % (
              len(CASES), time.time() - start, "holds" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
