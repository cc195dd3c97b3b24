# braid-run's progress lines and metrics log, and braid.curves: the nanoGPT
# recipe (its learning rates scheduled per param group, lr.0 and lr.1),
# exported for 2 ranks, trains 10 steps on a token file with --log-every 5
# and --metrics.
# - The log has a JSON line a step: its loss equal to the printed one, each
#   group's rate equal to the exported schedule's value for the step, the
#   step's 256 tokens (2 ranks x 4 rows x 32) and tokens a second equal to
#   tokens over its time, no time left after the last.
# - A progress line at steps 5 and 10 with the loss, rates, tokens a second,
#   time a step and time left.
# - Killed in step 8 and restarted with --resume, the log is appended to:
#   braid.curves reads it as steps 1-10 (a step taken again replaces the
#   first take) with the uninterrupted run's losses, and draws the PNG,
#   whose line holds those losses.
# - A --metrics file that cannot be written stops the run before step 1.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402
from braid import curves  # noqa: E402

RANKS = 2
STEPS = 10


def main():
    out, examples = sys.argv[1], sys.argv[2]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    check = Checker()
    spec = load_spec(os.path.join(examples, "nanogpt.py"), data_parallel=RANKS)
    prefix = os.path.join(out, "nanogpt")
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                 lr_scheduler=spec["lr_scheduler"], max_steps=spec["max_steps"],
                 micro_batches=spec["micro_batches"], max_grad_norm=spec["max_grad_norm"])
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)
    rows, seq = spec["example_inputs"][0].shape
    tokens = os.path.join(out, "tokens.bin")
    np.random.default_rng(0).integers(0, 64, 4000).astype(np.uint16).tofile(tokens)
    with np.load(prefix + ".npz") as f:
        schedules = {k: f[k] for k in ("lr.0", "lr.1")}

    def run(*extra, check_rc=True):
        return braidtest.braid_run(plan, ranks=RANKS, check=check_rc, args=[
            "--steps", str(STEPS), "--timeout", "120", "--params", prefix + ".npz",
            "--data", tokens, *extra])

    log = os.path.join(out, "metrics.jsonl")
    p = run("--log-every", "5", "--metrics", log)
    printed = [float(line.split()[-1]) for line in p.stdout.splitlines()
               if line.startswith("step ")]
    with open(log) as f:
        lines = [json.loads(line) for line in f]
    per_step = RANKS * rows * seq
    ok = [line["step"] for line in lines] == list(range(1, STEPS + 1))
    for k, line in enumerate(lines, 1):
        ok &= line["loss"] == printed[k - 1] and line["tokens"] == per_step
        ok &= all(np.float32(line["lr"][g]) == schedules[g][k - 1] for g in schedules)
        ok &= abs(line["tokens_per_s"] - per_step / (line["ms"] / 1e3)) <= \
            1e-3 * line["tokens_per_s"] + 0.1
    check(ok and lines[-1]["eta_s"] == 0,
          "--metrics: %d lines, losses as printed, lr.0/lr.1 the schedule's (step 10: %.6g), "
          "%d tokens a step, tokens/s = tokens / time" % (
              len(lines), lines[-1]["lr"]["lr.0"], per_step))
    progress = [line for line in p.stdout.splitlines() if line.startswith("progress:")]
    pattern = (r"progress: step (5|10)/10, loss \d+\.\d{4}, lr\.0 \S+, lr\.1 \S+, \d+ tokens/s, "
               r"\d+\.\d\d ms/step, left \d+:\d\d$")
    check(len(progress) == 2 and all(re.match(pattern, line) for line in progress),
          "--log-every 5: %s" % progress)

    # Killed and restarted: the log goes on.
    folder = os.path.join(out, "ckpt")
    relog = os.path.join(out, "restarted.jsonl")
    args = ("--metrics", relog, "--checkpoint-dir", folder, "--save-every", "5",
            "--resume", folder)
    p = run(*args, "--inject-fault=kill:1:8", check_rc=False)
    run(*args)
    with open(relog) as f:
        taken = [json.loads(line)["step"] for line in f]
    points = curves.load(relog)
    check(p.returncode != 0 and taken == list(range(1, 8)) + list(range(6, 11))
          and points == [(k, printed[k - 1]) for k in range(1, STEPS + 1)],
          "killed in step 8 and restarted: the log holds steps %s; braid.curves reads "
          "steps 1-10 with the uninterrupted losses" % taken)
    # braid.curves draws with matplotlib: this Python's, or Debian's where
    # this one lacks it (the torch 2.x venv).
    plotter = sys.executable if importlib.util.find_spec("matplotlib") else "/usr/bin/python3"
    png = os.path.join(out, "loss.png")
    q = subprocess.run([plotter, "-m", "braid.curves", relog, log, "-o", png],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    header = b""
    if os.path.exists(png):
        with open(png, "rb") as f:
            header = f.read(24)
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    drawn = subprocess.run(
        [plotter, "-c", "import json, sys; from braid import curves; "
         "fig = curves.draw({'a': curves.load(sys.argv[1])}, sys.argv[2]); "
         "print(json.dumps([float(y) for y in fig.axes[0].lines[0].get_ydata()]))",
         relog, os.path.join(out, "direct.png")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ys = json.loads(drawn.stdout) if drawn.returncode == 0 else None
    check(q.returncode == 0 and header[:8] == b"\x89PNG\r\n\x1a\n" and (width, height) == (700, 400)
          and ys == [v for _, v in points],
          "braid.curves (%s): a %dx%d PNG of 2 curves; its line holds the 10 losses (%s)"
          % (plotter, width, height, q.stdout.splitlines()[0] if q.stdout
             else (q.stderr + drawn.stderr).strip()[-300:]))

    p = run("--metrics", os.path.join(out, "no", "such", "metrics.jsonl"), check_rc=False)
    check(p.returncode == 1 and "cannot write --metrics file" in p.stderr
          and "metrics.jsonl" in p.stderr and "step 1/" not in p.stdout,
          "an unwritable --metrics: exit %d before step 1, '%s'" % (
              p.returncode, p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""))
    check.finish("export-metrics")


if __name__ == "__main__":
    main()
