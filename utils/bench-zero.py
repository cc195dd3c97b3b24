#!/usr/bin/python3
"""Sharded data parallelism benchmark (ZeRO stages 1 and 2,
docs/ShardedDataParallel.md): memory per GPU against the ZeRO formulas,
and the step's time, on the simulated cluster.

For gpt2-xl and llama2-7b at data-parallel 8 (h100-8) and 64 (h100-8x8),
and llama2-13b at 256 (h100-8x32: utils/bench-overlap.py's row 14),
bf16 training with AdamW (python/braid/models.py --dtype bf16, as
utils/bench-overlap.py; GPT-2 8 x 1024 tokens, Llama 1 x 4096 a GPU),
compiles the step with braid-compile --zero=0, 1 and 2 and simulates each
with braid-run --backend=sim. For each it prints the memory plan's
parameters and optimizer state per GPU (the arena's bytes by use), the ZeRO
paper's formula for them (Rajbhandari et al. 2020, with this step's bytes:
parameters and gradients 2 bytes an element, K = 4 for AdamW's two bf16
moments, no separate master copy: stage 0 2 + 2 + 4 bytes a parameter,
stage 1 2 + 2 + 4 / N, stage 2 2 + (2 + 4) / N), the
plan's peak and the formula's parameters + gradients + optimizer state plus
the step's activations (the unsharded plan's peak less its formula: what a
step holds besides them, the same at every stage), the step time and the
communication left exposed.

Then it checks the claims of docs/ShardedDataParallel.md and exits 1 if one
fails: the plan's parameters and optimizer state equal the formula's within
the plan's alignment and the step count's scalar (64 KiB); stages 1 and 2
lower the peak below stage 0's, and stage 2's is no higher than stage 1's;
stage 2's peak is within 5% of the formula plus activations.

usage: /usr/bin/python3 utils/bench-zero.py [--keep DIR]
"""

import argparse
import os
import sys
import tempfile
import time

import benchlib

GPT = ["--batch", "8"]
LLAMA = ["--batch", "1"]
CASES = [
    ("gpt2-xl", "h100-8", 8, GPT),
    ("gpt2-xl", "h100-8x8", 64, GPT),
    ("llama2-7b", "h100-8", 8, LLAMA),
    ("llama2-7b", "h100-8x8", 64, LLAMA),
    # utils/bench-overlap.py's row 14, which does not fit unsharded.
    ("llama2-13b", "h100-8x32", 256, LLAMA),
]
STAGES = (0, 1, 2)
# Bytes a parameter, by stage: (parameters, gradients, optimizer state),
# each divided by N where the stage shards it.
FORMULA = {0: (2, 2, 4), 1: (2, 2, 4), 2: (2, 2, 4)}
SHARDED = {0: (False, False, False), 1: (False, False, True), 2: (False, True, True)}
SLACK = 64 * 1024


def formula(psi, n, stage):
    """The ZeRO formula's (parameters, gradients, optimizer state) bytes a
    GPU for `psi` parameters over `n` data-parallel ranks."""
    return tuple(b * psi / (n if s else 1) for b, s in zip(FORMULA[stage], SHARDED[stage]))


def gib(b):
    return "%.2f" % (b / 2 ** 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="keep the generated files in this directory")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-bench-zero-")
    os.makedirs(work, exist_ok=True)
    started = time.time()
    failures = []
    print("| model | cluster | dp | stage | parameters GiB plan / formula | optimizer state "
          "GiB plan / formula | gradients GiB formula | peak GiB plan / formula + activations "
          "| step ms | exposed comm ms |")
    print("|---|---|---:|---:|---|---|---:|---|---:|---:|")
    for model, cluster, dp, options in CASES:
        who = "%s on %s" % (model, cluster)
        mlir = os.path.join(work, "%s-%s.mlir" % (model, cluster))
        benchlib.generate([model, "--dtype", "bf16", "--world-size", str(dp), *options], mlir,
                          who)
        reports = benchlib.simulate(mlir, cluster, [("zero%d" % s, ["--zero=%d" % s])
                                                    for s in STAGES], who)
        base = reports["zero0"]
        psi = base["memory"]["parameters"] / 2
        activations = base["peak_memory_bytes"] - sum(formula(psi, dp, 0))
        for stage in STAGES:
            r = reports["zero%d" % stage]
            params, grads, state = formula(psi, dp, stage)
            plan_params, plan_state = r["memory"]["parameters"], r["memory"]["optimizer_state"]
            peak, predicted = r["peak_memory_bytes"], params + grads + state + activations
            print("| %s | %s | %d | %d | %s / %s | %s / %s | %s | %s / %s | %.1f | %.1f |" % (
                model, cluster, dp, stage, gib(plan_params), gib(params), gib(plan_state),
                gib(state), gib(grads), benchlib.peak_gib(r), gib(predicted),
                r["step_time"] * 1e3, r["exposed_comm"] * 1e3))
            if abs(plan_params - params) > SLACK or abs(plan_state - state) > SLACK:
                failures.append("%s dp %d stage %d: parameters %d and optimizer state %d bytes, "
                                "the formula %d and %d" % (model, dp, stage, plan_params,
                                                           plan_state, params, state))
            if stage and peak >= base["peak_memory_bytes"]:
                failures.append("%s dp %d stage %d: peak %d not below stage 0's %d" % (
                    model, dp, stage, peak, base["peak_memory_bytes"]))
            if stage == 2 and peak > reports["zero1"]["peak_memory_bytes"]:
                failures.append("%s dp %d stage 2: peak %d above stage 1's %d" % (
                    model, dp, peak, reports["zero1"]["peak_memory_bytes"]))
            if stage == 2 and abs(peak - predicted) > 0.05 * predicted:
                failures.append("%s dp %d stage 2: peak %s GiB, formula + activations %s" % (
                    model, dp, gib(peak), gib(predicted)))
    print()
    print("%d cases, %.0f s. Claims: the plan's parameters and optimizer state are the ZeRO "
          "formula's, stages 1 and 2 lower the peak, stage 2's peak is the formula plus the "
          "activations within 5%%: %s" % (len(CASES), time.time() - started,
                                          "holds" if not failures else "FAILS"))
    for f in failures:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
