# The optimizer registry (braid.optimizers, issue 42): one entry per
# optimizer braid exports, found along the optimizer's class hierarchy, and
# the one place export, its checks, the PyTorch reference and compare learn
# an optimizer's state names from. A subclass of AdamW exports the update
# AdamW does (a registry keyed by class name would miss it); Adam without
# weight decay, and torch 2.x's Adam(decoupled_weight_decay=True), are
# AdamW's update; the step's optimizer-state arguments and results are the
# registry's names in the update's operand order; the reference's final
# state has the same names; an optimizer outside the registry is refused
# with the list of those braid exports.
#
# Lion (braid.optimizers.Lion, braid.lion: the worked example of adding an
# optimizer, docs/Architecture.md) exports, compiles and trains the MLP of
# examples/pytorch for 10 steps on 2 ranks like PyTorch trains it with the
# same class (braid.compare.against_pytorch: losses within 1e-5 relative of
# float64 PyTorch; final parameters within lr x steps, the distance Lion
# moves an entry, or the float32 spread, since a sign taken of a
# near-zero interpolation turns rounding into an lr-sized step in any
# implementation).
#
# REQUIRES: torch, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t %examples/pytorch

import os
import re
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, load_spec  # noqa: E402
import braid  # noqa: E402
from braid import compare, optimizers  # noqa: E402
from braid.spec import torch_reference  # noqa: E402


class MyAdamW(torch.optim.AdamW):
    """A user's AdamW: the same update under another class name."""


def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def body(text):
    """The step without its comment header (which names the class)."""
    return "\n".join(l for l in text.splitlines() if not l.startswith("//"))


def state_names(text, role):
    return re.findall(r'#braid.role<%s "([^"]+)">' % role, text)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))

    def export(name, make):
        model = net()
        opt = make(model)
        e = braid.export(model, (x,), (y,), F.cross_entropy, opt, 1,
                         output=os.path.join(out, name))
        return model, opt, e, open(e.paths["mlir"]).read()

    adamw = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
    _, _, _, ref = export("adamw", adamw)
    _, _, _, sub = export("subclass",
                          lambda m: MyAdamW(m.parameters(), lr=1e-2, weight_decay=0.1))
    check(body(sub) == body(ref) and "with MyAdamW." in sub,
          "a subclass of AdamW exports AdamW's step (its header names MyAdamW)")
    _, _, _, plain = export("adam", lambda m: torch.optim.Adam(m.parameters(), lr=1e-2))
    check("braid.adamw" in plain and "weight_decay = 0.000000e+00" in plain,
          "Adam without weight decay exports braid.adamw with weight_decay 0")
    if "decoupled_weight_decay" in torch.optim.Adam.__init__.__code__.co_varnames:
        _, _, _, dec = export("adam-decoupled", lambda m: torch.optim.Adam(
            m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True))
        check(body(dec) == body(ref) and "with AdamW." in dec,
              "Adam(decoupled_weight_decay=True) exports as AdamW")

    # The state names: arguments and results in the registry's order.
    entry = optimizers.of(torch.optim.AdamW(net().parameters()))
    names = [n for n, _ in net().named_parameters()]
    want = [s for n in names for s in entry.state_names(n)] + ["step"]
    check(state_names(ref, "optimizer_state") == want + want,
          "AdamW's state arguments and results: %s" % state_names(ref, "optimizer_state")[:4])
    model, opt, e, sgd = export("sgd", lambda m: torch.optim.SGD(m.parameters(), lr=0.1,
                                                               momentum=0.9))
    want = [n + ".momentum" for n in names]
    check(state_names(sgd, "optimizer_state") == want + want and "braid.sgd" in sgd,
          "SGD's state: %s, no step count" % state_names(sgd, "optimizer_state")[:2])
    check(sorted(e.state) == sorted(names + want),
          "SGD's exported state holds the parameters and their momentum")

    # The PyTorch reference's final state carries the same names.
    spec = {"model": net(), "loss_fn": F.cross_entropy}
    spec["optimizer"] = MyAdamW(spec["model"].parameters(), lr=1e-2)
    _, state = torch_reference(spec, (x,), (y,), 2)
    expect = sorted(names + [s for n in names for s in entry.state_names(n)] + ["step"])
    check(sorted(state) == expect and float(state["step"]) == 2.0,
          "the reference's final state of a MyAdamW: %d arrays, step %s"
          % (len(state), state.get("step")))

    # Outside the registry: refused, naming what braid exports.
    try:
        export("rmsprop", lambda m: torch.optim.RMSprop(m.parameters()))
        message = None
    except braid.export.ExportError as err:
        message = str(err)
    check(message == "optimizer RMSprop is not supported: braid exports torch.optim.SGD, "
          "torch.optim.AdamW, torch.optim.Adam, braid.optimizers.Lion", "RMSprop: %s" % message)
    # Lion end to end: 10 steps on 2 ranks against PyTorch.
    spec = load_spec(os.path.join(sys.argv[2], "mlp.py"), data_parallel=2)
    spec["optimizer"] = optimizers.Lion(spec["model"].parameters(), lr=1e-3,
                                        betas=(0.9, 0.99), weight_decay=0.1)
    prefix = os.path.join(out, "lion")
    e = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                     spec["loss_fn"], spec["optimizer"], 2, output=prefix,
                     global_batch=spec["global_batch"])
    text = open(e.paths["mlir"]).read()
    nparams = len(list(spec["model"].parameters()))
    check(text.count("= braid.lion ") == nparams and "braid.adamw" not in text,
          "Lion exports one braid.lion per parameter: %d of %d"
          % (text.count("= braid.lion "), nparams))
    braidtest.compile_step(prefix + ".mlir", prefix + ".plan")
    steps = 10
    p = braidtest.braid_run(prefix + ".plan", ranks=2, args=[
        "--steps", str(steps), "--params", prefix + ".npz", "--data", e.paths["batch"],
        "--save", prefix + ".trained.npz", "--timeout", "120"])
    losses = braidtest.losses(p.stdout)
    with np.load(prefix + ".trained.npz") as f:
        trained = {k: f[k] for k in f.files if k != "loss"}
    result = compare.against_pytorch(spec, spec["global_batch"], losses, trained, steps)
    for line in compare.describe(result):
        print("     lion: %s" % line)
    check(len(losses) == steps and losses[-1] < losses[0] and result["ok"],
          "Lion: 2 ranks train like PyTorch, loss %.5f -> %.5f%s" % (
              losses[0], losses[-1], "".join("\n       " + q for q in result["problems"])))
    check.finish("export-optimizers")


if __name__ == "__main__":
    main()
