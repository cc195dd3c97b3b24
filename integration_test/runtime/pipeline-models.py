# braid-pipeline on the models braid.models writes (docs/Pipeline.md): a
# Llama of 4 blocks (small shapes) written with --pp 2 --micro-batches 4,
# the step of one micro-batch that braid-compile splits into two stage
# programs, trains on 2 ranks (and data parallel 2 x pipeline 2 on 4) as
# braid.models' own accumulating step of the same 4 micro-batches does on 1
# (and on 2): every loss and every saved array within 1e-5 relative, in
# each schedule (gpipe, 1f1b, zb-h1: B and W of each block's backward
# split; interleaved: 2 virtual stages per rank, a block each, rank 0
# holding blocks 0 and 2), with the stage boundary given (after block 1:
# one tensor crosses each way; interleaved, after every block) and with
# the stages balanced by the cost model (the
# cut falls inside a block, where several tensors cross, each run of
# transfers one braid.send_recv); and pipeline 2 x tensor parallel 2 on 4
# ranks as tensor parallel 2 on 2, a GPT's too where a stage has no
# tensor-parallel collective (cut at h0.attn, at ln_f) and under the
# interleaved schedule with balanced stages. Clipped by the global norm (each
# stage's squared norm summed over the pipeline axis), every schedule trains
# as the clipped accumulating step. Stage 0 starts its data-parallel
# gradient all-reduces during its last micro-batch's backward. A GPT, whose lm head is tied to the token
# embedding (the last stage keeps a copy of the table, sends its part of the
# gradient down and receives the update), trains exactly too.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402
from braid.ir import PIPELINE_SCHEDULES  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


STEPS = 4
# Clipped by the global norm, the pipeline adds the squared norm's parts in
# another order than the single-rank step (each stage's tensors, then the
# stages over the pipeline axis, and over the tensor-parallel ranks): the
# two sums of T nonnegative terms differ by at most (T - 1) u relative (u =
# 2^-24, T <= 64 parameter tensors: 3.8e-6), the clip factor by half that,
# and every clipped gradient with it. AdamW divides that common factor out
# of each update except where the denominator is near its epsilon, so an
# update moves by at most the factor's difference of its size (<= lr per
# element), and the differences add up over the steps: after STEPS = 4 an
# element differs by <= 4 x 3.8e-6 x lr ~ 1.5e-5 lr, and the moments by
# 1.5e-5 (first) and 3e-5 (second) of their size. An element whose value
# is itself near zero then has no bound relative to itself, so each array
# is judged against its largest element: 1e-4 holds with 3x to spare
# whatever the machine's summation kernels (seen: 0 with --threads 1 on
# AVX-512 and Haswell kernels; with a reference that split its products
# over two threads, 2.3e-6 on AVX-512 and 1.1e-4 on Haswell, gradients
# rounded apart, which this bound does not cover: see train()).
CLIP_BOUND = 1e-4


def rel_to_largest(a, b):
    """max |a - b| over the reference's largest element (see CLIP_BOUND)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)

# The stage boundaries: one block a stage under the interleaved schedule
# (2 ranks x 2 virtual stages), two under the others.
CUTS = {s: "h1,h2,h3" if s == "interleaved" else "h2" for s in PIPELINE_SCHEDULES}
SHAPE = ["--layers", "4", "--hidden", "64", "--heads", "4", "--vocab", "128", "--seq", "16",
         "--batch", "2"]


def model(out, name, *flags):
    mlir = os.path.join(out, name + ".mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "llama2-7b"] + SHAPE + list(flags)
                  + ["-o", mlir])
    plan = os.path.join(out, name + ".plan")
    braidtest.compile_step(mlir, plan)
    return plan


def train(plan, ranks, save):
    # --timeout bounds a hang (a startup or --save that never completes,
    # issue 48 D1 and D2) to a minute and an error, not the test's limit.
    # --threads 1 on every run: by default a lone rank splits its products
    # over two threads and two ranks do not, and with OpenBLAS's Haswell
    # kernels a split product differs in its last bits (threads.py); the
    # comparisons here are of one arithmetic in two placements.
    result = braidtest.braid_run(plan, ranks=ranks, args=["--steps", str(STEPS), "--save", save,
                                                          "--timeout", "60", "--threads", "1"],
                                 timeout=300)
    return braidtest.losses(result.stdout)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for dp in (1, 2):
        want_save = os.path.join(out, "acc-dp%d.npz" % dp)
        want = train(model(out, "acc-dp%d" % dp, "--world-size", str(dp), "--micro-batches", "4"),
                     dp, want_save)
        check(len(want) == STEPS and want[-1] < want[0],
              "data parallel %d, 4 micro-batches accumulated: the loss falls %s" % (dp, want))
        ref = np.load(want_save)
        for schedule in PIPELINE_SCHEDULES:
            for cut in (CUTS[schedule], None):
                flags = ["--world-size", str(2 * dp), "--pp", "2", "--micro-batches", "4",
                         "--schedule-pp", schedule] + (["--stage-boundaries", cut] if cut else [])
                name = "pp-dp%d-%s-%s" % (dp, schedule, cut or "balanced")
                plan = model(out, name, *flags)
                dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
                save = os.path.join(out, name + ".npz")
                got = train(plan, 2 * dp, save)
                worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got else 1
                saved = np.load(save)
                arrays = max(braidtest.max_rel_diff(saved[k], ref[k]) for k in ref.files)
                check(len(got) == STEPS and worst <= 1e-5 and sorted(saved.files) == sorted(ref.files)
                      and arrays <= 1e-5 and "2 stages on axis 0" in dump,
                      "%s, stages %s, data parallel %d x pipeline 2 on %d ranks: %d losses within "
                      "1e-5 of accumulating on %d (worst %.2g), %d saved arrays (worst %.2g)" % (
                          schedule, "cut at " + cut if cut else "balanced", dp, 2 * dp, len(got), dp,
                          worst, len(saved.files), arrays))

    # Each stage reduces its gradients over the data-parallel axis during its
    # last micro-batch's backward: stage 0 (which sends nothing down) starts
    # buckets while that backward still computes, the last stage after it
    # has sent its gradient down (and idles in the drain).
    mlir = os.path.join(out, "pp-dp2-1f1b-h2.mlir")
    text = braidtest.run([braidtest.tool("braid-compile"), mlir, "--emit=mlir", "-o", "-"]).stdout
    stages = text.split("func.func @")[1:]
    first = stages[0].splitlines()
    starts = [i for i, line in enumerate(first) if "all_reduce_start" in line]
    last_b = max(i for i, line in enumerate(first) if "braid.action = #braid.action<B, micro_batch = 3>" in line
                 and "all_reduce" not in line)
    early = sum(1 for i in starts if i < last_b)
    check(early >= 2 and len(starts) >= 3,
          "1f1b, data parallel 2 x pipeline 2: stage 0 starts %d of its %d gradient buckets' "
          "all-reduces during its last micro-batch's backward" % (early, len(starts)))

    # Clipping by the global norm (--max-grad-norm): each stage's squared
    # norm summed over the pipeline axis, in each schedule, trains as the
    # accumulating step clipped on 1 rank; the clipping is active (a norm of
    # 0.05: the losses leave the unclipped ones').
    clip = ["--world-size", "1", "--micro-batches", "4", "--max-grad-norm", "0.05"]
    want = train(model(out, "acc-clip", *clip), 1, os.path.join(out, "acc-clip.npz"))
    plain = train(model(out, "acc-plain", *clip[:4]), 1, os.path.join(out, "acc-plain.npz"))
    gap = max(abs(a - b) / abs(b) for a, b in zip(want, plain))
    check(gap > 1e-4, "clipped to a norm of 0.05 the losses leave the unclipped ones by %.2g" % gap)
    ref = np.load(os.path.join(out, "acc-clip.npz"))
    for schedule in PIPELINE_SCHEDULES:
        save = os.path.join(out, "pp-clip-%s.npz" % schedule)
        got = train(model(out, "pp-clip-" + schedule, *clip[2:], "--world-size", "2",
                          "--pp", "2", "--schedule-pp", schedule,
                          "--stage-boundaries", CUTS[schedule]), 2, save)
        worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got else 1
        saved = np.load(save)
        arrays = max(rel_to_largest(saved[k], ref[k]) for k in ref.files)
        check(len(got) == STEPS and worst <= 1e-5 and arrays <= CLIP_BOUND,
              "%s, clipped by the global norm across 2 stages: %d losses within 1e-5 of the "
              "clipped accumulating step (worst %.2g), %d saved arrays within %g of their "
              "largest element (worst %.2g)" % (
                  schedule, len(got), worst, len(saved.files), CLIP_BOUND, arrays))

    # With tensor parallelism too: pipeline 2 x tensor parallel 2 on 4 ranks
    # (a grid of 2 x 1 x 2; braid-tensor-parallel partitions each stage
    # program) trains as tensor parallel 2 on 2 ranks, both accumulating 2
    # micro-batches.
    for clip in ([], ["--max-grad-norm", "0.05"]):
        tag = "-clip" if clip else ""
        tp_save = os.path.join(out, "tp2%s.npz" % tag)
        pptp_save = os.path.join(out, "pp2tp2%s.npz" % tag)
        want = train(model(out, "tp2" + tag, "--world-size", "2", "--tp", "2", "--micro-batches",
                           "2", *clip), 2, tp_save)
        got = train(model(out, "pp2tp2" + tag, "--world-size", "4", "--tp", "2", "--pp", "2",
                          "--micro-batches", "2", "--stage-boundaries", "h2", *clip), 4, pptp_save)
        worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got and want else 1
        ref, saved = np.load(tp_save), np.load(pptp_save)
        # Clipped, the squared norm adds its parts in another order (over
        # the stages, then the tensor-parallel ranks): arrays judged against
        # their largest element, within CLIP_BOUND (seen: 4.8e-6,
        # h1.mlp.c_proj.weight; 1.9e-4 element-wise).
        arrays = max(braidtest.max_rel_diff(saved[k], ref[k]) if not clip else
                     rel_to_largest(saved[k], ref[k]) for k in ref.files)
        check(len(got) == len(want) == STEPS and worst <= 1e-5
              and arrays <= (CLIP_BOUND if clip else 1e-5)
              and sorted(saved.files) == sorted(ref.files),
              "pipeline 2 x tensor parallel 2 on 4 ranks%s: %d losses within 1e-5 of tensor "
              "parallel 2 on 2 (worst %.2g), %d saved arrays (worst %.2g)" % (
                  ", clipped by the global norm" if clip else "", len(got), worst,
                  len(saved.files), arrays))

    # Issue 48, D1: a GPT on pipeline 2 x tensor parallel 2 cut where one
    # stage issues no tensor-parallel collective (at ln_f: the last stage is
    # the final norm and the head; at h0.attn: the first is the embeddings
    # and h0.ln_1) starts (every rank makes the same communicators in one
    # order) and trains as tensor parallel 2 on 2 ranks, its ranks of that
    # stage one replica (the same batch) rather than two data-parallel ones.
    # Losses within 1e-5; the tied table's gradient parts add in another
    # order (as below), so arrays are judged against their largest element,
    # as the tied GPT's below (the keys' third of c_attn.bias has a zero
    # gradient in exact arithmetic, where AdamW turns rounding into lr-sized
    # steps: seen 6.7e-3, h1.attn.c_attn.bias; every other array 1.8e-5
    # element-wise).
    # D5: under the interleaved schedule with the stages balanced by the
    # cost model (4 virtual stages), the balancer cut between the fused
    # attention weight and its bias, whose product is split over the
    # tensor-parallel ranks and which no transfer moves: it now cuts only
    # where the crossing values are whole, and trains the same.
    gpt_tp = ["gpt", "--tiny", "--layers", "2", "--tp", "2", "--micro-batches", "2"]
    plans = {}
    pp2 = ["--world-size", "4", "--pp", "2"]
    cuts = {"h0.attn": pp2 + ["--stage-boundaries", "h0.attn"],
            "ln_f": pp2 + ["--stage-boundaries", "ln_f"],
            "balanced-interleaved": pp2 + ["--schedule-pp", "interleaved"]}
    for name, flags in [("gpt-tp2", ["--world-size", "2"])] + \
            [("gpt-pp2tp2-" + c, f) for c, f in cuts.items()]:
        mlir = os.path.join(out, name + ".mlir")
        braidtest.run([sys.executable, "-m", "braid.models"] + gpt_tp + flags + ["-o", mlir])
        plans[name] = os.path.join(out, name + ".plan")
        braidtest.compile_step(mlir, plans[name])
    tp_save = os.path.join(out, "gpt-tp2.npz")
    want = train(plans["gpt-tp2"], 2, tp_save)
    ref = np.load(tp_save)
    for cut in cuts:
        save = os.path.join(out, "gpt-pp2tp2-%s.npz" % cut)
        got = train(plans["gpt-pp2tp2-" + cut], 4, save)
        worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got and want else 1
        saved = np.load(save) if os.path.exists(save) else {}
        arrays = max((rel_to_largest(saved[k], ref[k]), k) for k in ref.files) \
            if saved else (1, "nothing saved")
        check(len(got) == len(want) == STEPS and worst <= 1e-5 and arrays[0] <= 1e-2
              and sorted(saved.files) == sorted(ref.files),
              "GPT, pipeline 2 x tensor parallel 2 on 4 ranks cut at %s: %d losses within 1e-5 "
              "of tensor parallel 2 on 2 (worst %.2g), saved arrays within 1e-2 of their largest "
              "element (worst %.2g, %s)" % (cut, len(got), worst, arrays[0], arrays[1]))

    # A GPT ties its lm head to the token embedding: the last stage keeps a
    # copy of the table, sends its part of the gradient down and receives
    # the update at the end of the step.
    gpt = ["gpt", "--tiny", "--layers", "4", "--micro-batches", "2"]
    for schedule in PIPELINE_SCHEDULES:
        acc_save, pp_save = os.path.join(out, "gpt-acc.npz"), os.path.join(out, "gpt-pp.npz")
        plans = []
        for name, flags in (("gpt-acc", ["--world-size", "1"]),
                            ("gpt-pp-" + schedule, ["--world-size", "2", "--pp", "2",
                                                    "--schedule-pp", schedule,
                                                    "--stage-boundaries", CUTS[schedule]])):
            mlir = os.path.join(out, name + ".mlir")
            braidtest.run([sys.executable, "-m", "braid.models"] + gpt + flags + ["-o", mlir])
            plans.append(os.path.join(out, name + ".plan"))
            braidtest.compile_step(mlir, plans[-1])
        want, got = train(plans[0], 1, acc_save), train(plans[1], 2, pp_save)
        ref, saved = np.load(acc_save), np.load(pp_save)
        worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got and want else 1
        # The last stage's part of the table's gradient is summed over the
        # micro-batches before it is added to the first stage's, so sums
        # round in another order: arrays are judged against their largest
        # element (the keys' third of c_attn.bias has a zero gradient in
        # exact arithmetic, where AdamW turns rounding into lr-sized steps).
        arrays = max((float(np.max(np.abs(saved[k] - ref[k]))) /
                      max(float(np.max(np.abs(ref[k]))), 1e-30), k) for k in ref.files)
        dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plans[1]]).stdout
        check(len(got) == len(want) == STEPS and worst <= 1e-5 and arrays[0] <= 1e-2
              and sorted(saved.files) == sorted(ref.files) and dump.count("wte") >= 2,
              "GPT with its tied head, %s, pipeline 2 on 2 ranks: %d losses within 1e-5 of "
              "accumulating on 1 (worst %.2g), %d saved arrays within 1e-2 of their largest "
              "element (worst %.2g, %s)" % (schedule, len(got), worst, len(saved.files),
                                           arrays[0], arrays[1]))

    if failures:
        sys.exit("%d checks failed" % len(failures))
    print("all checks passed")


if __name__ == "__main__":
    main()
