"""Helpers for the exporter's tests: PyTorch's own training as the reference."""

import copy
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "Inputs"))
import braidtest  # noqa: E402,F401  (re-exported for the tests)


def load(path):
    """A Python file as a module (examples/pytorch/*.py)."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_reference(spec, inputs, targets, steps, double=False):
    """PyTorch trains a copy of spec's model with an optimizer of the same
    class, defaults and state on (inputs, targets) for `steps` steps. Returns the loss
    of every step and the final parameters and optimizer state, named as
    braid.export names them."""
    model = copy.deepcopy(spec["model"])
    if double:
        model = model.double()
        inputs = tuple(x.double() if x.is_floating_point() else x for x in inputs)
    opt = spec["optimizer"]
    ref_opt = type(opt)(model.parameters(), **opt.defaults)
    # The same state, if the optimizer has stepped (parameters in one order).
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    losses = []
    for _ in range(steps):
        ref_opt.zero_grad()
        loss = spec["loss_fn"](model(*inputs), *targets)
        loss.backward()
        ref_opt.step()
        losses.append(float(loss))
    state = {}
    names = {id(p): n for n, p in model.named_parameters()}
    for p in model.parameters():
        n = names[id(p)]
        state[n] = p.detach().numpy()
        st = ref_opt.state[p]
        if st.get("momentum_buffer") is not None:
            state[n + ".momentum"] = st["momentum_buffer"].numpy()
        if "exp_avg" in st:
            state[n + ".exp_avg"] = st["exp_avg"].numpy()
            state[n + ".exp_avg_sq"] = st["exp_avg_sq"].numpy()
            state["step"] = np.array(float(st["step"]))
    return losses, state


class Checker:
    def __init__(self):
        self.failures = []

    def __call__(self, ok, message):
        print(("ok   " if ok else "FAIL ") + message)
        if not ok:
            self.failures.append(message)

    def finish(self, name):
        print("%s: %d failed" % (name, len(self.failures)))
        sys.exit(1 if self.failures else 0)
