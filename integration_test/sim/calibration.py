# A cluster calibrated on a real GPU (docs/CostModel.md, "Calibration"):
# a cluster file whose "calibration" names braid-gpu-bench's output. The
# simulated compute time equals the sum over the plan's kernels of the
# calibrated formula, recomputed here (costformulas.py: GEMM rates
# interpolated by size, the measured memory bandwidth and launch time);
# the calibration travels inside the plan (the simulation is the same with
# the file gone) and gives the GPU memory; it changes the step against the
# datasheet's preset; bad calibrations are errors naming the problem. The
# fixture has the keys braid-gpu-bench writes.
#
# REQUIRES: numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import re
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "runtime", "Inputs"))
import braidtest  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "Inputs"))
from costformulas import cluster, dump_kernels, kernel_seconds  # noqa: E402

failures = 0

CALIBRATION = {
    "device": "NVIDIA H200 (test fixture)", "sm_count": 132, "memory_bytes": 150754820096,
    "gemm": [{"dtype": d, "m": n, "n": n, "k": n, "tflops": t} for d, n, t in (
        ("f32", 512, 21.0), ("f32", 8192, 51.0), ("tf32", 8192, 380.0),
        ("bf16", 512, 150.0), ("bf16", 1024, 420.0), ("bf16", 2048, 610.0),
        ("bf16", 4096, 700.0), ("bf16", 8192, 760.0))],
    "memory_bandwidth_gbs": {"copy": 4200.0, "kernel": 4000.0},
    "launch_us": {"host": 2.5, "device": 1.9},
}


def check(ok, what):
    global failures
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    failures += not ok


def near(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def simulate(plan, *args):
    report = plan + ".json"
    p = braidtest.run([braidtest.tool("braid-run"), "--backend=sim", plan, "--report", report,
                       *args], check=False)
    r = None
    if p.returncode == 0:
        with open(report) as f:
            r = json.load(f)
    return p, r


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # The fixture's keys are those braid-gpu-bench writes.
    with open(os.path.join(HERE, "..", "..", "runtime", "tools", "braid-gpu-bench.cu")) as f:
        bench = f.read()
    keys = ["device", "sm_count", "memory_bytes", "gemm", "memory_bandwidth_gbs", "launch_us",
            "dtype", "tflops", "copy", "kernel", "host"]
    check(all('\\"%s\\"' % k in bench for k in keys),
          "braid-gpu-bench writes the fixture's keys")

    calib = os.path.join(out, "calib.json")
    with open(calib, "w") as f:
        json.dump(CALIBRATION, f)
    c = cluster("h200-8")
    c["name"] = "h200-calibrated"
    c["calibration"] = "calib.json"
    cfile = os.path.join(out, "h200-calibrated.json")
    with open(cfile, "w") as f:
        json.dump(c, f)

    mlir = os.path.join(out, "gpt.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt2-small", "--dtype", "bf16",
                   "--layers", "2", "--batch", "2", "--world-size", "8", "-o", mlir])
    plan = os.path.join(out, "calibrated.plan")
    braidtest.run([braidtest.tool("braid-compile"), mlir, "-o", plan, "--cluster=" + cfile])
    p, r = simulate(plan)
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    costs = dump_kernels(dump)
    c["calibration"] = CALIBRATION
    compute = sum(kernel_seconds(c, f, b, d, prod) for f, b, d, prod in costs)
    check(r is not None and len(costs) == r["kernels"] and near(r["compute_time"], compute),
          "calibrated compute time %.9e s is the formula's sum over %d kernels (%.9e s)" % (
              r["compute_time"] if r else 0, len(costs), compute))
    sizes = sorted({round((int(f) / 2) ** (1 / 3)) for f, _, d, _ in costs if d == "bf16" and
                    int(f) > 1e9})
    check(sizes and sizes[0] < 4096 < sizes[-1],
          "the step's products span the table's sizes (cube sizes %d..%d)" % (
              sizes[0], sizes[-1]))
    check(r["gpu_memory_bytes"] == CALIBRATION["memory_bytes"],
          "the GPU memory is the calibration's")
    # The calibration travels in the plan.
    os.remove(calib)
    q, s = simulate(plan)
    check(s is not None and s["compute_time"] == r["compute_time"] and
          s["step_time"] == r["step_time"], "the plan carries its calibration")
    # Against the datasheet's preset.
    preset = os.path.join(out, "preset.plan")
    braidtest.run([braidtest.tool("braid-compile"), mlir, "-o", preset, "--cluster=h200-8"])
    _, u = simulate(preset)
    check(u["compute_time"] != r["compute_time"],
          "calibrated %.3f ms against the preset's %.3f ms of compute" % (
              r["compute_time"] * 1e3, u["compute_time"] * 1e3))

    # Bad calibrations.
    def bad(edit, expect, text=None):
        c2 = cluster("h200-8")
        cal = json.loads(json.dumps(CALIBRATION))
        c2["calibration"] = "bad-calib.json"
        if edit:
            edit(c2, cal)
        with open(os.path.join(out, "bad-calib.json"), "w") as f:
            f.write(text if text is not None else json.dumps(cal))
        path = os.path.join(out, "bad-cluster.json")
        with open(path, "w") as f:
            json.dump(c2, f)
        p, _ = simulate(preset, "--cluster=" + path)
        check(p.returncode == 1 and expect in p.stderr, "bad calibration: %s (%s)" % (
            expect, p.stderr.strip()[-160:]))

    bad(lambda c2, cal: c2.update(calibration="missing.json"), "cannot open calibration file")
    bad(None, "is not valid JSON", text="{nope")
    bad(lambda c2, cal: cal.pop("gemm"), 'calibration: missing "gemm"')
    bad(lambda c2, cal: cal["gemm"][0].update(dtype="fp8"), 'gemm[0]: unknown dtype "fp8"')
    bad(lambda c2, cal: cal["gemm"][3].update(tflops=-1), 'gemm[3]: "tflops" is -1')
    bad(lambda c2, cal: cal["launch_us"].update(extra=1), 'launch_us: unknown key "extra"')
    bad(lambda c2, cal: c2.update(calibration=3), "a calibration is a JSON object")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
