# braid-run's checkpoints: the bundled GPT, exported for 2 data-parallel
# ranks, trains on a token file (a new batch each step) for 12 steps with a
# checkpoint every 4 steps (--checkpoint-dir, --save-every 4), the newest 2
# kept.
# - Uninterrupted, the folder ends with step-00000008.npz and
#   step-00000012.npz.
# - Killed in step 7 (--inject-fault=kill:1:7), the same command line with
#   --resume on the same folder left step-00000004.npz; a write that did
#   not finish (libzip's temporary step-00000010.npz.XXXXXX, planted here)
#   is not a checkpoint. Run again, the command resumes from step 4, prints
#   steps 5/12 to 12/12 with the uninterrupted run's losses, and its
#   step-00000012.npz equals the uninterrupted one, every array bit for bit
#   (parameters, AdamW's state and step, steps_done, the last loss). Run
#   once more, it has no step left.
# - Bad input: a checkpoint of another model (the MLP's) in the folder, an
#   option without --checkpoint-dir: each an error naming it.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402

RANKS = 2
STEPS = 12


def arrays(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def main():
    out, examples = sys.argv[1], sys.argv[2]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    check = Checker()
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS)
    prefix = os.path.join(out, "gpt")
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], RANKS, output=prefix)
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)
    vocab = spec["model"].wte.num_embeddings
    tokens = os.path.join(out, "tokens.bin")
    (np.random.default_rng(0).integers(0, vocab, 3000)).astype(np.uint16).tofile(tokens)

    def run(folder, *extra, check_rc=True):
        return braidtest.braid_run(plan, ranks=RANKS, check=check_rc, args=[
            "--steps", str(STEPS), "--timeout", "120", "--params", prefix + ".npz",
            "--data", tokens, "--seed", "3", "--checkpoint-dir", folder, "--save-every", "4",
            "--keep-checkpoints", "2", *extra])

    def printed(p):
        return [line.split(" loss ") for line in p.stdout.splitlines()
                if line.startswith("step ")]

    whole = os.path.join(out, "whole")
    p = run(whole)
    straight = printed(p)
    check(sorted(os.listdir(whole)) == ["step-00000008.npz", "step-00000012.npz"]
          and len(straight) == STEPS,
          "uninterrupted: %d steps, the folder keeps %s" % (len(straight),
                                                             sorted(os.listdir(whole))))

    folder = os.path.join(out, "killed")
    p = run(folder, "--resume", folder, "--inject-fault=kill:1:7", check_rc=False)
    left = sorted(os.listdir(folder))
    check(p.returncode != 0 and left == ["step-00000004.npz"]
          and "resume: no checkpoint in %s" % folder in p.stdout,
          "killed in step 7 (exit %d): the folder holds %s" % (p.returncode, left))
    with open(os.path.join(folder, "step-00000010.npz.Xa81Qz"), "wb") as f:
        f.write(b"PK\x03\x04 a write that did not finish")
    p = run(folder, "--resume", folder)
    resumed = printed(p)
    say = "resume: from %s (4 steps done); 8 of --steps 12 left" % os.path.join(
        folder, "step-00000004.npz")
    check(say in p.stdout and resumed == straight[4:],
          "restarted: '%s', %s to %s with the uninterrupted run's losses"
          % (say if say in p.stdout else p.stdout[:200], resumed[0][0] if resumed else "-",
             resumed[-1][0] if resumed else "-"))
    a, b = arrays(os.path.join(whole, "step-00000012.npz")), \
        arrays(os.path.join(folder, "step-00000012.npz"))
    same = sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
    check(same and int(b["steps_done"]) == STEPS and "loss" in b and "step" in b,
          "restarted: step-00000012.npz equals the uninterrupted run's, %d arrays bit for "
          "bit (steps_done %d)" % (len(a), int(b.get("steps_done", -1))))
    p = run(folder, "--resume", folder)
    check(printed(p) == [] and "0 of --steps 12 left" in p.stdout,
          "run again at step 12: no step left")

    # A checkpoint of another model.
    m = load_spec(os.path.join(examples, "mlp.py"), data_parallel=RANKS)
    mp = os.path.join(out, "mlp")
    braid.export(m["model"], m["example_inputs"], m["example_targets"], m["loss_fn"],
                 m["optimizer"], RANKS, output=mp)
    other = os.path.join(out, "other")
    os.makedirs(other)
    shutil.copy(mp + ".npz", os.path.join(other, "step-00000099.npz"))
    p = run(other, "--resume", other, check_rc=False)
    expect = "step-00000099.npz has no array"
    check(p.returncode == 1 and expect in p.stderr,
          "another model's checkpoint: exit %d, '%s'" % (
              p.returncode, next((line for line in p.stderr.splitlines() if expect in line),
                                 p.stderr.strip()[-200:])))
    p = braidtest.braid_run(plan, ranks=1, check=False, args=["--save-every", "2"])
    check(p.returncode == 2 and "--save-every and --keep-checkpoints go with --checkpoint-dir"
          in p.stderr, "--save-every without --checkpoint-dir: exit %d" % p.returncode)
    check.finish("export-checkpoint")


if __name__ == "__main__":
    main()
