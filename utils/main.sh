#!/usr/bin/env bash
# braid's main job on the bundled default model: builds braid, then parses and
# verifies the one-block GPT training step (examples/gpt.mlir) with braid-opt
# and prints its cost summary (flops, bytes, gradient bytes to reduce).
#
# Usage: utils/main.sh [model.mlir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/examples/gpt.mlir}

bash "$root/utils/build.sh"
echo
echo "== braid-opt --braid-cost-summary $model"
"$root/build/bin/braid-opt" --braid-cost-summary "$model" -o /dev/null
