#!/usr/bin/env bash
# braid's main job on the bundled default model: builds braid, then parses and
# verifies the one-block GPT training step (examples/gpt.mlir) with braid-opt,
# prints its cost summary (flops, bytes, gradient bytes to reduce), and runs
# the overlap pipeline on it, printing the buckets and the scheduled step's
# shape; the scheduled IR is written to build/main/<model>.scheduled.mlir.
# Then it simulates the step on one DGX H100 (h100-8) with the naive, DDP-style
# and braid schedules and draws braid's timeline (build/main/sim-braid.png).
# Then it trains: braid-compile turns the small GPT step (examples/gpt-tiny.mlir,
# 2 ranks) into an overlapped and a naive plan, `mpirun -np 2 braid-run
# --backend=cpu` trains each for 20 steps, printing the loss, and the final
# parameters of the two plans are compared.
#
# Usage: utils/main.sh [model.mlir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/examples/gpt.mlir}

bash "$root/utils/build.sh"
echo
echo "== braid-opt --braid-cost-summary $model"
"$root/build/bin/braid-opt" --braid-cost-summary "$model" -o /dev/null

out="$root/build/main/$(basename "$model" .mlir).scheduled.mlir"
mkdir -p "$(dirname "$out")"
echo
echo "== braid-opt --braid-overlap=report $model -o $out"
"$root/build/bin/braid-opt" --braid-overlap=report "$model" -o "$out" 2>&1 |
  sed -n 's/^.*remark: /  /p'
count() { grep -c "$1" "$out" || true; }
echo "  bucket starts             $(count 'braid.all_reduce_start')"
echo "  waits                     $(count '= braid.wait \|braid.wait %')"
echo "  cross-stream events       $(count 'braid.record_event')"
echo "  comm streams used         $(grep -o 'stream<comm, [0-9]*>' "$out" | sort -u | wc -l)"
echo "  verified by braid-verify-schedule"

main="$root/build/main"
cluster=h100-8
echo
echo "== simulated on $cluster: braid-compile --schedule=naive|ddp|braid, braid-run --backend=sim"
for s in naive ddp braid; do
  "$root/build/bin/braid-compile" "$model" --cluster=$cluster --schedule=$s \
    -o "$main/sim-$s.plan"
  trace=()
  [ $s = braid ] && trace=(--trace "$main/sim-braid.trace.json" --trace-ranks 2)
  "$root/build/bin/braid-run" --backend=sim --cluster=$cluster "$main/sim-$s.plan" \
    --report "$main/sim-$s.json" "${trace[@]}" > "$main/sim-$s.txt"
done
/usr/bin/python3 - "$main" <<'PY'
import json, os, sys
r = {s: json.load(open(os.path.join(sys.argv[1], "sim-%s.json" % s))) for s in ("naive", "ddp", "braid")}
print("  %-6s %12s %14s %10s %11s" % ("", "step ms", "exposed comm", "overlap", "efficiency"))
for s in ("naive", "ddp", "braid"):
    x = r[s]
    print("  %-6s %12.3f %14.3f %10.3f %11.3f" % (s, x["step_time"] * 1e3, x["exposed_comm"] * 1e3,
                                              x["overlap_fraction"], x["efficiency"]))
print("  braid vs naive %.3fx, vs ddp %.3fx" % (r["naive"]["step_time"] / r["braid"]["step_time"],
                                              r["ddp"]["step_time"] / r["braid"]["step_time"]))
PY
PYTHONPATH="$root/python" /usr/bin/python3 -m braid.timeline "$main/sim-braid.trace.json" \
  -o "$main/sim-braid.png" --ranks 2 --title "$(basename "$model") on $cluster, braid's schedule" |
  sed 's/^/  /'

tiny="$root/examples/gpt-tiny.mlir"
echo
echo "== braid-compile $tiny (overlapped and --no-overlap)"
# Small buckets, so that the small model's gradients fill several of them.
"$root/build/bin/braid-compile" "$tiny" -o "$main/gpt-tiny.plan" --report \
  --bucket-cap-mb=0.05 --first-bucket-cap-mb=0.01 2>&1 |
  sed -n 's/^.*remark: /  /p'
"$root/build/bin/braid-compile" "$tiny" --no-overlap -o "$main/gpt-tiny-naive.plan"
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
echo
echo "== ${mpirun[*]} braid-run --backend=cpu build/main/gpt-tiny.plan --steps 20"
"${mpirun[@]}" "$root/build/bin/braid-run" --backend=cpu "$main/gpt-tiny.plan" \
  --steps 20 --save "$main/gpt-tiny.npz"
echo
echo "== the same with the naive plan (no overlap)"
"${mpirun[@]}" "$root/build/bin/braid-run" --backend=cpu "$main/gpt-tiny-naive.plan" \
  --steps 20 --save "$main/gpt-tiny-naive.npz" | grep "^step" | tail -n 1
/usr/bin/python3 - "$main/gpt-tiny.npz" "$main/gpt-tiny-naive.npz" <<'PY'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
keys = [k for k in b.files if k != "loss"]
diff = max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30)) for k in keys)
print("  overlapped vs naive: %d parameter and state arrays, max relative difference %.2e"
      % (len(keys), diff))
sys.exit(0 if diff <= 1e-6 else 1)
PY
