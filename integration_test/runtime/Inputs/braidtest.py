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


class Checker:
    """A test's checks: each printed as ok or FAIL, the failures counted;
    finish prints "NAME: N failed" and exits non-zero on any."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, message):
        print(("ok   " if ok else "FAIL ") + message)
        if not ok:
            self.failures.append(message)

    def finish(self, name):
        print("%s: %d failed" % (name, len(self.failures)))
        sys.exit(1 if self.failures else 0)


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


def check_moments(check, what, a, b):
    """Checks AdamW's moments of step 1 in the saved files `a` and `b`
    (numpy archives) against each other by norm, |a - b| / |b| per array:
    the first within 1e-5, the second (the gradient squared, twice the
    relative error) within 2e-5; the callers derive why their two runs
    agree so."""
    for suffix, bound in ((".exp_avg", 1e-5), (".exp_avg_sq", 2e-5)):
        names = [k for k in b.files if k.endswith(suffix)]
        worst = max((norm_rel(a[k], b[k]), k) for k in names)
        check(len(names) >= 8 and worst[0] <= bound,
              "%s: %d %s arrays of step 1 within %g by norm (worst %.2g, %s)" % (
                  what, len(names), suffix[1:], bound, worst[0], worst[1]))


def norm_rel(a, b):
    """|a - b| / |b| over a whole array, in float64."""
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def losses(stdout):
    """The loss of each step, from braid-run's output."""
    return [float(line.split()[-1]) for line in stdout.splitlines()
            if line.startswith("step ")]


# The comparison every runtime and export test uses (braid.compare, which
# says why its floor is what it is).
from braid.compare import REL_FLOOR, ShapeMismatch, max_rel_diff  # noqa: E402,F401


def pipeline_chain(p, m, schedule, v=1, rows=256, width=2048, skip=False):
    """One micro-batch's step of p v square layers of `width` on `rows`
    rows (a product each way: the forward x W^T, the input's gradient dY W,
    the weight's dY^T X) and a cross-entropy loss, trained by SGD, on a grid
    of p x 1, asking braid-pipeline for p stages of m micro-batches (v
    layers each; under the interleaved schedule, v virtual stages per rank,
    a layer each). With `skip`, layer 3 adds layer 1's output (a residual
    from stage 0 to stage 2 under the interleaved schedule, and its
    gradient back)."""
    T = "tensor<%dx%dxf32>" % (rows, width)
    W = "tensor<%dx%dxf32>" % (width, width)
    LABELS = "tensor<%dxi64>" % rows
    ranks, p = p, p * v
    lines = []
    h = "%x"
    for i in range(1, p + 1):
        lines.append("  %%h%d%s = braid.matmul %s, %%w%d {transpose_b} : %s, %s -> %s" % (
            i, "m" if skip and i == 3 else "", h, i, T, W, T))
        if skip and i == 3:
            lines.append("  %%h3 = braid.add %%h3m, %%h1 : %s" % T)
        h = "%%h%d" % i
    lines.append("  %%loss = braid.cross_entropy %s, %%labels reduction = mean : %s, %s -> "
                 "tensor<f32>" % (h, T, LABELS))
    lines.append("  %one = braid.constant dense<1.000000e+00> : tensor<f32>")
    lines.append("  %%g%d = braid.cross_entropy_backward %%one, %s, %%labels reduction = mean : "
                 "tensor<f32>, %s, %s" % (p, h, T, LABELS))
    for i in range(p, 0, -1):
        x = "%%h%d" % (i - 1) if i > 1 else "%x"
        lines.append("  %%dw%d = braid.matmul %%g%d, %s {transpose_a} : %s, %s -> %s" % (
            i, i, x, T, T, W))
        lines.append('  %%r%d = braid.all_reduce %%dw%d on @world grid_axes = [1] reduction = avg '
                     'grad_of = ["w%d"] : %s' % (i, i, i, W))
        if i > 1:
            lines.append("  %%g%d%s = braid.matmul %%g%d, %%w%d : %s, %s -> %s" % (
                i - 1, "m" if skip and i == 2 else "", i, i, T, W, T))
            if skip and i == 2:
                lines.append("  %%g1 = braid.add %%g1m, %%g3 : %s" % T)
    results, values, args = [], [], []
    for i in range(1, p + 1):
        lines.append("  %%nw%d, %%nm%d = braid.sgd %%w%d, %%r%d, %%m%d lr = 1.000000e-01 "
                     "momentum = 9.000000e-01 weight_decay = 0.000000e+00 : %s" % (
                         i, i, i, i, i, W))
        args += ['%%w%d: %s {braid.role = #braid.role<parameter "w%d">}' % (i, W, i),
                 '%%m%d: %s {braid.role = #braid.role<optimizer_state "w%d.momentum">}' % (
                     i, W, i)]
        results += ['%s {braid.role = #braid.role<parameter "w%d">}' % (W, i),
                    '%s {braid.role = #braid.role<optimizer_state "w%d.momentum">}' % (W, i)]
        values += ["%%nw%d" % i, "%%nm%d" % i]
    args += ['%%x: %s {braid.role = #braid.role<batch "x">}' % T,
             '%%labels: %s {braid.role = #braid.role<batch "labels">}' % LABELS]
    results.append('tensor<f32> {braid.role = #braid.role<loss "loss">}')
    values.append("%loss")
    lines.append("  return %s : %s" % (", ".join(values), ", ".join(
        r.split(" {")[0] for r in results)))
    every = 1 if schedule == "interleaved" else v
    boundaries = ", ".join('"w%d"' % i for i in range(1 + every, p + 1, every))
    virtual = ", virtual_stages = %d" % v if schedule == "interleaved" else ""
    return ('module attributes {braid.pipeline = #braid.pipeline<axis = 0, micro_batches = %d, '
            'schedule = "%s"%s, boundaries = [%s]>} {\nshard.grid @world(shape = %dx1)\n\n'
            'func.func @step(%s)\n    -> (%s) {\n%s\n}\n}\n' % (
                m, schedule, virtual, boundaries, ranks, ", ".join(args), ", ".join(results),
                "\n".join(lines)))


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
