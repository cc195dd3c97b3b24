"""What braid's benchmark commands share (utils/bench-overlap.py,
utils/bench-tensor-parallel.py): running a tool, and compiling one step
several ways and simulating each."""

import json
import os
import subprocess
import sys
import tempfile

# The checkout (through any link to utils/: docs tests run the commands
# in a work directory that links it).
ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
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


def add_cost_model_option(parser):
    """--cost-model v1|v2 (docs/CostModel.md): v2, the presets as they are,
    by default; v1 times the same steps on the presets without their "nccl"
    and "gemm_tiles" objects, for the tables before v2 (utils/bench-diff.py
    compares two runs)."""
    parser.add_argument("--cost-model", choices=("v1", "v2"), default="v2",
                        help="the cost model to simulate with (default v2)")


def cluster_for(cluster, model):
    """What --cluster gets for preset `cluster` under cost model `model`."""
    if model == "v2":
        return cluster
    with open(os.path.join(ROOT, "common", "clusters", cluster + ".json")) as f:
        c = json.load(f)
    c.pop("nccl", None)
    c.pop("gemm_tiles", None)
    c["name"] = cluster + "-v1"
    path = os.path.join(tempfile.gettempdir(), "braid-%d-%s.json" % (os.getpid(), c["name"]))
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def simulate(mlir, cluster, schedules, who, model="v2"):
    """Compiles `mlir` for `cluster` once per (name, braid-compile flags) of
    `schedules`, simulates each with braid-run --backend=sim, and returns
    their reports by name, each with braid-compile's stderr
    (`compile_stderr`). `model`: the cost model (add_cost_model_option)."""
    reports = {}
    cluster = cluster_for(cluster, model)
    for name, flags in schedules:
        plan = mlir.replace(".mlir", "-%s.plan" % name)
        compiled = run([os.path.join(BIN, "braid-compile"), mlir, "--cluster=" + cluster, *flags,
                        "-o", plan], who)
        report = plan + ".json"
        run([os.path.join(BIN, "braid-run"), "--backend=sim", "--cluster=" + cluster, plan,
             "--report", report], who)
        with open(report) as f:
            reports[name] = json.load(f)
        # What the passes said (their remarks, with --report).
        reports[name]["compile_stderr"] = compiled.stderr
    return reports


def play(mlir, cluster, flags, who, tag):
    """Compiles `mlir` for `cluster` with braid-compile `flags` and simulates
    it: (the report, rank 0's trace spans). `tag` names the plan."""
    plan = mlir.replace(".mlir", "-%s.plan" % tag)
    run([os.path.join(BIN, "braid-compile"), mlir, "--cluster=" + cluster, *flags, "-o", plan],
        who)
    report, trace = plan + ".json", plan + ".trace.json"
    run([os.path.join(BIN, "braid-run"), "--backend=sim", plan, "--report", report, "--trace",
         trace, "--trace-ranks", "1"], who)
    with open(report) as f:
        r = json.load(f)
    with open(trace) as f:
        return r, [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def peak_gib(report, digits=2):
    """The plan's peak memory per GPU in GiB, marked where it exceeds the
    cluster's GPU memory (the step would not run there; docs/CostModel.md,
    "Memory")."""
    gib = "%.*f" % (digits, report["peak_memory_bytes"] / 2 ** 30)
    return gib if report["fits"] else "**%s: does not fit**" % gib
