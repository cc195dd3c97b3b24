# Tensor parallelism from PyTorch equals single-process PyTorch. The bundled
# GPT (examples/pytorch/gpt.py: fused q/k/v, tied embedding, AdamW) is
# exported with its tensor-parallel plan (Megatron's layout) and trained
# with braid-run on CPU ranks:
#
#   - tensor-parallel 2 on 2 ranks (one data-parallel replica);
#   - data-parallel 2 x tensor-parallel 2 on 4 ranks;
# each with sequence parallelism (braid-compile's default) and without
# (--sequence-parallel=false), and with collective matmul forced on
# (--collective-matmul=on: the tensor-parallel collectives cut into ring
# steps on collective_permute), also at tensor-parallel 4 on 4 ranks; and one
# sequence per rank ([1, seq, hidden]:
# sequence parallelism splits the sequence, dimension 1). The plan splits
# the tied token table by rows (Megatron's vocabulary-parallel embedding and
# cross-entropy); one case keeps it replicated, and one gives the token
# embedding a padding row (nn.Embedding(padding_idx=37)).
#
# PyTorch trains the same model on the global batch in float64 and float32
# (braid.compare.against_pytorch): every loss of 20 steps within 1e-5
# relative of float64 PyTorch, and every final parameter and optimizer-state
# array no farther from float64 PyTorch than float32 PyTorch is (5x its
# distance on that array, or 2x its largest on any), float32 PyTorch's
# distance measured twice, on the batch and on its rows reversed (the same
# sums in another order: one draw of a chaotic run underestimates it). The gradients after step 1
# within 1e-5 relative by norm (|g - g64| / |g64|; float32 PyTorch's are
# 1.2e-6 so, and 5e-5 elementwise on their small entries): AdamW's first
# moment after one step is (1 - beta1) times the gradient, so braid's saved
# exp_avg / 0.1 is its gradient, compared with float64 PyTorch's.
#
# The command line counts the world size as every rank: --world-size 4
# --tensor-parallel 2 exports 2 replicas of 2 ranks.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import copy
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402
from braid import compare  # noqa: E402

STEPS = 20


def torch_gradients(spec, inputs, targets, double):
    """PyTorch's gradients of one step on the global batch, by parameter
    name (a tied weight's summed)."""
    model = copy.deepcopy(spec["model"])
    if double:
        model = model.double()
    loss = spec["loss_fn"](model(inputs), targets)
    loss.backward()
    return {n: p.grad.numpy().astype(np.float64) for n, p in model.named_parameters()}


def norm_rel(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    for dp, tp, sp, rows, vocab, pad, cm in (
            (1, 2, True, 4, True, None, False), (1, 2, False, 4, True, None, False),
            (2, 2, True, 4, True, None, False), (2, 2, False, 4, True, None, False),
            (1, 2, True, 1, True, None, False), (2, 2, True, 4, False, None, False),
            (1, 2, True, 4, True, 37, False), (1, 2, True, 4, True, None, True),
            (1, 4, True, 4, True, None, True), (2, 2, True, 4, True, None, True)):
        what = "dp %d x tp %d%s%s%s%s%s" % (dp, tp, " sp" if sp else "",
                                            " cm" if cm else "",
                                            ", 1 sequence" if rows == 1 else "",
                                            "" if vocab else ", embedding replicated",
                                            ", padding_idx %d" % pad if pad is not None else "")
        # padding_idx 37 is a row of the second rank's half of the table
        # (rows 32 to 63): the shard that holds it leaves it out of the
        # embedding's gradient, as torch does (issue 48).
        spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=dp, batch_size=rows,
                         **({} if pad is None else {"padding_idx": pad}))
        (inputs,), (targets,) = spec["global_batch"]
        prefix = os.path.join(out, "gpt-dp%d-tp%d%s%s-b%d%s%s" % (
            dp, tp, "-sp" if sp else "", "-cm" if cm else "", rows, "" if vocab else "-novocab",
            "" if pad is None else "-pad%d" % pad))
        tp_plan = dict(spec["tensor_parallel_plan"])
        if not vocab:
            del tp_plan["wte"]
        exported = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                                spec["loss_fn"], spec["optimizer"], dp * tp, output=prefix,
                                global_batch=spec["global_batch"], tensor_parallel=tp,
                                tensor_parallel_plan=tp_plan)
        split = exported.summary["split"]
        check(len(split) == (11 if vocab else 10) and split["h.0.attn.c_attn.weight"] ==
              "split 0 blocks [64, 64, 64]" and split.get("wte.weight") == ("split 0" if vocab else None),
              "%s: %d parameters split by the plan" % (what, len(split)))
        if vocab:
            local = braidtest.run([braidtest.tool("braid-opt"), prefix + ".mlir",
                                   "--braid-tensor-parallel"]).stdout
            # (The one whole embedding left is the positions'.)
            check("braid.embedding_shard " in local and "cross_entropy_shard_loss" in local and
                  "embedding_shard_backward" in local and local.count("braid.embedding ") == 1
                  and (pad is None or "parts = 2 padding_idx = %d" % pad in local),
                  "%s: the vocabulary-parallel embedding, cross-entropy and tied gradient" % what)
        plan = prefix + ".plan"
        flags = ([] if sp else ["--sequence-parallel=false"]) + (
            ["--collective-matmul=on"] if cm else [])
        braidtest.compile_step(prefix + ".mlir", plan, *flags)
        if cm:
            ir = braidtest.run([braidtest.tool("braid-compile"), prefix + ".mlir", "--emit=mlir",
                                "--collective-matmul=on", "-o", "-"]).stdout
            check(ir.count("collective_permute_start") >= 8 * (tp - 1) and
                  "braid.shard_concat" in ir,
                  "%s: %d ring steps (collective_permute) in the plan" % (
                      what, ir.count("collective_permute_start")))
        elif sp:
            ir = braidtest.run([braidtest.tool("braid-compile"), prefix + ".mlir", "--emit=mlir",
                                "-o", "-"]).stdout
            dim = "scatter_dim = %d" % (1 if rows == 1 else 0)
            check(ir.count("reduce_scatter_start") >= 8 and "all_gather_start" in ir and
                  dim in ir,
                  "%s: %d reduce-scatters (%s) and %d all-gathers in the plan" % (
                      what, ir.count("reduce_scatter_start"), dim, ir.count("all_gather_start")))
        ranks = dp * tp
        common = ["--params", prefix + ".npz", "--data", exported.paths["batch"],
                  "--timeout", "120"]

        # Step 1's gradients, from AdamW's first moment.
        first = prefix + ".step1.npz"
        braidtest.braid_run(plan, ranks=ranks, args=["--steps", "1", "--save", first] + common)
        beta1 = spec["optimizer"].defaults["betas"][0]
        want = torch_gradients(spec, inputs, targets, double=True)
        f32 = torch_gradients(spec, inputs, targets, double=False)
        with np.load(first) as f:
            got = {n: f[n + ".exp_avg"] / (1 - beta1) for n in want}
        worst = max((norm_rel(got[n], want[n]), n) for n in want)
        torch_worst = max(norm_rel(f32[n], want[n]) for n in want)
        check(worst[0] <= 1e-5, "%s: %d gradients after step 1 within 1e-5 of float64 PyTorch "
              "by norm (worst %.2e, %s; float32 PyTorch %.2e)" % (
                  what, len(want), worst[0], worst[1], torch_worst))

        # 20 steps.
        save = prefix + ".trained.npz"
        p = braidtest.braid_run(plan, ranks=ranks, args=["--steps", str(STEPS), "--save", save]
                                + common)
        losses = braidtest.losses(p.stdout)
        check(len(losses) == STEPS and losses[-1] < 0.9 * losses[0],
              "%s: the loss falls, %.6f -> %.6f" % (what, losses[0], losses[-1]))
        with np.load(save) as f:
            trained = {k: f[k] for k in f.files if k != "loss"}
        result = compare.against_pytorch(spec, ((inputs,), (targets,)), losses, trained, STEPS)
        for line in compare.describe(result):
            print("     %s: %s" % (what, line))
        check(result["ok"], "%s: braid vs PyTorch%s" % (
            what, "".join("\n       " + p for p in result["problems"])))

    # 8 tensor-parallel ranks for 4 heads: the exporter's plan divides (each
    # fused part has 64 rows), the heads do not; braid-compile says where and
    # writes no plan.
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=1)
    prefix = os.path.join(out, "gpt-tp8")
    braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                 spec["loss_fn"], spec["optimizer"], 8, output=prefix, tensor_parallel=8,
                 tensor_parallel_plan=spec["tensor_parallel_plan"])
    if os.path.exists(prefix + ".plan"):
        os.remove(prefix + ".plan")
    p = braidtest.run([braidtest.tool("braid-compile"), prefix + ".mlir", "-o", prefix + ".plan"],
                      check=False)
    check(p.returncode == 1 and not os.path.exists(prefix + ".plan") and
          "of 'braid.reshape' is split 2" in p.stderr and
          "(size 4) does not divide by the tensor-parallel size 8" in p.stderr,
          "tp 8 with 4 heads: braid-compile exits %d: %s" % (
              p.returncode, (p.stderr.strip().splitlines() or [""])[0]))

    # The world size counts every rank (issue 48): `--world-size 4
    # --tensor-parallel 2` is 2 data-parallel replicas of 2 ranks, the spec's
    # function called with data_parallel=2 (its global batch 2 x 4 rows);
    # without --world-size the spec's data_parallel (2) times the
    # tensor-parallel size is the world size.
    spec = load_spec(os.path.join(examples, "gpt.py"), data_parallel=2)
    rows = spec["example_inputs"][0].shape[0]
    # A spec that sets its own tensor_parallel is called again with the
    # data-parallel size that leaves (first with 4, then with 2).
    own = os.path.join(out, "gpt_tp2_spec.py")
    with open(own, "w") as f:
        f.write("import sys\nsys.path.insert(0, %r)\nimport gpt\n\n\n"
                "def build(data_parallel=1):\n"
                "    return dict(gpt.build(data_parallel=data_parallel), tensor_parallel=2)\n"
                % os.path.abspath(examples))
    gpt_py = os.path.join(examples, "gpt.py")
    for name, spec_file, flags in (
            ("cli-w4-tp2", gpt_py, ["--world-size", "4", "--tensor-parallel", "2"]),
            ("cli-tp2", gpt_py, ["--tensor-parallel", "2"]),
            ("cli-w4-spec-tp2", own, ["--world-size", "4"])):
        prefix = os.path.join(out, name)
        p = braidtest.run([sys.executable, "-m", "braid.export", spec_file, "-o", prefix]
                          + flags)
        first = p.stdout.splitlines()[0]
        with np.load(prefix + ".batch.npz") as batch:
            batch_rows = {k: batch[k].shape[0] for k in batch.files}
        check(first == "exported GPT: @gpt_step, 4 ranks (2 data-parallel x 2 tensor-parallel), "
              "AdamW" and "shard.grid @world(shape = 2x2)" in open(prefix + ".mlir").read()
              and set(batch_rows.values()) == {2 * rows},
              "braid.export %s %s: %r, a grid of 2 x 2, the global batch 2 x %d rows (%s)"
              % (os.path.basename(spec_file), " ".join(flags), first, rows, batch_rows))

    check.finish("tensor-parallel-torch")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
