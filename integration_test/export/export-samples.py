# braid-run on a dataset of samples (`--data SAMPLES.npz --sampling
# random|sequential`): the bundled MLP (32 features, 10 classes, SGD with
# momentum, 16 rows a rank) exported for 2 data-parallel ranks trains 20
# steps on 200 samples (x [200, 32] float64, labels [200] int64), 6 steps an
# epoch of the global batch of 32 (8 samples left over each epoch), so the
# run crosses three epoch boundaries.
# - Every rank's samples at every step (--data-log) are those
#   braid.data.sample_indices gives for its rows (rank r rows 16r ..
#   16r + 15 of the global batch, disjoint, together the 32), a new order
#   each epoch; with sequential sampling the samples in file order.
# - PyTorch trained on the same samples (braid.data.sample_batch, as DDP on
#   2 ranks: braid.compare.against_pytorch): every loss within 1e-5 relative
#   of float64 PyTorch, the final arrays as export-train.py holds them.
# - Resumed after 10 steps from --save (steps_done), the run takes the
#   samples of steps 11 to 20 and prints the uninterrupted run's losses, bit
#   for bit.
# - A model of one batch input (an autoencoder whose forward returns its
#   loss) takes its samples as a .npy: 12 steps on 40 samples in shuffled
#   epochs, every loss within 1e-5 of float64 PyTorch on the same samples.
# - Bad input: fewer samples than a global batch, arrays of different sample
#   counts, a sample shape that is not a row of the batch, a missing input,
#   --token-bytes with a .npz, a .npy for the MLP's two inputs: each a clear
#   error, exit non-zero.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, read_log, resumed  # noqa: E402
import braid  # noqa: E402
from braid import compare, data  # noqa: E402

STEPS = 20
RANKS = 2
SEED = 5
SAMPLES = 200


class AutoEncoder(torch.nn.Module):
    """Its forward returns its loss: the squared error of reconstructing x."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 8), torch.nn.Tanh(),
                                       torch.nn.Linear(8, 32))

    def forward(self, x):
        return ((self.net(x) - x) ** 2).mean()


def autoencode(check, out, npy, x):
    """12 steps of the autoencoder on the .npy's 40 samples (16 a step, 2
    steps an epoch), against PyTorch on the same samples."""
    torch.manual_seed(0)
    model = AutoEncoder()
    spec = dict(model=model, example_inputs=(torch.from_numpy(x[:8]),), example_targets=(),
                loss_fn=lambda loss: loss,
                optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    prefix = os.path.join(out, "ae")
    braid.export(spec["model"], spec["example_inputs"], (), spec["loss_fn"],
                 spec["optimizer"], RANKS, output=prefix)
    braidtest.compile_step(prefix + ".mlir", prefix + ".plan")
    p = braidtest.braid_run(prefix + ".plan", ranks=RANKS, args=[
        "--steps", "12", "--timeout", "120", "--params", prefix + ".npz", "--data", npy,
        "--sampling", "random", "--seed", str(SEED), "--save", prefix + ".trained.npz"])
    losses = braidtest.losses(p.stdout)
    with np.load(prefix + ".trained.npz") as f:
        trained = {k: f[k] for k in f.files if k != "loss"}

    def batches(k):
        (xs,) = data.sample_batch([x], 2 * 8, k, SEED)
        return (torch.from_numpy(xs),), ()
    result = compare.against_pytorch(spec, batches, losses, trained, 12, ranks=RANKS)
    check(result["ok"] and losses[-1] < losses[0],
          "an autoencoder's samples as a .npy: losses %.4f -> %.4f within %.1e of float64 "
          "PyTorch on the same samples (float32 PyTorch %.1e)%s"
          % (losses[0], losses[-1], result["loss_diff"], result["torch_loss_diff"],
             "".join("\n       " + q for q in result["problems"])))


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    spec = load_spec(os.path.join(examples, "mlp.py"), data_parallel=RANKS)
    rows = spec["example_inputs"][0].shape[0]
    global_rows = RANKS * rows
    prefix = os.path.join(out, "mlp")
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], RANKS, output=prefix)
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)

    # The MLP's task (the label is the largest of the first 10 features),
    # as float64 features: braid-run converts them to the plan's float32.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SAMPLES, 32))
    labels = x[:, :10].argmax(axis=1).astype(np.int64)
    path = os.path.join(out, "samples.npz")
    np.savez(path, x=x, target=labels)

    def run(steps, *args, check_rc=True):
        return braidtest.braid_run(plan, ranks=RANKS, check=check_rc, args=[
            "--steps", str(steps), "--timeout", "120", *args])

    log = os.path.join(out, "log")
    p = run(STEPS, "--params", prefix + ".npz", "--data", path, "--sampling", "random",
            "--seed", str(SEED), "--data-log", log, "--save", prefix + ".trained.npz")
    losses = braidtest.losses(p.stdout)
    ok, epochs = True, set()
    for r in range(RANKS):
        lines = read_log(log, r)
        for k, line in enumerate(lines, 1):
            epoch, take = data.sample_indices(SAMPLES, global_rows, k, SEED)
            epochs.add(line["epoch"])
            ok &= line["step"] == k and line["epoch"] == epoch and \
                line["first_row"] == r * rows and \
                line["samples"] == take[r * rows:(r + 1) * rows].tolist()
        ok &= len(lines) == STEPS
    first = [read_log(log, r)[0]["samples"] for r in range(RANKS)]
    e0 = data.epoch_order(SAMPLES, 0, SEED)
    e1 = data.epoch_order(SAMPLES, 1, SEED)
    check(ok and sorted(epochs) == [0, 1, 2, 3] and not set(first[0]) & set(first[1]) and
          sorted(e0.tolist()) == list(range(SAMPLES)) and not np.array_equal(e0, e1),
          "shuffled epochs: each rank's %d steps are braid.data.sample_indices' for its rows "
          "(disjoint), epochs %s of %d steps, a new permutation each"
          % (STEPS, sorted(epochs), SAMPLES // global_rows))

    def batches(k):
        xs, ys = data.sample_batch([x, labels], global_rows, k, SEED)
        return (torch.from_numpy(xs).float(),), (torch.from_numpy(ys),)
    with np.load(prefix + ".trained.npz") as f:
        trained = {k: f[k] for k in f.files if k != "loss"}
    done = trained.pop("steps_done", None)
    check(done is not None and int(done) == STEPS, "--save holds steps_done = %s" % done)
    result = compare.against_pytorch(spec, batches, losses, trained, STEPS, ranks=RANKS)
    for line in compare.describe(result):
        print("     %s" % line)
    check(result["ok"] and losses[-1] < losses[0],
          "PyTorch on the same samples: losses %.4f -> %.4f within %.1e of float64 "
          "(float32 PyTorch %.1e)%s" % (losses[0], losses[-1], result["loss_diff"],
                                        result["torch_loss_diff"],
                                        "".join("\n       " + q for q in result["problems"])))

    # Resumed after 10 steps: the samples of steps 11 to 20, the same losses.
    half = STEPS // 2
    steps, printed, uninterrupted = resumed(
        run, out, prefix, STEPS, ["--data", path, "--sampling", "random", "--seed", str(SEED)])
    check(steps == list(range(half + 1, STEPS + 1)) and printed == uninterrupted,
          "resumed at step %d: samples of steps %s, losses %s ... equal to the "
          "uninterrupted run's" % (half, steps[:2], printed[:2]))

    # Sequential: the samples in file order, epoch after epoch.
    seq_log = os.path.join(out, "sequential")
    run(7, "--params", prefix + ".npz", "--data", path, "--sampling", "sequential",
        "--data-log", seq_log)
    got = [line["samples"] for line in read_log(seq_log, 1)]
    want = [list(range((k % 6) * 32 + rows, (k % 6) * 32 + 2 * rows)) for k in range(7)]
    check(got == want, "sequential: rank 1 takes samples %d..%d at step 1 and, after the "
          "6-step epoch, again at step 7" % (got[0][0], got[0][-1]))

    # A model of one batch input takes a .npy.
    npy = os.path.join(out, "x.npy")
    np.save(npy, x[:40].astype(np.float32))
    autoencode(check, out, npy, x[:40].astype(np.float32))

    # Bad input.
    def bad(name, **arrays):
        f = os.path.join(out, name)
        np.savez(f, **arrays)
        return f
    for what, args, expect in (
            ("fewer samples than a global batch",
             ["--data", bad("few.npz", x=x[:20], target=labels[:20]), "--sampling", "random"],
             "few.npz holds 20 samples, fewer than a step's global batch of 32 "
             "(2 data-parallel ranks x 16 rows)"),
            ("different sample counts",
             ["--data", bad("uneven.npz", x=x, target=labels[:100]), "--sampling", "random"],
             "uneven.npz: 'target' holds 100 samples, 'x' 200"),
            ("a sample that is not a row of the batch",
             ["--data", bad("wide.npz", x=np.zeros((200, 33)), target=labels),
              "--sampling", "random"],
             "wide.npz: 'x' has shape (200, 33), but the plan's samples are [N, 32] f32"),
            ("a missing input",
             ["--data", bad("nolabels.npz", x=x), "--sampling", "random"],
             "nolabels.npz has no array 'target' (batch input; samples [N] i64)"),
            ("--token-bytes with a .npz", ["--data", path, "--token-bytes", "4"],
             "--token-bytes goes with a token file as --data"),
            ("a .npy for two batch inputs", ["--data", npy, "--sampling", "random"],
             "x.npy holds one array, but the plan has 2 batch inputs (target, x): pass a "
             ".npz with an array for each")):
        r = run(1, "--params", prefix + ".npz", *args, check_rc=False)
        text = r.stdout + r.stderr
        check(r.returncode != 0 and expect in text,
              "%s: exit %d, '%s'" % (what, r.returncode,
                                     next((line.strip() for line in text.splitlines()
                                           if expect[:20] in line), text.strip()[-200:])))
    check.finish("export-samples")


if __name__ == "__main__":
    main()
