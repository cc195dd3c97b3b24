# braid.export's errors: each names the problem, `python3 -m braid.export`
# exits 1, and nothing is written.
#  - an op without a lowering (SiLU in blocks.1.act, sin in the model's own
#    forward, dropout) names the aten op and the module path;
#  - a non-causal mask, an unsupported optimizer or optimizer option, a
#    parameter outside the optimizer, a non-scalar loss, bad arguments;
#  - the command line: a missing file or function, a spec that is not a dict,
#    no world size, a bad --arg.
#
# REQUIRES: torch
# RUN: %python %s %t

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
    out = sys.argv[1]
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
    cli("silu", [SPECS + ":silu"], "1 aten op of the step has no braid lowering",
        "aten.silu.default (from blocks.1.act (SiLU))", "and 3 more in its backward",
        absent=["dropout"])
    cli("own-forward", [SPECS + ":own_forward"], "aten.sin.default",
        "from the model's own forward (OwnForward)")
    cli("dropout", [SPECS + ":dropout"], "aten.empty_like.default (from blocks.1.act (Dropout))",
        "random ops such as dropout are not supported")
    cli("two-ops", [SPECS + ":two_ops"], "2 aten ops of the step have no braid lowering",
        "aten.silu.default (from blocks.1.act (SiLU))",
        "aten.sin.default (from the model's own forward (TwoOps))")

    # The command line.
    cli("no-file", ["no/such/file.py:build"], "no such file: no/such/file.py")
    cli("no-function", [SPECS + ":nothing"], "has no function nothing")
    cli("not-a-dict", [SPECS + ":not_a_dict"], "must return a dict, not int")
    cli("bad-arg", [SPECS + ":ops", "--arg", "seed"], "--arg takes KEY=VALUE")
    cli("bad-kwarg", [SPECS + ":ops", "--arg", "colour=1"], "calling", "colour")
    p = subprocess.run([sys.executable, "-m", "braid.export", SPECS + ":ops", "-o",
                        os.path.join(out, "ok"), "--arg", "seed=2"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0 and "wrote" in p.stdout and "@ops_step, 1 ranks, SGD" in p.stdout,
          "the command line exports ops with --arg seed=2: exit %d" % p.returncode)

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

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("keep", torch.eye(4))

        def forward(self, x):  # [B, 4, 4]
            return self.fc(x).masked_fill(self.keep == 0, -1e9).sum(-1)

    api("non-causal-mask", "only a causal mask", model=Masked(), x=torch.randn(2, 4, 4),
        y=torch.randint(0, 4, (2,)))
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
    api("not-tensors", "example_inputs must be a tuple of tensors", x=[1, 2, 3])
    api("global-batch", "global_batch: x is [9, 16] torch.float32, expected [8, 16]",
        global_batch=((torch.randn(9, 16),), (torch.randint(0, 4, (8,)),)))
    api("name-clash", "is also the name of a parameter", input_names=["head.bias"])
    unused = specs.Net()
    unused.extra = nn.Linear(2, 2)
    api("unused-parameter", "parameter extra.weight does not reach the loss", model=unused)
    p = subprocess.run([sys.executable, "-m", "braid.export", "--list-ops"],
                       stdout=subprocess.PIPE, text=True)
    listed = p.stdout.split()
    check(p.returncode == 0 and "aten.addmm.default" in listed and
          listed == braid.export.SUPPORTED_OPS, "--list-ops prints %d ops" % len(listed))

    check.finish("export-errors")


if __name__ == "__main__":
    main()
