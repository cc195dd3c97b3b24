#!/usr/bin/env bash
# braid's main job: the whole journey of a PyTorch model, on the bundled
# default model, a small GPT (examples/pytorch/gpt.py: 2 blocks, width 64,
# 4 heads, vocabulary 64, sequence 32, tied embedding, AdamW):
#   1. build braid (utils/build.sh installs the Debian packages it lacks);
#   2. export its training step with braid.export (AOT autograd), once for
#      64 ranks (the cluster below) and once for 2 (the CPU run);
#   3. compile it for h100-8x8 (8 DGX H100 nodes) and print the schedule:
#      streams, gradient buckets with their sizes and parameters;
#   4. simulate the step on h100-8x8 with the naive, DDP-style and braid
#      schedules, print the comparison, and draw braid's timeline to
#      build/main/timeline.png;
#   5. make a character-level text corpus of the fortune cookies Debian
#      ships (the fortunes package: 43 files, 2.6 MB; the last 10% of each
#      held out), train 20 steps on it on 2 CPU ranks (mpirun -np 2
#      braid-run --backend=cpu), printing the loss of every step, and
#      compare with PyTorch's own training on the same windows (float64 and
#      float32): the job fails if braid is farther from float64 PyTorch
#      than the tolerance;
#   6. train 2000 steps on the text, evaluating on the held-out tokens
#      every 200 (the evaluation program braid.export --evaluation wrote),
#      and draw the train and eval loss to build/main/loss.png: the job
#      fails if the eval loss does not fall.
# Everything it writes goes to build/main/ (or $BRAID_MAIN_OUT).
#
# Usage: utils/main.sh [SPEC]   SPEC as for `python3 -m braid.export`
#                               (default examples/pytorch/gpt.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
spec=${1:-$root/examples/pytorch/gpt.py}
main=${BRAID_MAIN_OUT:-$root/build/main}
shown=${main#"$root"/} # as the commands below print it
bin="$root/build/bin"
# Debian's python3, which sees Debian's torch 1.13 and numpy; BRAID_PYTHON
# names another with torch and numpy (the torch 2.x venv of
# utils/setup-torch2.sh).
python=${BRAID_PYTHON:-/usr/bin/python3}
export PYTHONPATH="$root/python"
cluster=h100-8x8
ranks=64
start=$SECONDS
stage() { echo; echo "== [$1/6] $2   (at $((SECONDS - start)) s)"; }

stage 1 "build braid"
bash "$root/utils/build.sh"
mkdir -p "$main"

stage 2 "export $(basename "$spec") with braid.export (PyTorch -> braid IR)"
echo "\$ $python -m braid.export $spec -o $shown/step64 --world-size $ranks"
$python -m braid.export "$spec" -o "$main/step64" --world-size $ranks | sed 's/^/  /'
echo "\$ $python -m braid.export $spec -o $shown/step2 --world-size 2 --evaluation"
$python -m braid.export "$spec" -o "$main/step2" --world-size 2 --evaluation | sed 's/^/  /'

stage 3 "compile for $cluster and print the schedule"
echo "\$ braid-compile $shown/step64.mlir --cluster=$cluster --emit=mlir -o $shown/step64.scheduled.mlir --schedule-report=$shown/step64.schedule.json"
"$bin/braid-compile" "$main/step64.mlir" --cluster=$cluster --report --emit=mlir \
  -o "$main/step64.scheduled.mlir" --schedule-report="$main/step64.schedule.json" \
  2>&1 | sed -n 's/^.*remark: /  /p'
$python -m braid.schedule "$main/step64.schedule.json" | sed 's/^/  /'

stage 4 "simulate on $cluster: naive, ddp and braid schedules"
for s in naive ddp braid; do
  "$bin/braid-compile" "$main/step64.mlir" --cluster=$cluster --schedule=$s \
    -o "$main/sim-$s.plan"
  trace=()
  [ $s = braid ] && trace=(--trace "$main/sim-braid.trace.json" --trace-ranks 2)
  "$bin/braid-run" --backend=sim --cluster=$cluster "$main/sim-$s.plan" \
    --report "$main/sim-$s.json" "${trace[@]}" > "$main/sim-$s.txt"
done
$python - "$main" <<'PY'
import json, os, sys
r = {s: json.load(open(os.path.join(sys.argv[1], "sim-%s.json" % s))) for s in ("naive", "ddp", "braid")}
print("  %-6s %10s %10s %14s %9s %11s" % ("", "step us", "comm us", "exposed comm", "overlap",
                                          "efficiency"))
for s in ("naive", "ddp", "braid"):
    x = r[s]
    print("  %-6s %10.1f %10.1f %14.1f %9.3f %11.3f" % (
        s, x["step_time"] * 1e6, x["comm_time"] * 1e6, x["exposed_comm"] * 1e6,
        x["overlap_fraction"], x["efficiency"]))
print("  braid vs naive %.3fx, vs ddp %.3fx" % (r["naive"]["step_time"] / r["braid"]["step_time"],
                                              r["ddp"]["step_time"] / r["braid"]["step_time"]))
PY
$python -m braid.timeline "$main/sim-braid.trace.json" -o "$main/timeline.png" --ranks 2 \
  --title "$(basename "$spec" .py), $ranks ranks on $cluster, braid's schedule" | sed 's/^/  /'

stage 5 "train 20 steps on text on 2 CPU ranks, checked against PyTorch"
# The text: every fortune file (not the .dat indexes), a character a token.
fortunes=/usr/share/games/fortunes
mapfile -t texts < <(find "$fortunes" -maxdepth 1 -type f ! -name '*.dat' | sort)
echo "\$ $python examples/data/prepare_chars.py $fortunes/{art,...,zippy} $shown/text"
$python "$root/examples/data/prepare_chars.py" "${texts[@]}" "$main/text" | sed 's/^/  /'
echo "\$ braid-compile $shown/step2.mlir -o $shown/step2.plan"
"$bin/braid-compile" "$main/step2.mlir" -o "$main/step2.plan"
echo "\$ mpirun -np 2 braid-run --backend=cpu $shown/step2.plan --params $shown/step2.npz --data $shown/text.train.bin --steps 20 --save $shown/trained.npz"
mpirun --allow-run-as-root --oversubscribe -np 2 "$bin/braid-run" --backend=cpu \
  "$main/step2.plan" --params "$main/step2.npz" --data "$main/text.train.bin" \
  --steps 20 --save "$main/trained.npz" | tee "$main/train.txt" | sed -u 's/^/  /'
# PyTorch trains the same model on the same windows of the text, in float64
# and in float32; braid must be as close to float64 as float32 PyTorch is
# (braid.compare). A difference beyond that fails the main job.
echo "\$ $python -m braid.compare $(basename "$spec") --world-size 2 --losses $shown/train.txt --state $shown/trained.npz --data $shown/text.train.bin"
$python -m braid.compare "$spec" --world-size 2 --losses "$main/train.txt" \
  --state "$main/trained.npz" --data "$main/text.train.bin" | sed 's/^/  /'

stage 6 "train 2000 steps on text, evaluating on held-out text every 200"
echo "\$ mpirun -np 2 braid-run $shown/step2.plan --params $shown/step2.npz --data $shown/text.train.bin --steps 2000 --eval-data $shown/text.val.bin --eval-every 200 --eval-batches 16 --log-every 200 --metrics $shown/train.jsonl"
mpirun --allow-run-as-root --oversubscribe -np 2 "$bin/braid-run" --backend=cpu \
  "$main/step2.plan" --params "$main/step2.npz" --data "$main/text.train.bin" \
  --steps 2000 --eval-data "$main/text.val.bin" --eval-every 200 --eval-batches 16 \
  --log-every 200 --metrics "$main/train.jsonl" | grep -v '^step ' | sed -u 's/^/  /'
$python -m braid.curves "$main/train.jsonl" -o "$main/loss.png" \
  --title "$(basename "$spec" .py) on the fortunes text, 2 CPU ranks" | sed 's/^/  /'
# The held-out loss must fall: the model learns the text, not the batches.
$python - "$main/train.jsonl" <<'PY'
import json, sys
evals = [json.loads(l)["eval_loss"] for l in open(sys.argv[1]) if "eval_loss" in l]
if not (len(evals) >= 2 and evals[-1] < 0.8 * evals[0]):
    sys.exit("main job: the eval loss did not fall by a fifth: %s" % evals)
print("  eval loss %.4f before training -> %.4f after 2000 steps" % (evals[0], evals[-1]))
PY
echo
echo "done in $((SECONDS - start)) s; outputs in $shown/ (timeline.png, loss.png, step64.scheduled.mlir, sim-*.json, trained.npz, train.jsonl)"
