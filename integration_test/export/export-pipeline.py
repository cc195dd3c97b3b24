# Pipeline parallelism from PyTorch (docs/Pipeline.md): braid.export with
# pipeline_stages writes one micro-batch's step on a grid of stages x
# data-parallel ranks and asks braid-compile (braid.pipeline) to split it.
# A llama2.c-style model (Inputs/zoo.py: RMSNorm, SiLU-gated MLP, rotary
# embeddings, grouped key/value heads, an untied head; 2 blocks, its loss
# computed in forward), AdamW, 2 micro-batches per rank, split at its second
# block, trains 10 steps
#   - pipeline 2 on 2 ranks, and
#   - data parallel 2 x pipeline 2 on 4 ranks,
# in GPipe's, 1F1B's and ZB-H1's order (split at its second block) and
# interleaved (2 virtual stages per rank: the embedding, each block, and the
# norm with the head, a stage each), and is judged by braid.compare against
# PyTorch accumulating the same micro-batches ((loss / 2).backward() per
# micro-batch, DDP's mean over the data-parallel ranks): every loss within
# 1e-5 relative of float64 PyTorch, every final array no farther from it
# than float32 PyTorch is (4x its spread).
# Export errors, each one ExportError and nothing written: a stage boundary
# naming no module, boundaries out of the model's order or of the wrong
# count, a schedule braid-pipeline does not know, a micro-batch count that
# does not divide the batch, the interleaved schedule with one virtual stage
# or a micro-batch count that is not a multiple of the stages, virtual
# stages with another schedule. Clipping by the global norm across stages
# trains as PyTorch's clip_grad_norm_. A model whose head is tied to its
# embedding (nanoGPT) trains against PyTorch too, split at its second block:
# the last stage keeps a copy of the table.
# Pipeline x tensor parallelism: the bundled GPT (examples/pytorch/gpt.py)
# with its tensor-parallel plan, whose tied token table is split by rows
# (Megatron's vocabulary-parallel embedding and cross-entropy), pipeline 2 x
# tensor parallel 2 on 4 ranks, 1F1B and interleaved: the table's gradient
# part and update cross the stages as each rank's rows, and the training
# matches PyTorch's accumulation.
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import exporttest  # noqa: E402
from exporttest import Checker, braidtest  # noqa: E402
import zoo  # noqa: E402
from exporttest import load_spec  # noqa: E402
import braid  # noqa: E402
from braid import compare  # noqa: E402
from braid.ir import PIPELINE_SCHEDULES  # noqa: E402
from braid.spec import torch_reference  # noqa: E402

STEPS = 10
MICRO = 2
# The interleaved schedule's 2 x 2 stages: the embedding, each block, the
# norm and the head.
CUTS = {"interleaved": ["layers.0", "layers.1", "norm"]}


def spec_of(model, batch, dp):
    rows = batch[0].shape[0] // dp
    return dict(model=model, example_inputs=tuple(t[:rows] for t in batch), example_targets=(),
                loss_fn=zoo.loss_from_forward,
                optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1))


def export(spec, prefix, dp, batch, **kw):
    """Exports on dp data-parallel ranks (the world size is every rank: dp x
    the stages x the tensor-parallel size)."""
    world = dp * kw.get("pipeline_stages", 1) * kw.get("tensor_parallel", 1)
    return braid.export(spec["model"], spec["example_inputs"], (), spec["loss_fn"],
                        spec["optimizer"], world, output=prefix, global_batch=(batch, ()),
                        micro_batches=MICRO, **kw)


def train_against_pytorch(spec, e, prefix, batch, dp, tp=1):
    """Compiles and trains the export `e` on its 2 x dp x tp ranks and
    compares it with PyTorch's accumulation on `batch`, the model's inputs
    (its loss computed in forward) or (inputs, targets); braid.compare's
    result, described."""
    plan = prefix + ".plan"
    braidtest.compile_step(e.paths["mlir"], plan)
    losses, state = exporttest.train(plan, e, prefix, STEPS, 2 * dp * tp)
    if not isinstance(batch[0], tuple):
        batch = (batch, ())
    result = compare.against_pytorch(dict(spec, micro_batches=MICRO), batch, losses,
                                     state, STEPS, ranks=dp)
    for line in compare.describe(result):
        print("     %s: %s" % (os.path.basename(prefix), line))
    return result


def expect_error(check, what, text, fn):
    try:
        fn()
    except braid.ExportError as e:
        check(text in str(e), "%s: ExportError: %s" % (what, e))
        return
    check(False, "%s: no ExportError" % what)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    for dp in (1, 2):
        for schedule in PIPELINE_SCHEDULES:
            model, batch = zoo.make("llama")
            spec = spec_of(model, batch, dp)
            name = "llama-dp%d-%s" % (dp, schedule)
            prefix = os.path.join(out, name)
            cuts = CUTS.get(schedule, ["layers.1"])
            e = export(spec, prefix, dp, batch, pipeline_stages=2, stage_boundaries=cuts,
                       pipeline_schedule=schedule,
                       virtual_stages=2 if schedule == "interleaved" else 1)
            text = open(e.paths["mlir"]).read()
            check("braid.pipeline = #braid.pipeline<axis = 0, micro_batches = 2, schedule = \"%s\"%s, "
                  "boundaries = [%s]>" % (
                      schedule, ", virtual_stages = 2" if schedule == "interleaved" else "",
                      ", ".join('"%s"' % c for c in cuts)) in text
                  and "shard.grid @world(shape = 2x%d)" % dp in text,
                  "%s: the export asks for 2 stages of %d micro-batches on a grid of 2 x %d"
                  % (name, MICRO, dp))
            result = train_against_pytorch(spec, e, prefix, batch, dp)
            check(result["ok"], "%s: pipeline 2 x data parallel %d on %d ranks, %d steps of %d "
                  "micro-batches match PyTorch's accumulation%s" % (
                      name, dp, 2 * dp, STEPS, MICRO,
                      "".join("\n       " + p for p in result["problems"])))

    model, batch = zoo.make("llama")
    spec = spec_of(model, batch, 1)
    bad = os.path.join(out, "bad")
    expect_error(check, "a boundary naming no module",
                 "stage boundary 'layers.7' names no module of Llama (its modules: "
                 "tok_embeddings, layers, norm, output)",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.7"]))
    expect_error(check, "an empty first stage",
                 "stage boundary 'tok_embeddings' starts at the model's first parameter, so "
                 "stage 0 would hold no parameters",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["tok_embeddings"]))
    expect_error(check, "more stages than parameters",
                 "100 pipeline stages need at least 100 parameters (a stage holds at least "
                 "one), but Llama has",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=100))
    expect_error(check, "boundaries out of order", "are not in the model's order",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=3,
                                stage_boundaries=["norm", "layers.1"]))
    expect_error(check, "a boundary too many", "pipeline_stages 2 needs 1 stage_boundaries, not 2",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.1", "norm"]))
    expect_error(check, "a micro-batch count that does not divide the batch",
                 "micro_batches 3: the batch input tokens has shape [4, 8], whose first "
                 "dimension does not split 3 ways",
                 lambda: braid.export(model, spec["example_inputs"], (), spec["loss_fn"],
                                      spec["optimizer"], 2, output=bad, micro_batches=3,
                                      pipeline_stages=2, stage_boundaries=["layers.1"]))
    expect_error(check, "an unknown schedule",
                 "pipeline_schedule must be one of gpipe, 1f1b, zb-h1, interleaved, not 'zb-h2'",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.1"], pipeline_schedule="zb-h2"))
    expect_error(check, "interleaved with one virtual stage",
                 "pipeline_schedule interleaved: the interleaved schedule needs at least 2 "
                 "virtual stages per rank, not 1 (with 1 it is 1f1b)",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.1"], pipeline_schedule="interleaved"))
    expect_error(check, "interleaved micro-batches not a multiple of the stages",
                 "the interleaved schedule on 2 pipeline ranks needs a multiple of 2 "
                 "micro-batches, not 1",
                 lambda: braid.export(model, spec["example_inputs"], (), spec["loss_fn"],
                                      spec["optimizer"], 2, output=bad, micro_batches=1,
                                      pipeline_stages=2, pipeline_schedule="interleaved",
                                      virtual_stages=2))
    expect_error(check, "virtual stages with 1f1b",
                 "pipeline_schedule 1f1b: 2 virtual stages need the interleaved schedule, "
                 "not 1f1b",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.1"], virtual_stages=2))
    expect_error(check, "interleaved boundaries of the wrong count",
                 "pipeline_stages 2 x virtual_stages 2 needs 3 stage_boundaries, not 1 (layers.1)",
                 lambda: export(spec, bad, 1, batch, pipeline_stages=2,
                                stage_boundaries=["layers.1"], pipeline_schedule="interleaved",
                                virtual_stages=2))
    check(not any(f.startswith("bad") for f in os.listdir(out)),
          "nothing written for the refused exports")

    # Clipping by the global norm across stages (torch.nn.utils.clip_grad_norm_
    # after the accumulation): each stage's squared norm, summed over the
    # pipeline axis. A norm of 0.05 clips every step here.
    for schedule in ("1f1b", "interleaved"):
        model, batch = zoo.make("llama")
        spec = dict(spec_of(model, batch, 2), max_grad_norm=0.05)
        name = "llama-clip-%s" % schedule
        prefix = os.path.join(out, name)
        e = export(spec, prefix, 2, batch, pipeline_stages=2,
                   stage_boundaries=CUTS.get(schedule, ["layers.1"]), pipeline_schedule=schedule,
                   virtual_stages=2 if schedule == "interleaved" else 1, max_grad_norm=0.05)
        result = train_against_pytorch(spec, e, prefix, batch, 2)
        check(result["ok"], "%s: clipped to a global norm of 0.05, data parallel 2 x pipeline 2 "
              "on 4 ranks, %d steps match PyTorch's clip_grad_norm_%s" % (
                  name, STEPS, "".join("\n       " + p for p in result["problems"])))
        if schedule == "1f1b":
            plain, _ = torch_reference(dict(spec_of(*zoo.make("llama"), 2), micro_batches=MICRO),
                                       batch, (), STEPS, ranks=2)
            gap = max(abs(a - b) / abs(b) for a, b in zip(result["torch_losses"], plain))
            # (AdamW's step hardly depends on the gradient's scale, so the
            # clipping moves the losses little, but far beyond rounding.)
            check(gap > 1e-4, "the clipping is active: PyTorch's losses with and without it "
                  "differ by %.2g relative" % gap)

    # nanoGPT ties its head to the token embedding: both stages hold it, the
    # last sends its part of the gradient down and takes the update.
    model, batch = zoo.make("nanogpt")
    spec = spec_of(model, batch, 1)
    prefix = os.path.join(out, "nanogpt")
    e = export(spec, prefix, 1, batch, pipeline_stages=2, stage_boundaries=["h.1"])
    result = train_against_pytorch(spec, e, prefix, batch, 1)
    check(result["ok"], "nanoGPT with its tied head, pipeline 2 on 2 ranks: %d steps of %d "
          "micro-batches match PyTorch's accumulation%s" % (
              STEPS, MICRO, "".join("\n       " + p for p in result["problems"])))

    # Pipeline 2 x tensor parallel 2: the GPT's tied table is split by rows
    # on both stages (stage 0 looks tokens up, stage 1 keeps a copy for the
    # head); its gradient part goes down and its update up as each rank's
    # rows.
    for schedule in ("1f1b", "interleaved"):
        spec = load_spec(os.path.join(sys.argv[2], "gpt.py"), data_parallel=1)
        name = "gpt-pp2-tp2-%s" % schedule
        prefix = os.path.join(out, name)
        e = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                         spec["loss_fn"], spec["optimizer"], 4, output=prefix,
                         global_batch=spec["global_batch"], micro_batches=MICRO,
                         tensor_parallel=2, tensor_parallel_plan=spec["tensor_parallel_plan"],
                         pipeline_stages=2, pipeline_schedule=schedule,
                         stage_boundaries=["h.0", "h.1", "ln_f"] if schedule == "interleaved"
                         else ["h.1"], virtual_stages=2 if schedule == "interleaved" else 1)
        text = open(e.paths["mlir"]).read()
        check("shard.grid @world(shape = 2x1x2)" in text and e.summary["split"].get(
              "wte.weight") == "split 0", "%s: a grid of 2 stages x 1 x 2 tensor-parallel ranks, "
              "the token table split by rows" % name)
        # The stage programs braid-compile makes (canonicalize, braid-pipeline,
        # braid-tensor-parallel and the rest).
        stages = braidtest.run([braidtest.tool("braid-compile"), e.paths["mlir"],
                                "--emit=mlir"]).stdout
        # The table's 64 rows: each rank sends and receives its 32.
        check("tensor<32x64xf32> {braid.role = #braid.role<parameter \"wte.weight\">" in stages
              and "braid.sharding = #braid.sharding<split 0>} :" not in stages,
              "%s: the stages hold and transfer each rank's 32 rows of the table" % name)
        result = train_against_pytorch(spec, e, prefix, spec["global_batch"], 1, tp=2)
        check(result["ok"], "%s: pipeline 2 x tensor parallel 2 on 4 ranks, %d steps of %d "
              "micro-batches match PyTorch's accumulation%s" % (
                  name, STEPS, MICRO, "".join("\n       " + p for p in result["problems"])))

    # Issue 48, D1: an MLP whose first two layers are tensor parallel (fc1
    # colwise, fc2 rowwise) and whose last stage (fc3, cut there) has no
    # tensor-parallel collective; every rank makes the same communicators
    # in one order, and the last stage's ranks are one replica (the same
    # batch), not two data-parallel ones.
    torch.manual_seed(0)
    mlp = torch.nn.Sequential()
    mlp.add_module("fc1", torch.nn.Linear(16, 32))
    mlp.add_module("act", torch.nn.ReLU())
    mlp.add_module("fc2", torch.nn.Linear(32, 16))
    mlp.add_module("fc3", torch.nn.Linear(16, 5))
    x, y = torch.randn(8, 16), torch.randint(0, 5, (8,))
    spec = dict(model=mlp, example_inputs=(x,), example_targets=(y,),
                loss_fn=torch.nn.functional.cross_entropy,
                optimizer=torch.optim.AdamW(mlp.parameters(), lr=3e-3, weight_decay=0.1))
    prefix = os.path.join(out, "mlp-pp2-tp2")
    e = braid.export(mlp, (x,), (y,), spec["loss_fn"], spec["optimizer"], 4, output=prefix,
                     global_batch=((x,), (y,)), micro_batches=MICRO, tensor_parallel=2,
                     tensor_parallel_plan={"fc1": "colwise", "fc2": "rowwise"},
                     pipeline_stages=2, stage_boundaries=["fc3"])
    result = train_against_pytorch(spec, e, prefix, ((x,), (y,)), 1, tp=2)
    check(result["ok"], "an MLP (fc1 colwise, fc2 rowwise, cut at fc3), pipeline 2 x tensor "
          "parallel 2 on 4 ranks, %d steps of %d micro-batches match PyTorch's accumulation%s" % (
              STEPS, MICRO, "".join("\n       " + p for p in result["problems"])))
    check.finish("export-pipeline")


if __name__ == "__main__":
    main()
