# braid.export's errors: each names the problem, `python3 -m braid.export`
# exits 1, and nothing is written.
#  - an op without a lowering (Cosine in blocks.1.act, sin in the model's
#    own forward, a random draw other than dropout) names the aten op and
#    the module path, and the
#    ops missing in its backward by name, each with its number of uses;
#  - a mask computed from the inputs, an unsupported optimizer or option, a
#    parameter outside the optimizer, a non-scalar loss, bad arguments;
#  - the command line: a missing file or function, a spec that is not a dict,
#    no world size, a world size that the tensor-parallel size does not
#    divide (it counts every rank), a spec whose data_parallel disagrees
#    with it, a bad --arg;
#  - a tensor-parallel plan naming a module that does not exist, a style
#    braid does not know, a module that is not an nn.Linear, a tied weight,
#    a size that does not divide the features, no plan for --tensor-parallel.
#
# REQUIRES: torch
# RUN: %python %s %t %examples/pytorch

import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "Inputs"))
from exporttest import Checker  # noqa: E402
import specs  # noqa: E402
import braid  # noqa: E402

SPECS = os.path.join(HERE, "Inputs", "specs.py")


def main():
    out, examples = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    def cli(name, args, *expected, absent=()):
        prefix = os.path.join(out, name)
        for suffix in (".mlir", ".npz", ".batch.npz"):
            if os.path.exists(prefix + suffix):
                os.remove(prefix + suffix)
        p = subprocess.run([sys.executable, "-m", "braid.export", *args, "-o", prefix],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        written = [s for s in (".mlir", ".npz", ".batch.npz") if os.path.exists(prefix + s)]
        err = p.stderr.strip().splitlines()
        first = err[0] if err else ""
        ok = p.returncode == 1 and not written and all(e in p.stderr for e in expected) and \
            not any(a in p.stderr for a in absent) and \
            "Traceback" not in p.stderr and "nothing written" in p.stderr
        check(ok, "%s: exit %d, wrote %s: %s" % (name, p.returncode, written or "nothing", first))

    # Ops without a lowering name the aten op and where it came from.
    # (and the command that lists the supported ops names this interpreter:
    # `python3` on the documented machine has no torch)
    cli("cosine", [SPECS + ":cosine"], "1 aten op of the step has no braid lowering",
        "aten.cos.default (from blocks.1.act (Cosine))",
        "and in its backward: aten.sin.default",
        "(`%s -m braid.export --list-ops` prints" % sys.executable,
        absent=["random ops"])
    cli("own-forward", [SPECS + ":own_forward"], "aten.sin.default",
        "from the model's own forward (OwnForward)")
    # Dropout exports (export-dropout.py); other random draws do not.
    cli("noise", [SPECS + ":noise"], "aten.randn_like.default (from blocks.1.act (Noise))",
        "random ops other than dropout are not supported")
    cli("two-ops", [SPECS + ":two_ops"], "2 aten ops of the step have no braid lowering",
        "aten.cos.default (from blocks.1.act (Cosine))",
        "aten.sin.default (from the model's own forward (TwoOps))")

    # The command line.
    cli("no-file", ["no/such/file.py:build"], "no such file: no/such/file.py")
    cli("no-function", [SPECS + ":nothing"], "has no function nothing")
    cli("not-a-dict", [SPECS + ":not_a_dict"], "must return a dict, not int")
    cli("bad-arg", [SPECS + ":ops", "--arg", "seed"], "--arg takes KEY=VALUE")
    # Issue 48: a negative world size reached the spec's function (a
    # traceback from torch); a step name that is no MLIR identifier wrote IR
    # braid-compile could not parse.
    cli("negative-world", [SPECS + ":ops", "--world-size", "-2"],
        "--world-size must be a positive integer, not -2")
    cli("no-world", [SPECS + ":no_world"],
        "no world size: pass --world-size, or return world_size (every rank) or data_parallel")
    # The spec's function is called with the data-parallel size the world
    # size leaves (data_parallel); one that sizes its batch otherwise is
    # named.
    cli("spec-data-parallel", [os.path.join(examples, "mlp.py"), "--world-size", "4", "--arg",
                               "data_parallel=1"],
        "the spec returns data_parallel 1, but the world size 4 over tensor-parallel x "
        "pipeline stages 1 leaves 4")
    cli("cli-world-not-divisible", [os.path.join(examples, "gpt.py"), "--world-size", "3",
                                    "--tensor-parallel", "2"],
        "world_size 3 is not a multiple of tensor_parallel 2 x pipeline_stages 1")
    cli("zero-micro-batches", [SPECS + ":ops", "--micro-batches", "0"],
        "--micro-batches must be a positive integer, not 0")
    for bad_name in ("1bad", "a-b", "a{b}", "@x"):
        cli("bad-name", [SPECS + ":ops", "--name", bad_name],
            "name must be an MLIR identifier (a letter or '_', then letters, digits, '_', '$' "
            "or '.'), not %r" % bad_name)
    directory = os.path.join(out, "a-directory")
    os.makedirs(directory, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "braid.export", SPECS + ":ops", "-o", directory],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 1 and "-o takes a path prefix" in p.stderr
          and "Traceback" not in p.stderr and not os.listdir(directory),
          "-o a directory: exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[:1]))
    cli("bad-kwarg", [SPECS + ":ops", "--arg", "colour=1"], "calling", "colour")
    p = subprocess.run([sys.executable, "-m", "braid.export", SPECS + ":ops", "-o",
                        os.path.join(out, "ok"), "--arg", "seed=2"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and "wrote" in p.stdout and "@ops_step, 1 ranks, SGD" in p.stdout,
          "the command line exports ops with --arg seed=2: exit %d" % p.returncode)

    # The error class is the package's too: `except braid.ExportError`.
    check(braid.ExportError is braid.export.ExportError,
          "braid.ExportError is braid.export.ExportError")

    # The API raises braid.export.ExportError and writes nothing.
    def api(name, expected, model=None, x=None, y=None, loss_fn=F.cross_entropy,
            optimizer=None, world_size=1, **kw):
        torch.manual_seed(0)
        model = model if model is not None else specs.Net()
        x = x if x is not None else torch.randn(8, 16)
        y = y if y is not None else torch.randint(0, 4, (8,))
        if optimizer is None:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        elif callable(optimizer):
            optimizer = optimizer(model)
        prefix = os.path.join(out, name)
        for suffix in (".mlir", ".npz", ".batch.npz"):
            if os.path.exists(prefix + suffix):
                os.remove(prefix + suffix)
        try:
            braid.export(model, (x,), (y,), loss_fn, optimizer, world_size, output=prefix, **kw)
            message = None
        except braid.export.ExportError as e:
            message = str(e)
        written = os.path.exists(prefix + ".mlir") or os.path.exists(prefix + ".npz")
        check(message is not None and expected in message and not written,
              "%s: %s" % (name, message))

    class InputMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):  # [B, 4, 4]: the mask depends on the batch
            return self.fc(x).masked_fill(x > 0, -1e9).sum(-1)

    # The comparison that makes the mask has no lowering: masks are
    # constants of the step (buffers), not functions of its inputs.
    api("input-mask", "aten.gt.Scalar (from the model's own forward (InputMask))",
        model=InputMask(), x=torch.randn(2, 4, 4), y=torch.randint(0, 4, (2,)))

    class Branches(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x):  # data-dependent control flow
            if x.mean() > 0:
                x = 2 * x
            return self.fc(x)

    api("data-dependent-branch", "tracing the step failed: ", model=Branches())

    def cosine_loss(out, y):
        return F.cross_entropy(torch.cos(out), y)

    # An op of the loss function is named as the loss function's, not as
    # the backward of the module whose output it reads.
    api("loss-op", "aten.cos.default (from loss_fn (cosine_loss))", loss_fn=cosine_loss)
    api("rmsprop", "optimizer RMSprop is not supported",
        optimizer=lambda m: torch.optim.RMSprop(m.parameters()))
    api("amsgrad", "AdamW(amsgrad=True) is not supported",
        optimizer=lambda m: torch.optim.AdamW(m.parameters(), amsgrad=True))
    api("adam-l2", "Adam with weight_decay",
        optimizer=lambda m: torch.optim.Adam(m.parameters(), weight_decay=0.1))
    api("dampening", "SGD with dampening needs its momentum buffers",
        optimizer=lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, dampening=0.5))
    api("frozen", "parameter head.bias is not in the optimizer",
        optimizer=lambda m: torch.optim.SGD([p for n, p in m.named_parameters()
                                             if n != "head.bias"], lr=0.1))
    api("vector-loss", "loss_fn must return a scalar",
        loss_fn=lambda out, y: F.cross_entropy(out, y, reduction="none"))
    api("world-size", "world_size must be a positive integer, not 0", world_size=0)
    # The world size counts every rank (issue 48): 3 ranks do not make
    # tensor-parallel pairs.
    api("world-not-divisible", "world_size 3 is not a multiple of tensor_parallel 2 x "
        "pipeline_stages 1: the world size counts every rank", world_size=3,
        tensor_parallel=2, tensor_parallel_plan={"head": "colwise"})
    api("not-tensors", "example_inputs must be a tuple of tensors", x=[1, 2, 3])
    api("global-batch", "global_batch: x is [9, 16] torch.float32, expected [8, 16]",
        global_batch=((torch.randn(9, 16),), (torch.randint(0, 4, (8,)),)))
    api("name-clash", "is also the name of a parameter", input_names=["head.bias"])
    # Learning-rate schedules that braid cannot evaluate ahead of time, or
    # that are not the spec's optimizer's.
    def scheduled(name, expected, make, optimizer=None, **kw):
        torch.manual_seed(0)
        model = specs.Net()
        opt = (optimizer or (lambda m: torch.optim.SGD(m.parameters(), lr=0.1,
                                                       momentum=0.9)))(model)
        api(name, expected, model=model, optimizer=opt, lr_scheduler=make(opt), **kw)

    lrs = torch.optim.lr_scheduler
    scheduled("plateau", "ReduceLROnPlateau reacts to the loss at run time",
              lambda o: lrs.ReduceLROnPlateau(o), max_steps=10)
    scheduled("other-optimizer", "built on another optimizer than the spec's",
              lambda o: lrs.StepLR(torch.optim.SGD(specs.Net().parameters(), lr=0.1), 5),
              max_steps=10)
    scheduled("not-a-scheduler", "lr_scheduler must be a torch.optim.lr_scheduler scheduler",
              lambda o: "cosine", max_steps=10)
    scheduled("no-max-steps", "lr_scheduler StepLR needs max_steps", lambda o: lrs.StepLR(o, 5))
    scheduled("max-steps", "max_steps must be a positive integer, not 0",
              lambda o: lrs.StepLR(o, 5), max_steps=0)
    scheduled("cycle-momentum", "changes momentum of param group 0 at step 2; braid schedules "
              "the learning rate only (pass cycle_momentum=False)",
              lambda o: lrs.OneCycleLR(o, max_lr=0.5, total_steps=20))
    api("micro-batches-split", "micro_batches 3: the batch input x has shape [8, 16], whose "
        "first dimension does not split 3 ways", micro_batches=3)
    api("micro-batches-zero", "micro_batches must be a positive integer, not 0",
        micro_batches=0)
    api("max-grad-norm-zero", "max_grad_norm must be a positive finite number, not 0",
        max_grad_norm=0)
    api("max-grad-norm-text", "max_grad_norm must be a positive finite number, not '1'",
        max_grad_norm="1")
    api("max-steps-alone", "max_steps is the length of an lr_scheduler's schedule",
        max_steps=10)
    api("zero-stage-3", "zero_stage must be 0, 1 or 2 (stage 3, sharded parameters, is not "
        "built yet), not 3", zero_stage=3)
    api("autocast-dtype", "autocast must be 'bf16', 'fp16' or absent, not 'f8'", autocast="f8")
    api("loss-scale", "loss_scale must be a positive finite number (a static loss scale), "
        "not 0", loss_scale=0)
    api("grad-scaler", "braid has no dynamic loss scaling (GradScaler skips steps at run time)",
        loss_scale=torch.cuda.amp.GradScaler(enabled=False))
    api("reduce-dtype", "reduce_dtype must be 'fp32', 'bf16', 'fp16' or absent, not 'int8'",
        reduce_dtype="int8")
    unused = specs.Net()
    unused.extra = nn.Linear(2, 2)
    api("unused-parameter", "parameter extra.weight does not reach the loss", model=unused)
    # Tensor-parallel plans (braid.tensor_parallel).
    tp = lambda plan, size=2: dict(tensor_parallel=size, tensor_parallel_plan=plan,  # noqa: E731
                                   world_size=size)
    api("tp-no-plan", "tensor_parallel 2 needs a tensor_parallel_plan", tensor_parallel=2)
    api("tp-size", "tensor_parallel must be a positive integer, not 0", tensor_parallel=0)
    api("tp-no-module", "tensor-parallel plan: 'blocks.*.proj' matches no module of Net "
        "(its modules: blocks, blocks.0", **tp({"blocks.*.proj": "colwise"}))
    api("tp-style", "tensor-parallel plan: 'head' maps to 'sequence'; a style is 'colwise'",
        **tp({"head": "sequence"}))
    api("tp-not-linear", "tensor-parallel plan: 'blocks.0.act' (blocks.*.act) is a ReLU",
        **tp({"blocks.*.act": "rowwise"}))
    api("tp-divide", "the tensor-parallel size 3 does not divide the output features of "
        "'head' (head) (output features 4", **tp({"head": "colwise"}, 3))
    api("tp-divide-rows", "the tensor-parallel size 3 does not divide the input features 16",
        **tp({"blocks.0.fc": "rowwise"}, 3))
    api("tp-fused", "'head' (head) has 4 output features, which do not make 3 equal fused "
        "parts", **tp({"head": {"style": "colwise", "fused": 3}}))
    api("tp-twice", "is named by two patterns", **tp({"head": "colwise", "h*": "rowwise"}))

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(4, 16)
            self.head = nn.Linear(16, 4, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, x):
            return self.head(self.emb(x).mean(1))

    tied = dict(model=Tied(), x=torch.randint(0, 4, (8, 3)))

    # scale_grad_by_freq stays a clear error, named at the embedding (not
    # at the RMS norm after it, as Llama's and Qwen's, whose backward made
    # the gradient the embedding's backward reads: issue 48).
    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(16))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    class Freq(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(4, 16, padding_idx=0, scale_grad_by_freq=True)
            self.norm = RMSNorm()
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.norm(self.emb(x)).mean(1))

    api("scale-grad-by-freq", "in the backward of emb (Embedding)): scale_grad_by_freq is not "
        "supported", model=Freq(), x=torch.randint(0, 4, (8, 3)))
    api("tp-tied", "tensor-parallel plan: 'emb' (emb) and 'head' (head) share one tied weight "
        "(emb.weight) but split it differently (split 1 and split 0)",
        **tied, **tp({"emb": "colwise", "head": "colwise"}))
    api("tp-vocabulary", "the tensor-parallel size 3 does not divide the vocabulary (rows) 4 "
        "of 'emb' (emb)", **tied, **tp({"emb": "rowwise"}, 3))
    api("tp-embedding-fused", "'emb' (emb) is an nn.Embedding, which has no fused parts",
        **tied, **tp({"emb": {"style": "colwise", "fused": 2}}))
    cli("tp-cli-no-plan", [SPECS + ":ops", "--tensor-parallel", "2"],
        "tensor_parallel 2 needs a tensor_parallel_plan")

    # torch 2.x's ParallelStyle objects stand for the strings (recognised by
    # class, a subclass too); any other style object is refused.
    try:
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       SequenceParallel)
    except ImportError:  # torch 1.13 has no torch.distributed.tensor
        ColwiseParallel = None
    if ColwiseParallel is not None:
        from braid.tensor_parallel import shardings

        class MyColwise(ColwiseParallel):
            pass

        model = specs.Net()
        by_string = shardings(model, {"blocks.0.fc": "colwise", "head": "rowwise"}, 2, {})
        by_class = shardings(model, {"blocks.0.fc": MyColwise(), "head": RowwiseParallel()},
                             2, {})
        check(by_string == by_class and by_class,
              "torch's ColwiseParallel and RowwiseParallel shard as 'colwise' and 'rowwise': "
              "%s" % by_class)
        api("tp-style-object", "maps to SequenceParallel", **tp({"head": SequenceParallel()}))

    p = subprocess.run([sys.executable, "-m", "braid.export", "--list-ops"],
                       stdout=subprocess.PIPE, text=True)
    listed = p.stdout.split()
    check(p.returncode == 0 and "aten.addmm.default" in listed and
          listed == braid.export.SUPPORTED_OPS, "--list-ops prints %d ops" % len(listed))

    check.finish("export-errors")


if __name__ == "__main__":
    main()
