# braid-pipeline's own stage programs, simulated (docs/Pipeline.md). A chain
# of p square layers (one per stage, a product each way: the forward
# x W^T, B the input's gradient dY W, W the weight's dY^T X and its sum over
# the micro-batches) and a cross-entropy loss, split by braid-pipeline into
# p stages running m micro-batches in each schedule, on a cluster of ideal
# links (transfers take a nanosecond, no contention), for p in {2, 4, 8}
# and m in {4, 8, 16} (m >= p):
#   - the trace names each kernel's action, and each stage runs its
#     actions in the schedule's order (written again in braidtest: GPipe,
#     1F1B, and ZB-H1's W of micro-batch k after the B of k + i on stage
#     i; stage 0's B is empty, nothing going down from it);
#   - ZB-H1's step is shorter than 1F1B's, which is not longer than
#     GPipe's (by more than 1e-4: the transfers' nanoseconds);
#   - the activations each stage holds at once (the simulator's
#     activation_peak_bytes: buffers a micro-batch's forward writes and its
#     backward reads, as the memory plan places them) are, with A_i the
#     bytes one micro-batch's forward keeps for its backward on stage i and
#     A^W_i those its W reads (both read from the stage programs here):
#     m A_i under GPipe, (p - i) A_i under 1F1B (Narayanan et al.), and
#     (p - i) A_i + i A^W_i under ZB-H1 (its i postponed W's each hold
#     their part), within 0.1%;
#   - interleaved 1F1B (2 virtual stages per rank, a layer each, on 2p
#     layers; p in {2, 4}, m in {2p, 4p}): each rank runs its chunks'
#     actions in Megatron-LM's order, its step is below 1F1B's on the same
#     layers (two a stage), and rank r holds 2 (p - r - 1) + (v - 1) p + 1
#     chunk-micro-batches of activations at its peak (Megatron's
#     1 + (p - 1)/(p v) times 1F1B's on the first rank);
#   - braid.timeline draws the trace as the pipeline diagram, and as text
#     (--text, docs/Pipeline.md's diagrams): each stage's line names its
#     actions in the order it runs them.
# The bubble's formulas are pipeline-bubble.py's, on uniform stages.
#
# REQUIRES: numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


ROWS, D = 256, 2048  # rows of a micro-batch, width of a layer


def chain(p, m, schedule, v=1):
    """braidtest.pipeline_chain of this test's layers."""
    return braidtest.pipeline_chain(p, m, schedule, v, ROWS, D)


def trace_actions(trace, p):
    """Per rank: its actions in the order its compute stream runs them, each
    action's kernel time, and the kernel time outside any action."""
    orders, times, rest = [[] for _ in range(p)], [{} for _ in range(p)], [0.0] * p
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e.get("name") == "thread_name"}
    spans = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"
                    and e.get("cat") == "compute"), key=lambda e: e["ts"])
    for e in spans:
        r = e["pid"]
        if not names[(r, e["tid"])].startswith("compute"):
            continue
        label = e["args"].get("action")
        if label is None:
            rest[r] += e["dur"] / 1e6
            continue
        step = (label[0], int(label[1:]))
        if not orders[r] or orders[r][-1] != step:
            orders[r].append(step)
        times[r][label] = times[r].get(label, 0.0) + e["dur"] / 1e6
    return orders, times, rest


TYPE = re.compile(r"tensor<([0-9x]+)x(f32|i64)>|tensor<(f32)>")


def kept_bytes(stage_text, readers="BW"):
    """The bytes micro-batch 0's forward keeps for its backward on a stage:
    values its ops (braid.action = #braid.action<F, micro_batch = 0>) compute
    that an op of its backward (B0; W0) reads, one of `readers`' kinds."""
    defined, kept = {}, set()
    for line in stage_text.splitlines():
        m = re.match(r"\s*(%[\w#:]+)(?:, %\w+)* = .*"
                     r"braid.action = #braid.action<([FBW]), micro_batch = 0>", line)
        if m and m.group(2) == "F":
            ty = line.rsplit(" -> ", 1)[-1] if " -> " in line else line.rsplit(": ", 1)[-1]
            defined[m.group(1)] = ty.strip()
        elif re.search(r"braid.action = #braid.action<[%s], micro_batch = 0>" % readers, line):
            for v in re.findall(r"%[\w]+", line.split(" = ", 1)[-1]):
                if v in defined:
                    kept.add(v)
    total = 0
    for v in kept:
        t = TYPE.search(defined[v])
        dims = [int(d) for d in t.group(1).split("x")] if t.group(1) else []
        n = 1
        for d in dims:
            n *= d
        total += n * (8 if t.group(2) == "i64" else 4)
    return total


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ideal_path = braidtest.ideal_links_cluster(out)

    for p in (2, 4, 8):
        for m in (4, 8, 16):
            if m < p:
                continue
            rep = {}
            for schedule in ("gpipe", "1f1b", "zb-h1"):
                name = os.path.join(out, "%s-p%d-m%d" % (schedule, p, m))
                with open(name + ".mlir", "w") as f:
                    f.write(chain(p, m, schedule))
                braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
                report, trace = name + ".report.json", name + ".trace.json"
                braidtest.run([braidtest.tool("braid-run"), "--backend=sim",
                               "--cluster=" + ideal_path, name + ".plan", "--report", report,
                               "--trace", trace])
                with open(report) as f:
                    r = rep[schedule] = json.load(f)
                with open(trace) as f:
                    orders, times, rest = trace_actions(json.load(f), p)
                # (Stage 0's B is empty: nothing goes down from it.)
                want = [[a for a in braidtest.pipeline_actions(schedule, p, i, m) if "%s%d" % a in times[i]]
                        for i in range(p)]
                check(orders == want, "%s p=%d m=%d: every stage runs its actions in the "
                      "schedule's order (stage %d: %s)" % (
                          schedule, p, m, p - 1, " ".join("%s%d" % a for a in orders[-1][:12])))
                if (p, m) == (4, 8):
                    drawn = braidtest.run([sys.executable, "-m", "braid.timeline", trace,
                                           "--text"]).stdout
                    print(drawn, end="")
                    lines = drawn.splitlines()
                    got = [[(a[0], int(a[1:])) for a in re.findall(r"[FBW]\d+", line)]
                           for line in lines]
                    check(len(lines) == p and all(line.startswith("rank %d " % i)
                                                  for i, line in enumerate(lines))
                          and got == orders,
                          "%s p=%d m=%d: braid.timeline --text draws a line per stage, its "
                          "actions in the order it runs them" % (schedule, p, m))
                if schedule != "gpipe":
                    stages = braidtest.run([braidtest.tool("braid-opt"), name + ".mlir",
                                            "--braid-pipeline"]).stdout
                    texts = stages.split("func.func @step_stage")[1:]
                    r["kept"] = [kept_bytes(t, "BW" if schedule == "1f1b" else "W")
                                 for t in texts]
            steps = {k: v["step_time"] for k, v in rep.items()}
            check(steps["zb-h1"] < steps["1f1b"] <= steps["gpipe"] * (1 + 1e-4),
                  "p=%d m=%d: zb-h1's step %.4f ms below 1f1b's %.4f ms, not above gpipe's "
                  "%.4f ms" % (p, m, steps["zb-h1"] * 1e3, steps["1f1b"] * 1e3,
                               steps["gpipe"] * 1e3))
            for i in range(p):
                a, aw = rep["1f1b"]["kept"][i], rep["zb-h1"]["kept"][i]
                held = {k: rep[k]["stages"][i]["activation_peak_bytes"] for k in rep}
                want = {"gpipe": m * a, "1f1b": (p - i) * a, "zb-h1": (p - i) * a + i * aw}
                ok = all(abs(held[k] - want[k]) <= 1e-3 * want[k] for k in want)
                check(ok, "p=%d m=%d stage %d: activations held (MiB) %s; of a micro-batch %.2f "
                      "kept for its backward, %.2f for its W: m, p - i, and p - i and i of W's" % (
                          p, m, i, ", ".join("%s %.3f (%.3f)" % (k, held[k] / 2**20,
                                                                want[k] / 2**20) for k in want),
                          a / 2**20, aw / 2**20))
    # The pipeline diagram of the last configuration's ZB-H1 trace.
    png = os.path.join(out, "zb-h1.png")
    drawn = braidtest.run([sys.executable, "-m", "braid.timeline", trace, "-o", png,
                           "--title", "zb-h1, p = %d, m = %d" % (p, m)])
    with open(png, "rb") as f:
        head = f.read(8)
    check(head == b"\x89PNG\r\n\x1a\n"
          and "the pipeline diagram of %d micro-batches" % m in drawn.stdout,
          "braid.timeline draws the ZB-H1 trace: %s" % drawn.stdout.strip())
    # Interleaved 1F1B: the chain of 2p layers on p ranks, 2 virtual stages
    # each (a layer a stage), against 1F1B's two layers a stage.
    v = 2
    for p, m in ((2, 4), (2, 8), (4, 8), (4, 16)):
        rep = {}
        for schedule in ("1f1b", "interleaved"):
            name = os.path.join(out, "%s-v%d-p%d-m%d" % (schedule, v, p, m))
            with open(name + ".mlir", "w") as f:
                f.write(chain(p, m, schedule, v))
            braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
            report, trace = name + ".report.json", name + ".trace.json"
            braidtest.run([braidtest.tool("braid-run"), "--backend=sim", "--cluster=" + ideal_path,
                           name + ".plan", "--report", report, "--trace", trace])
            with open(report) as f:
                rep[schedule] = json.load(f)
        with open(trace) as f:
            orders, times, rest = trace_actions(json.load(f), p)
        want = [[(k, b) for k, b, c in braidtest.interleaved_actions(p, r, m, v)
                 if "%s%d" % (k, b) in times[r]] for r in range(p)]
        check(orders == want, "interleaved v=%d p=%d m=%d: every rank runs its chunks' actions "
              "in Megatron-LM's order (rank 0: %s)" % (
                  v, p, m, " ".join("%s%d" % a for a in orders[0][:12])))
        steps = {k: x["step_time"] for k, x in rep.items()}
        check(steps["interleaved"] < steps["1f1b"],
              "interleaved v=%d p=%d m=%d: step %.4f ms below 1f1b's %.4f ms on the same layers" % (
                  v, p, m, steps["interleaved"] * 1e3, steps["1f1b"] * 1e3))
        # A rank holds a chunk's activations from its forward to its
        # backward: at most its warm-up plus one chunk-micro-batches, 2 (p -
        # r - 1) + (v - 1) p + 1 (the last rank's loss chunk keeps more
        # than the others, and is left out).
        stages = braidtest.run([braidtest.tool("braid-opt"), name + ".mlir",
                                "--braid-pipeline"]).stdout
        texts = stages.split("func.func @step_stage")[1:]
        for r in range(p - 1):
            a = kept_bytes(texts[r]) / v  # one chunk's, both chunks alike
            live = min(braidtest.interleaved_warmup(p, r, m, v) + 1, m * v)
            held = rep["interleaved"]["stages"][r]["activation_peak_bytes"]
            check(abs(held - live * a) <= 1e-3 * live * a,
                  "interleaved v=%d p=%d m=%d rank %d: activations held %.3f MiB, %d "
                  "chunk-micro-batches of %.3f MiB (1F1B's stage: %.3f MiB)" % (
                      v, p, m, r, held / 2**20, live, a / 2**20,
                      rep["1f1b"]["stages"][r]["activation_peak_bytes"] / 2**20))

    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
