# braid-run --backend=sim on a real step: the report's figures equal what
# they are defined as (docs/CostModel.md), recomputed here: compute time the
# sum of the cost formula over the plan's kernels, communication time, time
# in flight and exposed communication from rank 0's spans in the trace,
# overlap fraction, lower bound and efficiency from their definitions, peak
# memory the plan's arena, the kernel and collective counts; the
# overlapped schedule beats the naive one, the Chrome trace has a process
# per rank and a thread per stream whose spans match the report, and
# braid.timeline renders it as a PNG (and refuses to draw it as a pipeline
# diagram, --text: it is not pipelined). The plan records its cluster, which
# the simulator uses unless --cluster overrides it. Then bad input: unknown
# and malformed clusters, a plan larger than the cluster, misplaced options.
#
# REQUIRES: numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from costformulas import cluster, dump_kernels, kernel_seconds  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    failures += not ok


def sim(plan, *args, check_rc=True):
    return braidtest.run([braidtest.tool("braid-run"), "--backend=sim", plan, *args],
                         check=check_rc)


def measure(intervals):
    """The length of the union of [start, end) intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def minus(intervals, holes):
    """The length of the union of `intervals` outside the union of `holes`."""
    points = sorted({p for iv in intervals + holes for p in iv})
    total = 0.0
    for a, b in zip(points, points[1:]):
        mid = (a + b) / 2
        if any(x <= mid < y for x, y in intervals) and not any(x <= mid < y for x, y in holes):
            total += b - a
    return total


def exact_figures(variant, plan, r, trace):
    """The report's figures against their definitions. Trace times are
    microseconds printed to 12 significant digits: 1e-9 relative covers
    their rounding; what is computed from the report itself is exact to
    1e-12."""
    def near(a, b, rel):
        return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    costs = dump_kernels(dump)
    c = cluster("h100-8")
    compute = sum(kernel_seconds(c, f, b, d, prod) for f, b, d, prod in costs)
    check(len(costs) == r["kernels"] and near(r["compute_time"], compute, 1e-9),
          "%s: compute time %.12e s is the sum of the formula over the plan's %d kernels "
          "(%.12e s)" % (variant, r["compute_time"], len(costs), compute))
    spans = [e for e in trace if e["ph"] == "X" and e["pid"] == 0]
    comm = [(e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6) for e in spans if e["cat"] != "compute"]
    kern = [(e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6) for e in spans if e["cat"] == "compute"]
    check(len(comm) == r["collectives"] and len(kern) == r["kernels"],
          "%s: rank 0's trace has the report's %d kernels and %d collectives" % (
              variant, r["kernels"], r["collectives"]))
    # One communication stream: the collectives never share the links, so
    # each span is its uncontended time.
    check(near(r["comm_time"], sum(b - a for a, b in comm), 1e-9),
          "%s: communication time is the sum of rank 0's collective spans" % variant)
    moved = sum(e["args"]["bytes"] for e in spans if e["cat"] != "compute")
    check(r["comm_bytes"] == moved and moved > 0,
          "%s: bytes moved %d are the sum of rank 0's collective spans' (%d)" % (
              variant, r["comm_bytes"], moved))
    names = {e["args"]["algorithm"] for e in spans if e["cat"] != "compute"}
    check(names and names <= {"ring/LL", "ring/LL128", "ring/Simple", "nvls/Simple"},
          "%s: each collective span names an algorithm and protocol of one node: %s" % (
              variant, sorted(names)))
    check(near(r["comm_wall_time"], measure(comm), 1e-9),
          "%s: time in flight %.12e s is the union of the collective spans" % (
              variant, r["comm_wall_time"]))
    exposed = minus(comm, kern)
    # The simulator's event times carry its floating-point error (a
    # picosecond over thousands of rate changes): 1e-10 s absolute.
    check(near(r["exposed_comm"], exposed, 1e-9) or abs(r["exposed_comm"] - exposed) < 1e-10,
          "%s: exposed communication %.12e s is collective time with no kernel (%.12e s)" % (
              variant, r["exposed_comm"], exposed))
    wall = r["comm_wall_time"]
    check(near(r["overlap_fraction"], (wall - r["exposed_comm"]) / wall, 1e-12),
          "%s: overlap fraction = 1 - exposed / in flight" % variant)
    check(r["bound"] == max(r["compute_bound"], r["comm_bound"], r["tail_bound"]) and
          near(r["efficiency"], r["bound"] / r["step_time"], 1e-12),
          "%s: bound is the largest part, efficiency = bound / step" % variant)
    arena = int(re.search(r"arena (\d+) bytes", dump).group(1))
    check(r["peak_memory_bytes"] == arena, "%s: peak memory is the plan's arena" % variant)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlir = os.path.join(out, "gpt.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--world-size", "8",
                   "--layers", "4", "--batch", "4", "--seq", "256", "-o", mlir])
    reports = {}
    for variant, flags in (("naive", ["--schedule=naive"]), ("braid", [])):
        plan = os.path.join(out, variant + ".plan")
        braidtest.compile_step(mlir, plan, "--cluster=h100-8", *flags)
        trace = os.path.join(out, variant + ".trace.json")
        report = os.path.join(out, variant + ".report.json")
        p = sim(plan, "--cluster=h100-8", "--trace", trace, "--report", report)
        with open(report) as f:
            r = json.load(f)
        reports[variant] = r
        check("step time" in p.stdout and "efficiency" in p.stdout, variant + ": report printed")
        check(r["bound"] <= r["step_time"] * (1 + 1e-9), variant + ": bound <= step time")
        check(0 <= r["exposed_comm"] <= r["comm_wall_time"] * (1 + 1e-9),
              variant + ": exposed communication within communication time")
        check(r["step_time"] >= r["compute_time"] * (1 - 1e-9), variant + ": step >= compute")
        with open(trace) as f:
            t = json.load(f)["traceEvents"]
        pids = {e["pid"] for e in t if e["ph"] == "M" and e["name"] == "process_name"}
        check(pids == set(range(8)), variant + ": a process per rank in the trace")
        spans = [e for e in t if e["ph"] == "X" and e["pid"] == 0]
        busy = sum(e["dur"] for e in spans if e["cat"] == "compute") * 1e-6
        check(busy >= r["compute_time"] * (1 - 1e-6), variant + ": rank 0's kernel spans cover its compute")
        last = max(e["ts"] + e["dur"] for e in spans) * 1e-6
        check(abs(last - r["step_time"]) <= 1e-9 + 1e-6 * r["step_time"],
              variant + ": the trace ends at the step time")
        exact_figures(variant, plan, r, t)
        png = os.path.join(out, variant + ".png")
        q = braidtest.run([sys.executable, "-m", "braid.timeline", trace, "-o", png, "--ranks", "2"])
        with open(png, "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n" and "4 streams" in q.stdout,
                  variant + ": timeline PNG rendered")
        # One rank's streams as text: its matmuls on the compute stream, the
        # gradients' all-reduces on a communication stream.
        q = braidtest.run([sys.executable, "-m", "braid.timeline", trace, "--streams", "0",
                           str(r["step_time"] * 1e6), "--unit", "1"])
        rows = dict(line.split(" |", 1) for line in q.stdout.splitlines())
        compute = [v for k, v in rows.items() if "compute" in k]
        comm = [v for k, v in rows.items() if "comm" in k]
        check(len(compute) == 1 and "M" in compute[0] and comm and all("r" in v for v in comm),
              variant + ": braid.timeline --streams draws rank 0's matmuls and all-reduces: "
              + " / ".join(sorted(rows)))
        q = braidtest.run([sys.executable, "-m", "braid.timeline", trace, "--streams", "5", "3"],
                          check=False)
        check(q.returncode == 1 and "--streams needs FROM < TO" in q.stderr,
              variant + ": braid.timeline --streams refuses an empty window: " + q.stderr.strip())
        q = braidtest.run([sys.executable, "-m", "braid.timeline", trace, "--text"], check=False)
        check(q.returncode == 1 and "not a pipelined trace (no kernel names an action" in q.stderr,
              variant + ": braid.timeline --text refuses a trace that is not pipelined: "
              + q.stderr.strip())
    check(reports["naive"]["overlap_fraction"] < 0.05, "naive: (almost) nothing overlaps")
    check(reports["braid"]["step_time"] < reports["naive"]["step_time"],
          "braid's schedule is faster than naive (%.6f < %.6f s)" % (
              reports["braid"]["step_time"], reports["naive"]["step_time"]))
    check(reports["braid"]["overlap_fraction"] > 0.5, "braid: most communication overlaps")

    plan = os.path.join(out, "braid.plan")
    bad = os.path.join(out, "bad.json")

    def bad_cluster(edit, expect):
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "common", "clusters",
                               "h100-8.json")) as f:
            c = json.load(f)
        text = edit(c)
        with open(bad, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(c))
        p = sim(plan, "--cluster=" + bad, check_rc=False)
        check(p.returncode == 1 and expect in p.stderr, "bad cluster: %s" % expect)

    bad_cluster(lambda c: c.pop("nvlink_gb_per_s"), 'missing "nvlink_gb_per_s"')
    bad_cluster(lambda c: c.update(extra=1), 'unknown key "extra"')
    bad_cluster(lambda c: c.update(nodes="8"), '"nodes" must be an integer')
    bad_cluster(lambda c: c.update(matmul_efficiency=1.5), '"matmul_efficiency" is 1.5, outside [0.001, 1]')
    bad_cluster(lambda c: c["peak_tflops"].pop("bf16"), 'peak_tflops: missing "bf16"')
    bad_cluster(lambda c: "{not json", "not valid JSON")
    bad_cluster(lambda c: c.update(nccl=3), '"nccl" must be an object of version, arch')
    bad_cluster(lambda c: c["nccl"].update(version="2.19.3"),
                'nccl: version "2.19.3": braid has the tuning model of NCCL 2.30.7 only')
    bad_cluster(lambda c: c["nccl"].update(arch="volta"), 'unknown arch "volta" (hopper, ampere)')
    bad_cluster(lambda c: c["nccl"].pop("nic_gb_per_s"), 'nccl: missing "nic_gb_per_s"')
    bad_cluster(lambda c: c["nccl"].update(nics_per_node=0), '"nics_per_node" is 0, outside [1, 1024]')
    bad_cluster(lambda c: c.update(gemm_tiles=1), '"gemm_tiles" must be an object of sm_count')
    bad_cluster(lambda c: c["gemm_tiles"].pop("tile_k"), 'gemm_tiles: missing "tile_k"')
    bad_cluster(lambda c: c["gemm_tiles"].update(sm_count=0), '"sm_count" is 0, outside [1, 1048576]')
    bad_cluster(lambda c: c["gemm_tiles"].update(pipeline_fill_us=-1), '"pipeline_fill_us" is -1, outside')
    for args, expect, rc in (
            (["--cluster=h100-9"], "unknown cluster 'h100-9' (presets: a100-8, h100-8, h100-8x32, h100-8x8, h200-8", 1),
            (["--cluster=/nonexistent.json"], "cannot open cluster file", 1),
            (["--cluster=h100-8", "--params", "p.npz"], "simulates time only", 2),
            (["--cluster=h100-8", "--steps", "3"], "simulates one step", 2)):
        p = sim(plan, *args, check_rc=False)
        check(p.returncode == rc and expect in p.stderr, "error: %s" % expect)
    # The plan records its cluster: without --cluster the simulator uses it,
    # and --cluster overrides it.
    p = sim(plan)
    q = sim(plan, "--cluster=h100-8")
    check("simulated on h100-8" in p.stdout and p.stdout == q.stdout,
          "no --cluster: the plan's cluster (h100-8)")
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan])
    check("compiled for cluster h100-8" in dump.stdout, "--dump shows the plan's cluster")
    a100 = sim(plan, "--cluster=a100-8")
    check("simulated on a100-8" in a100.stdout and a100.stdout != p.stdout,
          "--cluster overrides the plan's cluster")
    # A cluster given by file travels whole: the plan simulates without it.
    custom = os.path.join(out, "custom.json")
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "common", "clusters",
                           "h100-8.json")) as f:
        c = json.load(f)
    c["name"] = "custom-h100"
    c["nvlink_gb_per_s"] = c["nvlink_gb_per_s"] / 4
    with open(custom, "w") as f:
        json.dump(c, f)
    custom_plan = os.path.join(out, "custom.plan")
    braidtest.compile_step(mlir, custom_plan, "--cluster=" + custom)
    os.remove(custom)
    p = sim(custom_plan)
    check("simulated on custom-h100" in p.stdout, "a cluster file is recorded whole in the plan")
    # A plan translated from IR without a cluster names what is missing.
    scheduled = os.path.join(out, "scheduled.mlir")
    braidtest.run([braidtest.tool("braid-opt"), mlir, "--braid-overlap", "--braid-plan-memory",
                   "-o", scheduled])
    bare = os.path.join(out, "bare.plan")
    braidtest.run([braidtest.tool("braid-translate"), "--braid-to-plan", scheduled, "-o", bare])
    p = sim(bare, check_rc=False)
    check(p.returncode == 2 and "the plan records no cluster" in p.stderr,
          "a plan without a cluster needs --cluster")
    check("simulated on h100-8" in sim(bare, "--cluster=h100-8").stdout,
          "--cluster simulates a plan without one")
    # A 64-rank plan on an 8-GPU cluster.
    big = os.path.join(out, "big.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "mlp", "--world-size", "64", "-o", big])
    braidtest.compile_step(big, os.path.join(out, "big.plan"), "--cluster=h100-8x8")
    p = sim(os.path.join(out, "big.plan"), "--cluster=h100-8", check_rc=False)
    check(p.returncode == 1 and "the plan is for 64 ranks, but cluster 'h100-8' has 8 GPUs" in p.stderr,
          "a plan larger than the cluster")
    p = braidtest.run([braidtest.tool("braid-run"), plan, "--trace", "t.json"], check=False)
    check(p.returncode == 2 and "go with --backend=sim" in p.stderr, "--trace without sim")
    # The cpu backend runs a bf16 plan (f32 compute, bf16 storage): the
    # loss is read widened, falls, and --save writes the bf16 parameters
    # as float32 arrays.
    bf = os.path.join(out, "bf16.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt2-small", "--layers", "1",
                   "--seq", "64", "--batch", "1", "--world-size", "1", "--dtype", "bf16", "-o", bf])
    braidtest.compile_step(bf, os.path.join(out, "bf16.plan"))
    saved = os.path.join(out, "bf16.npz")
    p = braidtest.run([braidtest.tool("braid-run"), os.path.join(out, "bf16.plan"), "--steps", "3",
                       "--save", saved], check=False)
    losses = [float(l.split()[-1]) for l in p.stdout.splitlines() if l.startswith("step ")]
    check(p.returncode == 0 and len(losses) == 3 and 9 < losses[0] < 12 and losses[2] < losses[0],
          "cpu backend trains bf16: %s %s" % (losses, p.stderr[-300:]))
    import numpy as np
    w = np.load(saved)["h0.mlp.c_fc.weight"]
    bits = w.view(np.uint32) & 0xFFFF
    check(w.dtype == np.float32 and w.shape == (3072, 768) and not bits.any()
          and float(np.abs(w).mean()) > 1e-3, "a saved bf16 parameter is float32 holding bf16 values")
    # The cpu backend refuses f64 and names the simulator.
    f64 = os.path.join(out, "f64.mlir")
    with open(f64, "w") as f:
        f.write("""func.func @f64(%a: tensor<4x4xf64> {braid.role = #braid.role<batch "a">})
    -> tensor<4x4xf64> {
  %r = braid.relu %a : tensor<4x4xf64>
  return %r : tensor<4x4xf64>
}
""")
    braidtest.compile_step(f64, os.path.join(out, "f64.plan"))
    np.savez(os.path.join(out, "f64.npz"), a=np.ones((4, 4)))
    p = braidtest.run([braidtest.tool("braid-run"), os.path.join(out, "f64.plan"), "--data",
                       os.path.join(out, "f64.npz")], check=False)
    check(p.returncode == 1 and "the cpu backend computes in f32, bf16 and f16" in p.stderr
          and "--backend=sim simulates other types" in p.stderr, "cpu backend refuses f64: " + p.stderr)
    print("sim-report: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
