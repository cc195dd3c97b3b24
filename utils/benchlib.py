"""What braid's benchmark commands share (utils/bench-overlap.py,
utils/bench-tensor-parallel.py): running a tool, and compiling one step
several ways and simulating each."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BRAID_BIN") or os.path.join(ROOT, "build", "bin")


def run(cmd, who, **kw):
    """Runs `cmd`; exits naming `who` and the command if it fails."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.exit("%s: command failed (%d): %s\n%s" % (who, p.returncode, " ".join(cmd), p.stderr))
    return p


def generate(args, mlir, who):
    """python3 -m braid.models ARGS -o MLIR."""
    run([sys.executable, "-m", "braid.models", *args, "-o", mlir], who,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))


def simulate(mlir, cluster, schedules, who):
    """Compiles `mlir` for `cluster` once per (name, braid-compile flags) of
    `schedules`, simulates each with braid-run --backend=sim, and returns
    their reports by name."""
    reports = {}
    for name, flags in schedules:
        plan = mlir.replace(".mlir", "-%s.plan" % name)
        run([os.path.join(BIN, "braid-compile"), mlir, "--cluster=" + cluster, *flags, "-o", plan],
            who)
        report = plan + ".json"
        run([os.path.join(BIN, "braid-run"), "--backend=sim", "--cluster=" + cluster, plan,
             "--report", report], who)
        with open(report) as f:
            reports[name] = json.load(f)
    return reports


def peak_gib(report, digits=2):
    """The plan's peak memory per GPU in GiB, marked where it exceeds the
    cluster's GPU memory (the step would not run there; docs/CostModel.md,
    "Memory")."""
    gib = "%.*f" % (digits, report["peak_memory_bytes"] / 2 ** 30)
    return gib if report["fits"] else "**%s: does not fit**" % gib
