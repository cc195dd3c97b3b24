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
