# ZeRO stages 1 and 2 (braid-compile --zero, braid-shard-data-parallel) train
# what unsharded data parallelism trains. Each step of braid.models is
# compiled with --zero=0 and with --zero=1 or 2 and trained on CPU ranks from
# the same initial values and data for 10 steps:
#
#   - the GPT (fused q/k/v, tied embedding, AdamW) at dp 2, stage 1;
#   - the GPT at dp 2, stage 2, with 2 micro-batches accumulated, bf16
#     autocast and the gradients reduced in bf16;
#   - the GPT at dp 2 x tp 2 (4 ranks), stage 1;
#   - the GPT (2 layers) at dp 2 x pp 2 (4 ranks, 1F1B over 2 stages, each
#     stage's program sharding its own state), stages 1 and 2;
#   - a Llama (gated MLP, untied lm head) at dp 2, stage 1;
#   - the GPT at dp 4, stage 2;
#   - the GPT with gradient clipping at dp 2, stage 1, and at dp 4, stage 2,
#     with 2 micro-batches, bf16 autocast and bf16 reduction.
#
# The bound. Sharding changes one thing in the arithmetic: a gradient's
# average over the data-parallel ranks is a reduce-scatter's instead of an
# all-reduce's, so MPI may add the ranks' gradients in another order. The
# update is elementwise: a rank's piece of the updated parameter is the
# same floats as the same elements of the unsharded update, and the
# all-gather moves them unchanged. At dp 2 the average (a + b) / 2 is one
# rounding of a commutative sum, the same float in any order: the runs are
# equal bit for bit (losses, every parameter and optimizer-state array, at
# every step). At dp 4 two orders of a sum of 4 float32 terms differ by at
# most 2 * 3 u sum |g_r| (u = 2^-24, Higham's gamma_3 each): 3.6e-7 of sum
# |g_r|, and the ranks' gradients of different data have mixed signs, so
# |sum| is below sum |g_r| by a small factor (about 2 here): 7e-7 of the
# averaged gradient. The first moment after step 1 is (1 - beta1) g: 7e-7
# by norm, checked at 1e-5; the second, (1 - beta2) g^2, doubles it: 2e-5.
# Losses: the perturbation enters step 2 through the parameters, lr * 7e-7
# relative of a parameter's step, far below 1e-5 of the loss. With
# clipping, the squared global norm is summed per rank over its pieces (in
# float64, rounded to float32) and then over the ranks (N - 1 float32
# additions): all terms are positive, so it is within (N + 1) u of the
# unsharded sum, and the clip coefficient max_norm / sqrt(S) within
# (N + 1) u / 2, 1.5e-7 at N = 4: every gradient it scales moves by that
# much more, inside the same bounds. These cases are judged by the bounds
# at dp 2 too (the norm's order changes there). Later
# parameters are not compared elementwise at dp 4: AdamW turns a near-zero
# gradient's rounding into learning-rate-sized steps in any implementation.
#
# Also judged: the plan (one reduce-scatter per sharded gradient, no
# data-parallel all-reduce left; optimizer state per rank 1/dp of the
# unsharded plan's, parameters the same, peak lower, from braid-run
# --backend=sim's memory by use); files hold global values (the sharded
# run's saved file has the unsharded run's arrays and shapes); a run resumed
# from a file saved after 5 steps ends where 10 steps end, bit for bit, from
# the sharded plan's own file and from the unsharded plan's; clipping's sum
# of squares reads the pieces and is summed over the ranks; braid.models
# --zero asks braid-compile for a stage (braid.zero_stage), and --zero=0
# overrides it.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

STEPS = 10
LLAMA = ["--layers", "1", "--hidden", "64", "--heads", "4", "--seq", "16", "--vocab", "128",
         "--batch", "2"]
MIXED = ["--micro-batches", "2", "--autocast", "bf16", "--reduce-dtype", "bf16"]
CLIP = ["--max-grad-norm", "0.5"]
PIPELINE = ["--pp", "2", "--layers", "2"]

check = braidtest.Checker()


def memory_by_use(plan):
    """braid-run --backend=sim's memory by use, in KiB by use."""
    out = braidtest.braid_run(plan, backend="sim").stdout
    line = re.search(r"memory by use\s+(.*)", out).group(1)
    peak = int(re.search(r"peak memory\s+(\d+) bytes", out).group(1))
    uses = {}
    for use, amount, unit in re.findall(r"([a-z ]+?) ([\d.]+) (B|KiB|MiB|GiB)", line):
        uses[use.strip(", ")] = float(amount) * {"B": 1 / 1024, "KiB": 1, "MiB": 1024,
                                                "GiB": 1024 ** 2}[unit]
    return uses, peak


def same_arrays(a_path, b_path):
    """Whether two saved files hold the same arrays, names and shapes, bit for
    bit; and the names that differ."""
    with np.load(a_path) as a, np.load(b_path) as b:
        if sorted(a.files) != sorted(b.files):
            return False, sorted(set(a.files) ^ set(b.files))
        bad = [k for k in a.files if a[k].shape != b[k].shape or
               not np.array_equal(a[k], b[k])]
        return not bad, bad


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # what, model, dp, tp, stage, braid.models flags, exact
    cases = (("gpt dp 2 stage 1", "gpt", 2, 1, 1, ["--tiny"], True),
             ("gpt dp 2 stage 2 accumulated bf16", "gpt", 2, 1, 2, ["--tiny"] + MIXED, True),
             ("gpt dp 2 x tp 2 stage 1", "gpt", 2, 2, 1, ["--tiny"], True),
             ("gpt dp 2 x pp 2 stage 1", "gpt", 2, 1, 1, ["--tiny"] + PIPELINE, True),
             ("gpt dp 2 x pp 2 stage 2", "gpt", 2, 1, 2, ["--tiny"] + PIPELINE, True),
             ("llama dp 2 stage 1", "llama2-7b", 2, 1, 1, LLAMA, True),
             ("gpt dp 4 stage 2", "gpt", 4, 1, 2, ["--tiny"], False),
             ("gpt dp 2 stage 1 clipped", "gpt", 2, 1, 1, ["--tiny"] + CLIP, False),
             ("gpt dp 4 stage 2 clipped accumulated bf16", "gpt", 4, 1, 2,
              ["--tiny"] + CLIP + MIXED, False))
    for what, model, dp, tp, stage, extra, exact in cases:
        prefix = os.path.join(out, re.sub(r"[^\w]", "", what))
        mlir = prefix + ".mlir"
        pp = 2 if "--pp" in extra else 1
        ranks = dp * tp * pp
        braidtest.run([sys.executable, "-m", "braid.models", model, "--world-size", str(ranks),
                       "--tp", str(tp), "-o", mlir] + extra)
        ir = braidtest.run([braidtest.tool("braid-compile"), mlir, "--zero=%d" % stage,
                            "--no-overlap", "--emit=mlir", "-o", "-"]).stdout
        # (A tensor-parallel plan prints in MLIR's generic form.)
        lines = ir.splitlines()
        scattered = sum("braid.reduce_scatter" in l and "grad_of" in l for l in lines)
        averaged = sum("braid.all_reduce" in l and "grad_of" in l for l in lines)
        updates = sum(bool(re.search(r'braid\.adamw[" ]', l)) for l in lines)
        check(scattered == updates and averaged == 0 and
              "zero_stage = %d" % stage in ir,
              "%s: %d gradients reduce-scattered for %d updates, %d data-parallel all-reduces left"
              % (what, scattered, updates, averaged))
        if "--max-grad-norm" in extra:
            # Clipping's squares: of the pieces, summed over the
            # data-parallel ranks.
            norms = [l for l in lines if "braid.sum_squares" in l]
            summed = [l for l in lines if re.search(r"braid\.all_reduce .*grid_axes = \[0\] "
                                                    r"reduction = sum .*tensor<f32>$", l)]
            check(len(norms) == 1 and len(summed) == 1,
                  "%s: %d sum of squares of the pieces, %d summed over the ranks" % (
                      what, len(norms), len(summed)))
        plans, runs = {}, {}
        for zero in (0, stage):
            plan = "%s-zero%d.plan" % (prefix, zero)
            braidtest.compile_step(mlir, plan, "--zero=%d" % zero)
            plans[zero] = plan
            first = "%s-zero%d-1.npz" % (prefix, zero)
            braidtest.braid_run(plan, ranks=ranks, args=["--steps", "1", "--save", first])
            last = "%s-zero%d-%d.npz" % (prefix, zero, STEPS)
            p = braidtest.braid_run(plan, ranks=ranks, args=["--steps", str(STEPS), "--save", last])
            runs[zero] = (braidtest.losses(p.stdout), first, last)
        (base, base_first, base_last), (sharded, first, last) = runs[0], runs[stage]
        if exact:
            check(len(sharded) == STEPS and sharded == base,
                  "%s: %d losses equal to unsharded data parallelism's, bit for bit" % (
                      what, len(sharded)))
            for label, a, b in (("step 1", first, base_first), ("step %d" % STEPS, last, base_last)):
                same, bad = same_arrays(a, b)
                check(same, "%s: every array after %s equal to the unsharded run's%s" % (
                    what, label, "" if same else " (differ: %s)" % ", ".join(bad[:4])))
        else:
            worst = max(abs(a - b) / abs(b) for a, b in zip(sharded, base))
            check(len(sharded) == STEPS and worst <= 1e-5,
                  "%s: %d losses within 1e-5 of unsharded data parallelism's (worst %.2g)" % (
                      what, len(sharded), worst))
            with np.load(first) as a, np.load(base_first) as b:
                check(sorted(a.files) == sorted(b.files) and
                      all(a[k].shape == b[k].shape for k in b.files),
                      "%s: the saved file holds the unsharded run's %d arrays, global shapes" % (
                          what, len(b.files)))
                braidtest.check_moments(check, what, a, b)
        # Memory: the optimizer state a rank holds is 1/dp of the unsharded
        # plan's (every piece whole: these shapes all divide), its
        # parameters the same (the gathered parameter lands in its own
        # argument's bytes), the peak lower. (The simulator does not play
        # pipelined plans yet.)
        if pp > 1:
            continue
        (base_use, base_peak), (use, peak) = memory_by_use(plans[0]), memory_by_use(plans[stage])
        state, base_state = use["optimizer state"], base_use["optimizer state"]
        check(abs(state * dp - base_state) <= 0.2 and
              abs(use["parameters"] - base_use["parameters"]) <= 0.2 and peak < base_peak,
              "%s: optimizer state %.1f KiB a rank against %.1f unsharded (1/%d), parameters "
              "%.1f against %.1f KiB, peak %d against %d bytes" % (
                  what, state, base_state, dp, use["parameters"], base_use["parameters"],
                  peak, base_peak))
        if what.startswith("gpt dp 2 x tp 2"):
            # Resume: 5 steps saved, 5 more from the file, from the sharded
            # plan's own file and from the unsharded plan's.
            for zero in (stage, 0):
                half = "%s-zero%d-5.npz" % (prefix, zero)
                braidtest.braid_run(plans[zero], ranks=ranks, args=["--steps", "5", "--save", half])
                resumed = "%s-from%d-resumed.npz" % (prefix, zero)
                braidtest.braid_run(plans[stage], ranks=ranks,
                                    args=["--params", half, "--steps", "5", "--save", resumed])
                same, bad = same_arrays(resumed, last)
                check(same, "%s: 5 steps from the %s plan's file after 5 end where %d end, bit for "
                      "bit%s" % (what, "sharded" if zero else "unsharded", STEPS,
                                 "" if same else " (differ: %s)" % ", ".join(bad[:4])))

    # braid.models --zero asks in the module (braid.zero_stage); braid-compile
    # follows it unless --zero says otherwise.
    asked = os.path.join(out, "asked.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--world-size", "2", "--tiny",
                   "--zero", "2", "-o", asked])
    counts = []
    for flags in ([], ["--zero=0"]):
        ir = braidtest.run([braidtest.tool("braid-compile"), asked, "--no-overlap",
                            "--emit=mlir", "-o", "-"] + flags).stdout
        counts.append((ir.count("zero_stage = 2>"), ir.count("braid.reduce_scatter ")))
    check(counts[0][0] == 1 and counts[0][1] == 16 and counts[1] == (0, 0),
          "braid.models --zero 2: the plan is sharded (%d reduce-scatters), and not with "
          "--zero=0 (%d)" % (counts[0][1], counts[1][1]))

    check.finish("shard-data-parallel")


if __name__ == "__main__":
    main()
