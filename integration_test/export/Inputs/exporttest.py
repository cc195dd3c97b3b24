"""Helpers for the exporter's tests."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "Inputs"))
import braidtest  # noqa: E402,F401  (re-exported for the tests)
from braid.export import load_spec, torch_reference  # noqa: E402,F401  (re-exported)


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


def train(plan, exported, prefix, steps, ranks):
    """braid-run of `plan` on `ranks` ranks for `steps` steps from the
    export's parameters and batch, with --check-memory. Returns the losses
    and the saved final state (PREFIX.out.npz, without the loss)."""
    import numpy as np
    p = braidtest.braid_run(plan, ranks=ranks, args=[
        "--steps", str(steps), "--params", exported.paths["params"], "--data",
        exported.paths["batch"], "--save", prefix + ".out.npz", "--timeout", "120",
        "--check-memory"])
    with np.load(prefix + ".out.npz") as f:
        state = {k: f[k] for k in f.files if k != "loss"}
    return braidtest.losses(p.stdout), state
