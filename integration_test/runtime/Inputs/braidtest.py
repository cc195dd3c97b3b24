"""Helpers for the runtime's integration tests: compile, run, compare."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np

BIN = os.environ.get("BRAID_BIN", "")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe",
          "-x", "ASAN_OPTIONS", "-x", "UBSAN_OPTIONS"]


def tool(name):
    """A braid tool; BRAID_RUN overrides braid-run (a sanitizer build)."""
    if name == "braid-run" and os.environ.get("BRAID_RUN"):
        return os.environ["BRAID_RUN"]
    return os.path.join(BIN, name) if BIN else name


def run(cmd, check=True, timeout=600, **kw):
    """Runs `cmd`, returning the CompletedProcess; fails loudly on error."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s\n%s" %
                 (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


def compile_step(mlir_path, plan_path, *flags):
    """braid-compile; with BRAID_PLAN_CACHE=DIR, plans are kept in DIR by a
    hash of the input and the flags, so that a machine without MLIR (a GPU
    machine, utils/gpu-bundle.sh) runs the tests on plans compiled here."""
    cache = os.environ.get("BRAID_PLAN_CACHE")
    if not cache:
        run([tool("braid-compile"), mlir_path, "-o", plan_path, *flags])
        return
    with open(mlir_path, "rb") as f:
        key = hashlib.sha256(f.read() + "\0".join(flags).encode()).hexdigest()[:24]
    cached = os.path.join(cache, key + ".plan")
    if not os.path.exists(cached):
        if os.environ.get("BRAID_PLAN_CACHE_ONLY"):
            sys.exit("no cached plan for %s %s in %s" % (mlir_path, " ".join(flags), cache))
        os.makedirs(cache, exist_ok=True)
        run([tool("braid-compile"), mlir_path, "-o", cached, *flags])
    shutil.copyfile(cached, plan_path)


def braid_run(plan, ranks=1, args=(), check=True, timeout=600,
              backend=os.environ.get("BRAID_BACKEND", "cpu")):
    cmd = [tool("braid-run"), "--backend=" + backend, plan, *args]
    if ranks > 1:
        cmd = MPIRUN + ["-np", str(ranks)] + cmd
    return run(cmd, check=check, timeout=timeout)


def losses(stdout):
    """The loss of each step, from braid-run's output."""
    return [float(line.split()[-1]) for line in stdout.splitlines()
            if line.startswith("step ")]


# The comparison every runtime and export test uses (braid.compare, which
# says why its floor is what it is).
from braid.compare import REL_FLOOR, ShapeMismatch, max_rel_diff  # noqa: E402,F401


def interleaved_warmup(p, r, m, v):
    """The interleaved schedule's warm-up forwards on rank r
    (PipelineSchedule.cpp's interleavedWarmup, written again): 2 (p - r - 1)
    + (v - 1) p, or all of them with one group of micro-batches (m = p)."""
    return m * v if m == p else min(2 * (p - r - 1) + (v - 1) * p, m * v)


def interleaved_actions(p, r, m, v):
    """Rank r's actions (kind, micro-batch, chunk) under the interleaved
    schedule (Megatron-LM's order, PipelineSchedule.cpp written again): the
    j-th forward is micro-batch (j // pv) p + j % p of chunk (j % pv) // p,
    the j-th backward the same micro-batch of chunk v - 1 - (j % pv) // p;
    the warm-up's forwards, then a forward and a backward in turn, then the
    rest."""
    total, group = m * v, p * v

    def nth(kind, j):
        c = (j % group) // p
        return (kind, (j // group) * p + j % p, v - 1 - c if kind == "B" else c)

    warm = interleaved_warmup(p, r, m, v)
    a = [nth("F", j) for j in range(warm)]
    for j in range(total - warm):
        a += [nth("F", j + warm), nth("B", j)]
    return a + [nth("B", j) for j in range(total - warm, total)]


def pipeline_actions(schedule, p, i, m):
    """Stage i's actions (("F", k), ("B", k), ("W", k)) in `schedule`'s
    order, the rules of PipelineSchedule.cpp written again for the tests:
    GPipe every forward then every backward; 1F1B p - i - 1 warm-up
    forwards, then a forward and a backward in turn, then the rest; ZB-H1
    1F1B's with micro-batch k's W after the B of k + i, the last i at the
    end."""
    warm = m if schedule == "gpipe" else min(p - i - 1, m)
    a = [("F", k) for k in range(warm)]
    for k in range(warm, m):
        a += [("F", k), ("B", k - warm)]
    a += [("B", k) for k in range(m - warm, m)]
    if schedule != "zb-h1":
        return a
    out = []
    for x in a:
        out.append(x)
        if x[0] == "B" and x[1] >= i:
            out.append(("W", x[1] - i))
    return out + [("W", k) for k in range(max(0, m - i), m)]


def ideal_links_cluster(out):
    """A cluster file in `out` of ideal links: the h100-8 preset with
    transfers that take no time (a nanosecond for a MiB) and no contention
    between kernels and transfers, for schedules judged by their formulas.
    Returns its path."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "common", "clusters",
                           "h100-8.json")) as f:
        ideal = json.load(f)
    ideal.update(name="ideal-links-8", nvlink_latency_us=0, network_latency_us=0,
                 collective_base_latency_us=0, nvlink_gb_per_s=1e6, network_gb_per_s=1e6,
                 compute_slowdown_during_comm=0, comm_slowdown_during_compute=0)
    ideal.pop("nccl", None)
    path = os.path.join(out, "ideal-links-8.json")
    with open(path, "w") as f:
        json.dump(ideal, f)
    return path
