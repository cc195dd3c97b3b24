# The aten ops that the end-to-end models do not reach, each checked against
# PyTorch: a model with permute, mean.dim, sub, div by a tensor, exact gelu,
# unsqueeze, neg, cat (and slice in its backward) and an affine-free layer
# norm, trained with SGD + Nesterov momentum + weight decay, and with Adam;
# AdamW and SGD with dampening resumed after 3 PyTorch steps (their state
# exported);
# a tied-weight model whose shared parameter is used three times. One rank,
# 5 steps, judged by braid.compare.against_pytorch: every loss within 1e-5
# relative of float64 PyTorch, every final array no farther from it than 4x
# float32 PyTorch is.
#
# REQUIRES: torch, numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import inspect
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, braidtest, torch_reference  # noqa: E402
import specs  # noqa: E402
import braid  # noqa: E402
from braid import compare  # noqa: E402

STEPS = 5


class Tied(nn.Module):
    """One matrix used by three modules: its gradient is the sum of three."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8, bias=False)
        self.b = nn.Linear(8, 8)
        self.c = nn.Linear(8, 8, bias=False)
        self.b.weight = self.a.weight
        self.c.weight = self.a.weight

    def forward(self, x):
        return self.c(F.relu(self.b(F.relu(self.a(x)))))


class Closure(nn.Module):
    """Its forward runs a lambda that closes over the module itself: a
    deep copy of the model would run the original's layer (the reference
    must train the model in place)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 8)
        self.act = lambda x: F.relu(self.fc(x))

    def forward(self, x):
        return self.head(self.act(x))


class SafeSoftmax(nn.Module):
    """torch 2.x's _safe_softmax over scores whose row 1 is masked whole."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.head = nn.Linear(6, 3)
        mask = torch.zeros(4, 6, dtype=torch.bool)
        mask[1] = True
        mask[2, ::2] = True
        self.register_buffer("mask", mask)

    def forward(self, x):                                      # [B, 4, 6]
        scores = self.fc(x).masked_fill(self.mask, float("-inf"))
        p = torch.ops.aten._safe_softmax(scores, -1)
        return self.head((p * x).sum(1))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()

    torch.manual_seed(3)
    tied = Tied()
    closure = Closure()
    cases = [("ops-sgd", specs.ops()),
             ("ops-adam", specs.ops(seed=1)),
             ("functions", specs.functions()),
             ("indexed", specs.indexed()),
             ("closure", specs.spec(closure, torch.randn(6, 8), torch.randint(0, 8, (6,)),
                                    optimizer=torch.optim.SGD(closure.parameters(), lr=0.1,
                                                              momentum=0.9))),
             ("tied", specs.spec(tied, torch.randn(6, 8), torch.randint(0, 8, (6,)),
                                 optimizer=torch.optim.AdamW(tied.parameters(), lr=1e-2)))]
    m = cases[1][1]["model"]
    cases[1][1]["optimizer"] = torch.optim.Adam(m.parameters(), lr=1e-2)
    # Resuming: optimizers that have stepped export their state (AdamW's step
    # count sets its bias correction; SGD's momentum buffers).
    for name, make in (("resumed-adamw", lambda p: torch.optim.AdamW(p, lr=1e-2)),
                       ("resumed-sgd", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                                                 dampening=0.3))):
        spec = specs.ops(seed=2)
        spec["optimizer"] = make(spec["model"].parameters())
        for _ in range(3):
            spec["optimizer"].zero_grad()
            spec["loss_fn"](spec["model"](*spec["example_inputs"]),
                            *spec["example_targets"]).backward()
            spec["optimizer"].step()
        cases.append((name, spec))

    # torch 2.x's Adam(decoupled_weight_decay=True) is AdamW (torch 1.13's
    # Adam has no such option).
    if "decoupled_weight_decay" in inspect.signature(torch.optim.Adam).parameters:
        spec = specs.ops(seed=3)
        spec["optimizer"] = torch.optim.Adam(spec["model"].parameters(), lr=1e-2,
                                             weight_decay=0.1, decoupled_weight_decay=True)
        cases.append(("adam-decoupled", spec))

    # The reference leaves the spec's model as it was.
    spec = cases[-1][1] if cases[-1][0] == "closure" else dict(cases)["closure"]
    before = {k: v.clone() for k, v in spec["model"].state_dict().items()}
    torch_reference(spec, spec["example_inputs"], spec["example_targets"], 3, double=True)
    after = spec["model"].state_dict()
    check(all(torch.equal(before[k], after[k]) and after[k].dtype == before[k].dtype
              for k in before) and all(p.grad is None for p in spec["model"].parameters()),
          "closure: torch_reference trains the model in place and restores it")

    # torch 2.x's _safe_softmax (torch 1.13 has none).
    if hasattr(torch.ops.aten, "_safe_softmax"):
        torch.manual_seed(4)
        model = SafeSoftmax()
        cases.append(("safe-softmax", specs.spec(
            model, torch.randn(5, 4, 6), torch.randint(0, 3, (5,)),
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))))

    for name, spec in cases:
        prefix = os.path.join(out, name)
        e = braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                         spec["loss_fn"], spec["optimizer"], 1, output=prefix)
        if name == "adam-decoupled":
            check("ranks with AdamW" in e.mlir and "braid.adamw" in e.mlir,
                  "adam-decoupled: Adam(decoupled_weight_decay=True) exports as AdamW")
        if name == "tied":
            check(e.summary["parameters"] == ["a.weight", "b.bias"] and
                  e.summary["tied"] == {"b.weight": "a.weight", "c.weight": "a.weight"},
                  "tied: one shared parameter, %s" % e.summary["tied"])
        elif name == "closure":
            pass
        elif name == "safe-softmax":
            check("braid.softmax" in e.mlir and "{safe}" in e.mlir,
                  "safe-softmax: _safe_softmax is braid.softmax {safe}")
        elif name == "indexed":
            ops = set(e.summary["aten_ops"])
            want = {"aten.index.Tensor", "aten.index_put.default", "aten.new_zeros.default"}
            check(want <= ops, "indexed: the graph has %s" % (", ".join(sorted(want - ops)) or
                                                           "index, index_put and new_zeros"))
        elif name == "functions":
            ops = set(e.summary["aten_ops"])
            want = {"aten.%s" % o for o in (
                "exp.default", "log.default", "sqrt.default", "sigmoid.default",
                "sigmoid_backward.default", "tanh.default", "tanh_backward.default",
                "pow.Tensor_Scalar", "where.self", "masked_fill.Scalar", "unbind.int",
                "select.int", "select_backward.default", "stack.default")}
            text = open(prefix + ".mlir").read()
            check(want <= ops and text.count("braid.where") >= 2 and "braid.causal_mask" in text,
                  "%s: the graph has %s, %d braid.where, %d braid.causal_mask" % (
                      name, ", ".join(sorted(want - ops)) or "every op it is meant to test",
                      text.count("braid.where"), text.count("braid.causal_mask")))
        else:
            ops = set(e.summary["aten_ops"])
            want = {"aten.permute.default", "aten.mean.dim", "aten.sub.Tensor",
                    "aten.div.Tensor", "aten.gelu.default", "aten.unsqueeze.default",
                    "aten.neg.default", "aten.cat.default", "aten.slice.Tensor",
                    "aten.native_layer_norm.default"}
            check(want <= ops, "%s: the graph has %s" % (name, ", ".join(sorted(want - ops)) or
                                                          "every op it is meant to test"))
        plan = prefix + ".plan"
        braidtest.compile_step(prefix + ".mlir", plan)
        save = prefix + ".trained.npz"
        p = braidtest.braid_run(plan, args=["--steps", str(STEPS), "--params", prefix + ".npz",
                                            "--data", prefix + ".batch.npz", "--save", save])
        losses = braidtest.losses(p.stdout)
        with np.load(save) as f:
            trained = {k: f[k] for k in f.files if k != "loss"}
        result = compare.against_pytorch(spec, (spec["example_inputs"], spec["example_targets"]),
                                         losses, trained, STEPS)
        check(result["ok"], "%s: %d steps vs PyTorch: %s%s" % (
            name, STEPS, "; ".join(compare.describe(result)),
            "".join("\n       " + p for p in result["problems"])))

    check.finish("export-ops")


if __name__ == "__main__":
    main()
