"""Helpers for the exporter's tests."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "Inputs"))
import braidtest  # noqa: E402,F401  (re-exported for the tests)
from braidtest import Checker  # noqa: E402,F401  (re-exported)
from braid.export import load_spec, torch_reference  # noqa: E402,F401  (re-exported)


def read_log(prefix, rank):
    """Rank `rank`'s `braid-run --data-log PREFIX` lines, as dicts."""
    import json
    with open("%s.rank%d.jsonl" % (prefix, rank)) as f:
        return [json.loads(line) for line in f]


def resumed(run, out, prefix, steps, data_args):
    """Training resumed from a --save after half the steps against the
    uninterrupted run, both by `run(steps, *args)` (braid-run of the plan)
    from `prefix`.npz with `data_args`: (the steps the resumed run's
    --data-log records, its printed losses, the uninterrupted run's losses
    from the same step), to be equal."""
    half = steps // 2
    run(half, "--params", prefix + ".npz", *data_args, "--save", prefix + ".half.npz")
    log = os.path.join(out, "resumed")
    p = run(half, "--params", prefix + ".half.npz", *data_args, "--data-log", log)

    def losses(stdout):
        return [line.split()[-1] for line in stdout.splitlines() if line.startswith("step ")]

    whole = losses(run(steps, "--params", prefix + ".npz", *data_args).stdout)
    return [line["step"] for line in read_log(log, 0)], losses(p.stdout), whole[half:]


def text_like(vocab, n, seed):
    """`n` uint16 tokens below `vocab` that read like text to a small model:
    runs that count up from random starts, of random lengths (something to
    learn)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pieces, k = [], 0
    while k < n:
        m = int(rng.integers(5, 40))
        pieces.append((int(rng.integers(0, vocab)) + np.arange(m)) % vocab)
        k += m
    return np.concatenate(pieces)[:n].astype(np.uint16)



def train(plan, exported, prefix, steps, ranks):
    """braid-run of `plan` on `ranks` ranks for `steps` steps from the
    export's parameters and batch, with --check-memory. Returns the losses
    and the saved final state (PREFIX.out.npz, without the loss)."""
    import numpy as np
    p = braidtest.braid_run(plan, ranks=ranks, args=[
        "--steps", str(steps), "--params", exported.paths["params"], "--data",
        exported.paths["batch"], "--save", prefix + ".out.npz", "--timeout", "120",
        "--check-memory"])
    with np.load(prefix + ".out.npz") as f:
        state = {k: f[k] for k in f.files if k != "loss"}
    return braidtest.losses(p.stdout), state


def against_ddp(check, name, spec, exported, global_batch, steps, ranks, processes=None):
    """Compiles the export, trains it `steps` steps on `processes` cpu ranks
    (default `ranks`; more where each data-parallel replica is several
    tensor-parallel ranks) from its files, and checks it with
    braid.compare.against_pytorch against PyTorch DDP on `ranks` ranks on
    the same global batch (inputs, targets)."""
    import numpy as np
    from braid import compare
    prefix = exported.paths["mlir"][:-len(".mlir")]
    plan, save = prefix + ".plan", prefix + ".trained.npz"
    braidtest.compile_step(exported.paths["mlir"], plan)
    p = braidtest.braid_run(plan, ranks=processes or ranks, args=[
        "--steps", str(steps), "--params", exported.paths["params"], "--data",
        exported.paths["batch"], "--save", save, "--timeout", "120"])
    losses = braidtest.losses(p.stdout)
    with np.load(save) as f:
        trained = {k: f[k] for k in f.files if k != "loss"}
    result = compare.against_pytorch(spec, global_batch, losses, trained, steps, ranks=ranks)
    for line in compare.describe(result):
        print("     %s: %s" % (name, line))
    check(result["ok"], "%s: %d steps on %d ranks vs PyTorch DDP%s%s" % (
        name, steps, processes or ranks, " on %d" % ranks if processes else "",
        "".join("\n       " + p for p in result["problems"])))
