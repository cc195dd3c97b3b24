# braid-pipeline's balancer (docs/Pipeline.md, "Balanced stages") cuts the
# step where the largest stage's forward and backward time is least, by the
# cost model of the cluster the step is compiled for, and with --report
# says what it estimated for each stage. Issue 48 (D5) asked whether
# "balanced" balances cost: a GPT of 8 blocks on 4 stages gave its last
# stage 298 ms of kernels against 178-185 on the others. Here, on a GPT
# whose tied lm head costs about as much as five blocks (vocabulary 50304
# against 12 x 768 for a block's products), the simulated kernel time of
# each stage's forwards and backwards, per micro-batch, equals the
# balancer's estimate: both are sums of the same ops' cost-model seconds,
# and the stage programs add only each gradient's accumulation over the
# micro-batches and the batch slices: per micro-batch, an add per
# gradient (about 32 on a stage of 2.7 blocks, each reading a parameter's
# bytes twice and writing them once: 2.7 x 7.1M x 12 B / 3.35 TB/s = 0.07
# ms, plus 32 launches of about 2 us) against 22 ms of a stage's kernels:
# 0.6%, bounded by 2%. (At small shapes the launches dominate: 5% with 256
# tokens a micro-batch.) A misattributed op (the head's weight gradient, which lands on the
# last stage with the head, counted on the embedding's) would be a third
# of the head's time off. The last stage is the head alone, as it must be
# where the head outweighs a quarter of the step: the others share the
# blocks, each within a block's time of the next, so the balancer's
# largest stage is the head and no cut does better at parameter
# granularity (splitting the head itself over the stages, vocabulary
# parallelism in the pipeline, is not built).
#
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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlir, plan = os.path.join(out, "gpt.mlir"), os.path.join(out, "gpt.plan")
    # The issue's case: braid.models' GPT (GPT-2 small's shapes, 8
    # sequences of 1024 a micro-batch), 8 micro-batches, 2 replicas.
    m = 8
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--world-size", "8", "--layers",
                   "8", "--pp", "4", "--micro-batches", str(m), "-o", mlir])
    compiled = braidtest.run([braidtest.tool("braid-compile"), mlir, "--report", "-o", plan])
    found = re.search(r"stage boundaries balanced by the cost model: (.*); forward and backward "
                      r"per stage \(ms, cluster '([^']*)'\): ([0-9., ]+)", compiled.stderr)
    check(found is not None, "braid-compile --report names the balanced boundaries")
    if not found:
        return
    boundaries = [b.strip().strip("'") for b in found.group(1).split(",")]
    estimate = [float(x) * 1e-3 for x in found.group(3).split(",")]
    report = os.path.join(out, "gpt.json")
    braidtest.run([braidtest.tool("braid-run"), "--backend=sim", plan, "--report", report])
    with open(report) as f:
        stages = json.load(f)["stages"]
    simulated = [(s["action_compute"]["F"] + s["action_compute"]["B"] + s["action_compute"]["W"])
                 / m for s in stages]
    worst = max(abs(a - b) / b for a, b in zip(simulated, estimate))
    check(len(simulated) == len(estimate) == 4 and worst <= 0.02,
          "each stage's simulated forward and backward kernels per micro-batch within 2%% of "
          "the balancer's estimate (worst %.2g; simulated %s ms)" % (
              worst, ", ".join("%.3f" % (s * 1e3) for s in simulated)))
    check(boundaries[-1] == "ln_f.weight" and estimate[-1] == max(estimate),
          "the last stage is the final norm and the tied head alone, the largest (boundaries %s)"
          % ", ".join(boundaries))
    # A block's forward and backward: the blocks' stages hold 8 of them.
    block = sum(estimate[:-1]) / 8
    spread = max(estimate[:-1]) - min(estimate[:-1])
    check(spread <= block,
          "the blocks' stages within a block's time of each other (%.3f ms apart, a block "
          "%.3f ms)" % (spread * 1e3, block * 1e3))


main()
if failures:
    sys.exit("%d checks failed" % len(failures))
