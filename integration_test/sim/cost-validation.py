# The cost model against public measurements: utils/validate-cost-model.py
# --check passes (every point within its bound but the marked expected
# misses, which stay outside it), and the "Validation" table of
# docs/CostModel.md is exactly what the command prints, so the table is
# reproducible from the model. Also: v1 is the model the issue found wrong
# (the all-reduce across two nodes about 1.6x too slow, the single-node
# ring collectives 20-25% too fast), v2 corrects both; --calibration checks
# a braid-gpu-bench file against the formula; and the benchmarks'
# --cost-model v1 times a step by v1.
#
# RUN: env BRAID_BIN=%braid_bin %python %s

import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


command = [sys.executable, os.path.join(ROOT, "utils", "validate-cost-model.py")]
p = subprocess.run(command + ["--check", "--markdown"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
check(p.returncode == 0, "validate-cost-model.py --check: %s" % (p.stderr.strip() or "passes"))
table = p.stdout.strip()
with open(os.path.join(ROOT, "docs", "CostModel.md")) as f:
    doc = f.read()
m = re.search(r"<!-- validate-cost-model.py --markdown -->\n(.*?)\n<!-- end -->", doc, re.S)
check(m is not None, "docs/CostModel.md marks its validation table")
check(m is not None and m.group(1).strip() == table,
      "docs/CostModel.md's validation table is the command's output (rerun "
      "utils/validate-cost-model.py --markdown and paste it)")

rows = [r.split("|")[1:-1] for r in table.split("\n\n")[0].splitlines()[2:]]
check(len(rows) >= 15, "%d points" % len(rows))
by = {}
for r in rows:
    cells = [c.strip() for c in r]
    by.setdefault((cells[1], cells[3], cells[4]), []).append(cells)
two = by.get(("2 x 8 H100", "all_reduce", "peak (8 GiB)"), [])
check(len(two) == 1 and float(two[0][9]) > 1.5 and abs(float(two[0][8]) - 1) < 0.05,
      "two nodes' all-reduce: v1 more than 1.5x the measured time, v2 within 5%%: %s" % two)
ring = [c for c in by.get(("h100-8", "all_gather", "peak (8 GiB)"), [])
        + by.get(("h100-8", "reduce_scatter", "peak (8 GiB)"), [])]
check(len(ring) == 3 and all(0.75 <= float(c[9]) <= 0.85 and abs(float(c[8]) - 1) < 0.06
                             for c in ring),
      "one node's ring collectives: v1 15-25%% too fast, v2 within 6%%: %s"
      % [(c[3], c[8], c[9]) for c in ring])
# The GEMM table: the measured H200 product within 15%, and v2 below v1's
# rate by what the SMs' pipeline fill costs.
parts = table.split("\n\n")
gemm = [r.split("|")[1:-1] for r in parts[1].splitlines()[2:]]
check(len(gemm) >= 1 and all(c.strip() in ("yes",) for g in gemm for c in g[8:9]),
      "every measured product within its bound: %s" % [(g[3], g[6]) for g in gemm])
# The memory-bound table: the measured copies within 15%.
memory = [r.split("|")[1:-1] for r in parts[2].splitlines()[2:]] if len(parts) > 2 else []
check(len(memory) >= 2 and all(m[6].strip() == "yes" for m in memory),
      "every measured memory bandwidth within its bound: %s" % [(m[1], m[5]) for m in memory])

# --calibration: a lent GPU's braid-gpu-bench file, each product a point,
# timed by the uncalibrated model (checked against costformulas.py, written
# independently).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from costformulas import cluster, kernel_seconds  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as out:
    cal = os.path.join(out, "calibration.json")
    gemms = [("bf16", 512, 60.0), ("bf16", 2048, 600.0), ("f32", 1024, 40.0), ("tf32", 1024, 200.0)]
    with open(cal, "w") as f:
        json.dump({"device": "NVIDIA H200 (test fixture)", "sm_count": 132,
                   "memory_bytes": 150754820096,
                   "gemm": [{"dtype": d, "m": n, "n": n, "k": n, "tflops": t} for d, n, t in gemms],
                   "memory_bandwidth_gbs": {"copy": 4300.0, "kernel": 4000.0},
                   "launch_us": {"host": 2.5, "device": 2.0}}, f)
    p = subprocess.run(command + ["--calibration", cal, "--cluster", "h200-8"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in p.stdout.splitlines() if " on h200-8: v2 " in l]
    check(p.returncode == 0 and len(lines) == 3,
          "--calibration: a row for each f32 and bf16 product, tf32 left out: %s"
          % (p.stdout + p.stderr).strip())
    q = subprocess.run(command + ["--calibration", cal, "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(q.returncode == 1 and "point 1 (bf16 512x512x512 on h200-8): outside its bound"
          in q.stderr, "--check names a product outside its bound: %s" % q.stderr.strip())
    h200 = cluster("h200-8")
    for line, (dtype, n, tflops) in zip(lines, [g for g in gemms if g[0] != "tf32"]):
        nbytes = (2 if dtype == "bf16" else 4) * 3 * n * n
        model = kernel_seconds(h200, 2 * n ** 3, nbytes, dtype, (1, n, n, n))
        ratio = model / (2 * n ** 3 / (tflops * 1e12))
        got = float(line.split(" v2 ")[1].split(",")[0])
        check(abs(got - ratio) < 1e-3, "--calibration %s %d: v2 / measured %.3f, the formula's "
              "%.3f" % (dtype, n, got, ratio))
# --cost-model v1 on a benchmark: the same step with the presets' "nccl"
# and "gemm_tiles" dropped. Row 15 (gpt2-small on 256 GPUs, 256 tokens):
# v1 charges its small products less and its 32-node collectives more.
def row15(model):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "bench-overlap.py"),
                        "--cases", "15", "--cost-model", model], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    cells = [c.strip() for c in p.stdout.splitlines()[2].split("|")]
    return p.returncode, float(cells[5]), float(cells[6])


rc1, compute1, comm1 = row15("v1")
rc2, compute2, comm2 = row15("v2")
check(rc1 == 0 and rc2 == 0 and compute1 < compute2 and comm1 > comm2,
      "bench-overlap --cost-model v1: compute %.3f < v2's %.3f ms, communication %.3f > v2's "
      "%.3f ms" % (compute1, compute2, comm1, comm2))
sys.exit(1 if failures else 0)
