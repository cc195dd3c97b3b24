#!/usr/bin/env bash
# braid's main job on the bundled default model: builds braid, then parses and
# verifies the one-block GPT training step (examples/gpt.mlir) with braid-opt,
# prints its cost summary (flops, bytes, gradient bytes to reduce), and runs
# the overlap pipeline on it, printing the buckets and the scheduled step's
# shape; the scheduled IR is written to build/main/<model>.scheduled.mlir.
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
