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
its schedule's formula, the memory plan's peak of every stage, the
activations the first and the last stage hold at their peak, and rank 0's
exposed communication. GPipe's and 1F1B's formula is (p - 1)/(m + p - 1);
ZB-H1's is (p - 1)(F + B - W) / (m(F + B + W) + (p - 1)(F + B - W)) with
F, B and W a micro-batch's simulated forward, input-gradient and
weight-gradient kernel time averaged over the stages (the report's
action_compute), Qi et al.'s bubble for F >= W. GPT-2's presets tie
the lm head to the token embedding: the last stage keeps a copy of the
table (docs/Pipeline.md, "Tied parameters"). A case braid-compile refuses
prints its error in its row. The interleaved schedule runs 2 virtual
stages per rank (braid.models' default; the step split into 2p stages);
its formula is (p - 1)/(v m + p - 1) (Narayanan et al. 2021).

Claims checked (exit 1 otherwise): 1F1B's step no more than 2% above
GPipe's (the same bubble in theory; its transfers overlap more); ZB-H1's
and interleaved's steps below 1F1B's; 1F1B's peak no larger than GPipe's on any stage (stage
i holds p - i micro-batches' activations, GPipe every stage all m); ZB-H1's
activations no more than 1F1B's plus the W-parts it defers (its stage i
holds p - i micro-batches whole and i more of which only W's inputs
remain, so at most p micro-batches' worth on any stage); interleaved's first
stage no more than 1 + (p - 1)/(p v) of 1F1B's activations (Megatron-LM's
figure: its rank 0 holds 2 (p - 1) + (v - 1) p + 1 chunks of a micro-batch,
1F1B's p whole ones). Interleaved's claims are not checked with --quick,
whose chunks of half a block are uneven and dominated by their transfers.
The peak also holds
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
SCHEDULES = ("gpipe", "1f1b", "zb-h1", "interleaved")
# The interleaved schedule's virtual stages per rank (braid.models' default).
VIRTUAL = 2
GPUS = 64


def case(model, cluster, pp, m, schedule, work, layers):
    """The sim report of one case, or the error braid-compile gives."""
    mlir = os.path.join(work, "%s-pp%d-%s.mlir" % (model, pp, schedule))
    extra = ["--layers", str(layers)] if layers else []
    benchlib.generate([model, "--dtype", "bf16", "--world-size", str(GPUS), "--pp",
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


def formula(schedule, pp, m, report):
    """The bubble fraction the schedule's formula gives for the report's
    stages made uniform: GPipe's and 1F1B's (p - 1)/(m + p - 1), ZB-H1's from
    the stages' mean forward, input-gradient and weight-gradient time."""
    if schedule == "interleaved":
        return (pp - 1) / (VIRTUAL * m + pp - 1)
    if schedule != "zb-h1":
        return (pp - 1) / (m + pp - 1)
    f, b, w = (sum(s["action_compute"][k] for s in report["stages"]) / (pp * m)
               for k in ("F", "B", "W"))
    bubble = (pp - 1) * (f + b - w)
    return bubble / (m * (f + b + w) + bubble)


def check(model, pp, rows, quick):
    """The claims of one case's schedules, as failure messages (with
    `quick`, none of interleaved's: see main)."""
    failures = []
    g, o, z, v = (rows.get(s) for s in SCHEDULES)
    if g and o and o["step_time"] > 1.02 * g["step_time"]:
        failures.append("%s pp %d: 1F1B's step %.1f ms is more than 2%% above GPipe's "
                        "%.1f ms" % (model, pp, o["step_time"] * 1e3, g["step_time"] * 1e3))
    for name, r in (("ZB-H1", z), ("interleaved", None if quick else v)):
        if o and r and r["step_time"] >= o["step_time"]:
            failures.append("%s pp %d: %s's step %.1f ms is not below 1F1B's %.1f ms" % (
                model, pp, name, r["step_time"] * 1e3, o["step_time"] * 1e3))
    if o and v and not quick and (v["stages"][0]["activation_peak_bytes"] > 1.001 * (
            1 + (pp - 1) / (pp * VIRTUAL)) * o["stages"][0]["activation_peak_bytes"]):
        failures.append("%s pp %d: interleaved's first stage holds more than 1 + (p - 1)/(p v) "
                        "of 1F1B's activations" % (model, pp))
    for i in range(pp):
        if g and o and o["stages"][i]["peak_memory_bytes"] > g["stages"][i]["peak_memory_bytes"]:
            failures.append("%s pp %d: 1F1B's stage %d holds more than GPipe's" % (model, pp, i))
        if o and z and (z["stages"][i]["activation_peak_bytes"] * (pp - i) >
                        1.001 * pp * o["stages"][i]["activation_peak_bytes"]):
            failures.append("%s pp %d: ZB-H1's stage %d holds more than p / (p - i) of "
                            "1F1B's activations" % (model, pp, i))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one block per stage (8 blocks) and 8 micro-batches (tests)")
    parser.add_argument("--keep", help="keep the generated files in this directory")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-pp-")
    os.makedirs(work, exist_ok=True)

    print("| model | cluster | pp x dp | m | schedule | step ms | bubble (formula) "
          "| peak GiB per stage | activations GiB first / last | exposed comm ms |")
    print("|---|---|---|---:|---|---:|---|---|---|---:|")
    failures = []
    gains = {"zb-h1": [], "interleaved": []}
    memory = []
    start = time.time()
    for model, cluster, pp, m in CASES:
        if args.quick:
            m = 8
        rows = {}
        for schedule in SCHEDULES:
            r, error = case(model, cluster, pp, m, schedule, work, 8 if args.quick else None)
            if error:
                print("| %s | %s | %d x %d | %d | %s | refused: %s | | | | |" % (
                    model, cluster, pp, GPUS // pp, m, schedule, error))
                continue
            rows[schedule] = r
            mem = [s["peak_memory_bytes"] / 2 ** 30 for s in r["stages"]]
            act = [s["activation_peak_bytes"] / 2 ** 30 for s in r["stages"]]
            print("| %s | %s | %d x %d | %d | %s | %.1f | %.4f (%.4f) | %s%s | %.2f / %.2f "
                  "| %.1f |" % (
                      model, cluster, pp, GPUS // pp, m, schedule, r["step_time"] * 1e3,
                      r["bubble_fraction"], formula(schedule, pp, m, r),
                      " / ".join("%.1f" % x for x in mem),
                      "" if r["fits"] else " **does not fit**", act[0], act[-1],
                      r["exposed_comm"] * 1e3))
            sys.stdout.flush()
        failures += check(model, pp, rows, args.quick)
        for s in gains:
            if "1f1b" in rows and s in rows:
                gains[s].append(rows["1f1b"]["step_time"] / rows[s]["step_time"] - 1)
                if s == "interleaved":
                    memory.append(rows[s]["stages"][0]["activation_peak_bytes"] /
                                  rows["1f1b"]["stages"][0]["activation_peak_bytes"])
    print()
    for s, paper in (("zb-h1", "Qi et al. report up to 23%"),
                     ("interleaved", "Narayanan et al.: bubble (p-1)/(vm+p-1), v = %d" % VIRTUAL)):
        if gains[s]:
            print("%s over 1F1B: %.1f%% to %.1f%% faster (%s)" % (
                "ZB-H1" if s == "zb-h1" else "Interleaved", 100 * min(gains[s]),
                100 * max(gains[s]), paper))
    if args.quick:
        print("(--quick: interleaved's chunks are half a block, uneven, and its 2v transfers "
              "a micro-batch outweigh the bubble it saves; its claims are not checked)")
    if memory:
        print("Interleaved's first stage holds %.2f to %.2f times 1F1B's activations "
              "(Megatron-LM: 1 + (p - 1)/(p v))" % (min(memory), max(memory)))
    print()
    print("%d cases, %.0f s. Claims: 1F1B's step at most 2%% above GPipe's, ZB-H1's and "
          "interleaved's below 1F1B's; 1F1B's peak no larger than GPipe's on any stage, ZB-H1's "
          "activations at most p/(p - i) of 1F1B's on stage i, interleaved's first stage at "
          "most 1 + (p - 1)/(p v) of 1F1B's: %s" % (
              len(CASES), time.time() - start, "holds" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
