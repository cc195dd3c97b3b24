# Evaluation (`braid-run --eval-data FILE --eval-every N --eval-batches K`):
# the bundled GPT (vocabulary 64, sequence 32, 4 rows a rank) exported for 2
# data-parallel ranks with its evaluation program (braid.export's
# evaluation=True: @gpt_step_eval, the loss of model.eval() forward only),
# compiled into one plan over one arena (braid-share-arena), trains 20 steps
# on a token file and evaluates on a held-out one before the first step and
# every 5 steps, 3 batches.
# - The plan holds the evaluation program; braid-compile --report says where
#   braid-share-arena put it: the parameters in place, one arena.
# - Every evaluation loss (printed, and in --metrics as eval_loss) is within
#   1e-5 relative of float64 PyTorch's: model.eval() under torch.no_grad()
#   on the same held-out windows (braid.data, sequential from the file's
#   start, the batches split over the 2 ranks as DDP splits them), after
#   the same training; float32 PyTorch's own distance is printed.
# - Evaluating changes nothing of the training: the step losses and the
#   saved state are bit for bit those of the run without --eval-data, and
#   --check-memory finds no read of overwritten bytes in either program.
# - The evaluation's windows (--data-log PREFIX.eval) are the file's first
#   3 x 8 sequential windows at every evaluation, rank r rows 4r .. 4r + 3.
# - Bad input: --eval-data on a plan without an evaluation program, a
#   batch .npz as --eval-data, --eval-every without --eval-data, an eval
#   file shorter than a window: each a clear error, exit non-zero; and
#   braid.export refuses evaluation with tensor or pipeline parallelism.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, read_log, text_like  # noqa: E402
import braid  # noqa: E402
from braid import data  # noqa: E402
from braid.spec import torch_reference  # noqa: E402

STEPS = 20
RANKS = 2
SEED = 3
EVERY = 5
BATCHES = 3
# The bound of the must-show: a loss within 1e-5 relative of float64
# PyTorch. Each evaluation loss is a mean of 3 x 2 losses of 128 tokens,
# each a float32 forward (about 1e-7 relative per rounding, a few hundred
# roundings deep in the widest sums: a few 1e-6 at most), taken on
# parameters that followed float32 training for up to 20 steps, whose own
# losses export-token-data.py holds within 1e-5 of float64; float32
# PyTorch's distance (printed) is of the same size.
BOUND = 1e-5


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS)
    rows, seq = spec["example_inputs"][0].shape
    vocab = spec["model"].wte.num_embeddings
    global_rows = RANKS * rows
    prefix = os.path.join(out, "gpt")
    e = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                     spec["loss_fn"], spec["optimizer"], RANKS, output=prefix,
                     evaluation=True)
    check(e.summary["evaluation"] == "gpt_step_eval" and
          "braid.evaluates = @gpt_step" in e.mlir,
          "braid.export(evaluation=True) writes @%s with braid.evaluates = @gpt_step"
          % e.summary["evaluation"])
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)
    report = subprocess.run([braidtest.tool("braid-compile"), prefix + ".mlir", "-o",
                             os.path.join(out, "report.plan"), "--report"],
                            capture_output=True, text=True)
    line = next((x for x in (report.stdout + report.stderr).splitlines()
                 if "evaluation program @gpt_step_eval shares @gpt_step's arena" in x), "")
    check(report.returncode == 0 and " parameters in place" in line,
          "braid-compile --report: '%s'" % line.split("remark: ")[-1].strip())

    train = text_like(vocab, 5000, 0)
    held = text_like(vocab, 1500, 1)
    train_path, eval_path = os.path.join(out, "train.bin"), os.path.join(out, "val.bin")
    train.tofile(train_path)
    held.tofile(eval_path)

    def run(*args, check_rc=True, steps=STEPS, p=plan):
        return braidtest.braid_run(p, ranks=RANKS, check=check_rc, args=[
            "--steps", str(steps), "--timeout", "120", "--params", prefix + ".npz",
            "--seed", str(SEED), *args])

    metrics = os.path.join(out, "metrics.jsonl")
    log = os.path.join(out, "log")
    p = run("--data", train_path, "--eval-data", eval_path, "--eval-every", str(EVERY),
            "--eval-batches", str(BATCHES), "--metrics", metrics, "--data-log", log,
            "--save", prefix + ".eval.npz")
    evals = [(int(x.split()[2]), float(x.split()[-1])) for x in p.stdout.splitlines()
             if x.startswith("eval step ")]
    with open(metrics) as f:
        logged = [json.loads(x) for x in f]
    logged = [(x["step"], x["eval_loss"]) for x in logged if "eval_loss" in x]
    check([k for k, _ in evals] == list(range(0, STEPS + 1, EVERY)) and
          [(k, "%.9g" % v) for k, v in logged] == [(k, "%.9g" % v) for k, v in evals],
          "evaluations after steps %s, printed and in --metrics alike"
          % [k for k, _ in evals])

    def batches(k):
        ids, labels = data.batch(train, seq, global_rows, k, SEED)
        return (torch.from_numpy(ids),), (torch.from_numpy(labels),)
    eval_batches = []
    for j in range(1, BATCHES + 1):
        ids, labels = data.batch(held, seq, global_rows, j, sampling="sequential")
        eval_batches.append(((torch.from_numpy(ids),), (torch.from_numpy(labels),)))
    ref64, ref32 = [], []
    torch_reference(spec, None, None, STEPS, double=True, ranks=RANKS,
                          batches=batches, evaluation=(EVERY, eval_batches, ref64))
    torch_reference(spec, None, None, STEPS, ranks=RANKS, batches=batches,
                          evaluation=(EVERY, eval_batches, ref32))
    diff = max(abs(b - r) / abs(r) for (_, b), (_, r) in zip(evals, ref64))
    diff32 = max(abs(b - r) / abs(r) for (_, b), (_, r) in zip(ref32, ref64))
    check([k for k, _ in ref64] == [k for k, _ in evals] and diff <= BOUND and
          evals[-1][1] < evals[0][1],
          "eval losses %s within %.1e of float64 PyTorch's model.eval() (bound %.0e; float32 "
          "PyTorch %.1e)" % (", ".join("%.4f" % v for _, v in evals), diff, BOUND, diff32))

    # Evaluation leaves the training alone.
    q = run("--data", train_path, "--save", prefix + ".plain.npz")
    with np.load(prefix + ".eval.npz") as a, np.load(prefix + ".plain.npz") as b:
        same = sorted(a.files) == sorted(b.files) and \
            all(np.array_equal(a[k], b[k]) for k in a.files)
    check(braidtest.losses(p.stdout) == braidtest.losses(q.stdout) and same,
          "with and without --eval-data: the same %d step losses and saved arrays, bit for bit"
          % STEPS)
    m = run("--data", train_path, "--eval-data", eval_path, "--eval-every", "2",
            "--check-memory", check_rc=False, steps=4)
    check(m.returncode == 0 and m.stdout.count("eval step ") == 3,
          "--check-memory with evaluations before step 1 and after steps 2 and 4: exit %d"
          % m.returncode)

    # The evaluation's windows: the file's first BATCHES x 8 sequential
    # windows, the same at every evaluation.
    ok = True
    for r in range(RANKS):
        lines = read_log(log + ".eval", r)
        ok &= len(lines) == BATCHES * len(evals)
        for i, line in enumerate(lines):
            j = i % BATCHES + 1
            want = data.window_starts(len(held), seq, global_rows, j, sampling="sequential")
            ok &= line["step"] == j and line["starts"] == \
                want[r * rows:(r + 1) * rows].tolist()
    check(ok, "eval windows (--data-log PREFIX.eval): batches 1..%d sequential from the "
          "start at every evaluation, rank r rows %d r .. %d r + %d" % (BATCHES, rows, rows,
                                                                       rows - 1))

    # Bad input.
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], RANKS, output=prefix + "-train")
    braidtest.compile_step(prefix + "-train.mlir", prefix + "-train.plan")
    short = os.path.join(out, "short.bin")
    held[:seq].tofile(short)
    for what, args, expect, p_ in (
            ("a plan without an evaluation program", ["--eval-data", eval_path],
             "has no evaluation program (export the step with braid.export(..., "
             "evaluation=True)", prefix + "-train.plan"),
            ("a batch .npz as --eval-data", ["--eval-data", prefix + ".batch.npz"],
             "--eval-data takes a token file", plan),
            ("--eval-every without --eval-data", ["--eval-every", "2"],
             "--eval-every and --eval-batches go with --eval-data", plan),
            ("an eval file shorter than a window", ["--eval-data", short],
             "short.bin holds %d tokens, fewer than a window of %d" % (seq, seq + 1), plan)):
        r = run("--data", train_path, *args, check_rc=False, steps=1, p=p_)
        text = r.stdout + r.stderr
        check(r.returncode != 0 and expect in text,
              "%s: exit %d, '%s'" % (what, r.returncode,
                                     next((x.strip() for x in text.splitlines()
                                           if expect[:20] in x), text.strip()[-200:])))
    try:
        braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                     spec["loss_fn"], spec["optimizer"], 4, tensor_parallel=2,
                     tensor_parallel_plan=spec["tensor_parallel_plan"], evaluation=True)
        refused = ""
    except braid.ExportError as err:
        refused = str(err)
    check("evaluation is exported for data parallelism only" in refused,
          "braid.export(evaluation=True, tensor_parallel=2): '%s'" % refused)
    check.finish("export-eval")


if __name__ == "__main__":
    main()
