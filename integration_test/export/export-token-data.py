# braid-run on a token file (`--data FILE.bin`): the bundled GPT (vocabulary
# 64, sequence 32, 4 rows a rank) exported for 2 data-parallel ranks trains
# 20 steps on a flat uint16 file of 5000 tokens, a new batch every step.
# - Every rank's windows at every step (its --data-log) are those
#   braid.data.window_starts gives for its rows of the global batch (rank r
#   rows 4r .. 4r + 3, disjoint, together the 8), with the seed, random and
#   sequential.
# - PyTorch trained on the same windows (braid.data.batch, as DDP on 2
#   ranks: braid.compare.against_pytorch): every loss within 1e-5
#   relative of float64 PyTorch, the final arrays as export-train.py holds
#   them.
# - Resumed after 10 steps from --save (steps_done), the run takes windows
#   11 to 20 and prints the uninterrupted run's losses, bit for bit.
# - The ranks of one replica take the same windows: tensor parallel 2 x
#   data parallel 2, and a 2-stage pipeline (ids on one stage, labels on
#   the other).
# - The same tokens as uint32 (--token-bytes 4) train to the same losses.
# - Several shards by a pattern (shard-*.bin): each rank's windows are
#   braid.data's over the shards, random and sequential, none crossing a
#   shard's end.
# - Bad input: a file whose size is not a whole number of tokens, a token
#   beyond the vocabulary, a file shorter than a window, a missing file, a
#   pattern that matches nothing, a shard shorter than a window, a
#   token width or sampling braid-run does not know, a model whose batch is
#   not token ids and labels: each an error naming the file, option or
#   input and what is wrong, exit non-zero.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec, read_log, resumed, text_like  # noqa: E402
import braid  # noqa: E402
from braid import compare, data  # noqa: E402

STEPS = 20
RANKS = 2
SEED = 7


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=RANKS)
    rows, seq = spec["example_inputs"][0].shape
    vocab = spec["model"].wte.num_embeddings
    global_rows = RANKS * rows
    prefix = os.path.join(out, "gpt")
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], RANKS, output=prefix)
    plan = prefix + ".plan"
    braidtest.compile_step(prefix + ".mlir", plan)

    # A text-like stream: runs that count up from random starts, so that the
    # model has something to learn, of random lengths.
    tokens = text_like(vocab, 5000, 0)
    path = os.path.join(out, "tokens.bin")
    tokens.tofile(path)

    def run(steps, *args, check_rc=True):
        return braidtest.braid_run(plan, ranks=RANKS, check=check_rc, args=[
            "--steps", str(steps), "--timeout", "120", *args])

    log = os.path.join(out, "log")
    p = run(STEPS, "--params", prefix + ".npz", "--data", path, "--seed", str(SEED),
            "--data-log", log, "--save", prefix + ".trained.npz")
    losses = braidtest.losses(p.stdout)
    ok, first_rows = True, []
    for r in range(RANKS):
        lines = read_log(log, r)
        first_rows.append(lines[0]["first_row"] if lines else None)
        for k, line in enumerate(lines, 1):
            want = data.window_starts(len(tokens), seq, global_rows, k, SEED)
            ok &= line["step"] == k and line["starts"] == \
                want[line["first_row"]:line["first_row"] + rows].tolist()
        ok &= len(lines) == STEPS
    check(ok and first_rows == [0, rows],
          "random windows: each rank's %d steps are braid.data.window_starts' for its rows "
          "(first rows %s of %d: disjoint, together the global batch)"
          % (STEPS, first_rows, global_rows))

    def batches(k):
        ids, labels = data.batch(tokens, seq, global_rows, k, SEED)
        return (torch.from_numpy(ids),), (torch.from_numpy(labels),)
    with np.load(prefix + ".trained.npz") as f:
        trained = {k: f[k] for k in f.files if k != "loss"}
    # The position in the data: the steps taken, which a resumed run
    # continues from.
    done = trained.pop("steps_done", None)
    check(done is not None and int(done) == STEPS, "--save holds steps_done = %s" % done)
    result = compare.against_pytorch(spec, batches, losses, trained, STEPS, ranks=RANKS)
    for line in compare.describe(result):
        print("     %s" % line)
    check(result["ok"] and losses[-1] < 0.8 * losses[0],
          "PyTorch on the same windows: losses %.4f -> %.4f within %.1e of float64 "
          "(float32 PyTorch %.1e)%s" % (losses[0], losses[-1], result["loss_diff"],
                                        result["torch_loss_diff"],
                                        "".join("\n       " + q for q in result["problems"])))

    # Resumed after 10 steps: windows 11 to 20, the same losses.
    half = STEPS // 2
    steps, printed, uninterrupted = resumed(run, out, prefix, STEPS,
                                            ["--data", path, "--seed", str(SEED)])
    check(steps == list(range(half + 1, STEPS + 1)) and printed == uninterrupted,
          "resumed at step %d: windows of steps %s, losses %s ... equal to the "
          "uninterrupted run's" % (half, steps[:2], printed[:2]))

    # Sequential windows.
    seq_log = os.path.join(out, "sequential")
    run(3, "--params", prefix + ".npz", "--data", path, "--sampling", "sequential",
        "--data-log", seq_log)
    ok = True
    for r in range(RANKS):
        for k, line in enumerate(read_log(seq_log, r), 1):
            want = data.window_starts(len(tokens), seq, global_rows, k, 0, "sequential")
            ok &= line["starts"] == want[r * rows:(r + 1) * rows].tolist()
    check(ok and read_log(seq_log, 1)[0]["starts"][0] == rows * seq,
          "sequential windows: step 1 of rank 1 starts at %d (= %d x %d), each as "
          "braid.data.window_starts" % (read_log(seq_log, 1)[0]["starts"][0], rows, seq))

    # Tensor-parallel and pipeline ranks of a replica read the same windows:
    # 2 x 2 (tensor x data parallel) on 4 ranks, and a 2-stage pipeline
    # (the token ids on stage 0, the labels on stage 1) on 2.
    layouts = (("tp 2 x dp 2", 4, dict(tensor_parallel=2,
                                       tensor_parallel_plan=spec["tensor_parallel_plan"]), 2),
               ("pp 2", 2, dict(pipeline_stages=2, micro_batches=2), 1))
    for name, world, options, dp in layouts:
        s = load_spec(os.path.join(examples, "gpt.py"), data_parallel=dp)
        lp = os.path.join(out, name.replace(" ", ""))
        braid.export(s["model"], s["example_inputs"], s["example_targets"], s["loss_fn"],
                     s["optimizer"], world, output=lp, **options)
        braidtest.compile_step(lp + ".mlir", lp + ".plan")
        braidtest.braid_run(lp + ".plan", ranks=world, args=[
            "--steps", "2", "--timeout", "120", "--params", lp + ".npz", "--data", path,
            "--seed", str(SEED), "--data-log", lp])
        logs = [read_log(lp, r) for r in range(world)]
        want = [data.window_starts(len(tokens), seq, dp * rows, k, SEED).tolist()
                for k in (1, 2)]
        got = [[line["starts"] for line in log] for log in logs]
        replicas = sorted({log[0]["first_row"] for log in logs})
        check(all(g == [w[f:f + rows] for w in want]
                  for g, f in zip(got, [log[0]["first_row"] for log in logs]))
              and replicas == [rows * d for d in range(dp)]
              and len({str(g) for g in got}) == dp,
              "%s on %d ranks: each replica's ranks log the same windows (first rows %s), "
              "braid.data.window_starts' for its rows" % (name, world, replicas))

    # Shards: the tokens cut into 3 files, named by a pattern; no window
    # crosses a shard's end.
    sizes = (1700, 1500, 1800)
    cuts = np.cumsum((0,) + sizes)
    for i in range(3):
        tokens[cuts[i]:cuts[i + 1]].tofile(os.path.join(out, "shard-%d.bin" % i))
    pattern = os.path.join(out, "shard-*.bin")
    ok = True
    for sampling in ("random", "sequential"):
        shard_log = os.path.join(out, "shards-" + sampling)
        p = run(3, "--params", prefix + ".npz", "--data", pattern, "--sampling", sampling,
                "--seed", str(SEED), "--data-log", shard_log)
        for r in range(RANKS):
            for k, line in enumerate(read_log(shard_log, r), 1):
                want = data.window_starts(list(sizes), seq, global_rows, k, SEED, sampling)
                got = line["starts"]
                ok &= got == want[r * rows:(r + 1) * rows].tolist()
                ok &= all(any(c <= s and s + seq + 1 <= c + n for c, n in zip(cuts, sizes))
                          for s in got)
        ids, labels = data.batch(data.read_tokens(pattern), seq, global_rows, 1, SEED, sampling)
        ok &= ids.shape == (global_rows, seq) and (ids[:, 1:] == labels[:, :-1]).all()
    check(ok, "shards (3 files by a pattern): random and sequential windows are "
          "braid.data.window_starts' over the shards, each inside one shard")

    # uint32 tokens.
    wide = os.path.join(out, "tokens32.bin")
    tokens.astype(np.uint32).tofile(wide)
    p = run(2, "--params", prefix + ".npz", "--data", wide, "--token-bytes", "4",
            "--seed", str(SEED))
    check(braidtest.losses(p.stdout) == losses[:2],
          "uint32 tokens (--token-bytes 4): the same losses as uint16")

    # Bad input.
    odd = os.path.join(out, "odd.bin")
    with open(odd, "wb") as f:
        f.write(tokens.tobytes() + b"\0")
    big = os.path.join(out, "big.bin")
    bad = tokens.copy()
    bad[40] = vocab
    bad.tofile(big)
    short = os.path.join(out, "short.bin")
    tokens[:seq].tofile(short)
    missing = os.path.join(out, "missing.bin")
    for what, args, expect in (
            ("odd size", ["--data", odd], "odd.bin has 10001 bytes, not a whole number of "
                                          "16-bit tokens"),
            ("token beyond the vocabulary", ["--data", big, "--sampling", "sequential"],
             "big.bin holds token %d at position 40, but the plan takes ids below %d"
             % (vocab, vocab)),
            ("shorter than a window", ["--data", short],
             "short.bin holds %d tokens, fewer than a window of %d" % (seq, seq + 1)),
            ("missing", ["--data", missing], "cannot open the token file %s" % missing),
            ("token width", ["--data", path, "--token-bytes", "3"],
             "--token-bytes is 2 (uint16) or 4 (uint32)"),
            ("sampling", ["--data", path, "--sampling", "shuffled"],
             "--sampling is random or sequential, not 'shuffled'"),
            ("a pattern that matches nothing", ["--data", os.path.join(out, "none-*.bin")],
             "none-*.bin matches no file"),
            ("a shard shorter than a window", ["--data", os.path.join(out, "s*.bin")],
             "short.bin holds %d tokens, fewer than a window of %d" % (seq, seq + 1)),
            ("a token width with a batch", ["--data", prefix + ".batch.npz", "--token-bytes",
                                            "4"],
             "--token-bytes goes with a token file as --data")):
        p = run(1, "--params", prefix + ".npz", *args, check_rc=False)
        text = p.stdout + p.stderr
        check(p.returncode != 0 and expect in text,
              "%s: exit %d, '%s'" % (what, p.returncode,
                                     next((line.strip() for line in text.splitlines()
                                           if expect[:20] in line), text.strip()[-200:])))
    # A model whose batch is not token ids and labels (the MLP's float
    # features) takes no token file.
    m = load_spec(os.path.join(examples, "mlp.py"), data_parallel=RANKS)
    mp = os.path.join(out, "mlp")
    braid.export(m["model"], m["example_inputs"], m["example_targets"], m["loss_fn"],
                 m["optimizer"], RANKS, output=mp)
    braidtest.compile_step(mp + ".mlir", mp + ".plan")
    p = braidtest.braid_run(mp + ".plan", ranks=RANKS, check=False, args=[
        "--steps", "1", "--timeout", "120", "--data", path])
    expect = "is a token file, which fills token ids (an embedding's) and labels (a loss's)"
    check(p.returncode != 0 and expect in p.stderr and "is not integers" in p.stderr,
          "the MLP's float batch: exit %d, '%s'" % (
              p.returncode, next((line for line in p.stderr.splitlines() if expect in line),
                                 p.stderr.strip()[-200:])))
    check.finish("export-token-data")


if __name__ == "__main__":
    main()
