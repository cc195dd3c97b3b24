#!/usr/bin/python3
"""Sequence parallelism's memory and communication, measured from the memory
plan of a GPT-2-medium-sized layer (s = 1024 tokens, b = 1, h = 1024,
a = 16 heads, f32) at tensor-parallel t = 1, 2, 4, 8, with and without
braid-sequence-parallel (with Megatron's re-gathers, --regather=true).

"Kept for backward": the bytes of the values the forward makes (results in
the memory-planned IR before the loss) that the backward reads (a use after
it), per rank; per layer as the difference of a 2-layer and a 1-layer step.
Korthikanti et al. 2022 count, per layer, sbh(10 + 24/t + 5as/(ht)) bytes
without and sbh(34/t + 5as/(ht)) with sequence parallelism, for fp16 with
dropout masks and attention written out (the [s, s] scores kept). The
steps here are braid.models' with `--attention unfused` for that reason
(the fused braid.attention keeps no [s, s] tensor: the as/(ht) term below
is then absent). braid's GPT has no dropout and keeps f32; the same count for
it, in elements, is sbh(4 + 12/t + as/(ht)) + 4sb without (the layer norms'
inputs and outputs, 4 sbh, and their statistics, 4 sb, on every rank; q, k,
v, the attention output, the MLP's two hidden tensors, 12 sbh, and the
attention probabilities, as^2b, split) and the whole divided by t with
sequence parallelism. The command prints both and checks braid's count
against the measurement (within 1%), that sequence parallelism divides what
a rank keeps by t (within 1%), and how the bytes sent over the
tensor-parallel axis compare: the reduce-scatters and all-gathers that
replace the all-reduces send what they sent; the backward's all-gathers of
saved inputs are extra, and the command prints them, with what the two cuts
of whole values to a rank's tokens send (nothing: local braid.shard_slice
copies; a reduce-scatter would show here). Exits 1 if a check fails.

usage: /usr/bin/python3 utils/sp-memory.py [--keep DIR]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BRAID_BIN") or os.path.join(ROOT, "build", "bin")
S, B, H, A = 1024, 1, 1024, 16
DTYPE_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i1": 1}

OP = re.compile(r'^\s*(%[\w]+)(?::(\d+))? = "([\w.]+)"\((.*?)\)')
TENSOR = re.compile(r"tensor<([^>]*)>")


def tensor_bytes(text):
    parts = text.split("x")
    n = 1
    for d in parts[:-1]:
        n *= int(d)
    return n * DTYPE_BYTES[parts[-1]]


def analyze(ir, tp):
    """(bytes kept for backward, {collective kind: bytes sent}) per rank."""
    defs, last_use, loss_at, ops = {}, {}, None, []
    for i, line in enumerate(ir.splitlines()):
        m = OP.match(line)
        if not m:
            continue
        name, count, op, operands = m.group(1), m.group(2), m.group(3), m.group(4)
        if op == "braid.cross_entropy" and loss_at is None:
            loss_at = i
        for use in re.findall(r"%[\w]+(?:#\d+)?", operands):
            last_use[use] = i
        result_types = line.rsplit("->", 1)[1] if "->" in line else ""
        types = TENSOR.findall(result_types)
        names = [name] if count is None else ["%s#%d" % (name, k) for k in range(int(count))]
        for k, n in enumerate(names):
            if k < len(types):
                defs[n] = (i, tensor_bytes(types[k]))
        operand_types = TENSOR.findall(line.rsplit(":", 1)[1].split("->")[0])
        ops.append((op, operand_types, types, line))
    kept = sum(b for n, (i, b) in defs.items()
               if i < loss_at and last_use.get(n, -1) > loss_at)
    sent = {}
    for op, ins, outs, line in ops:
        if "grid_axes = array<i16: 1>" not in line and "grid_axes = [1]" not in line:
            continue
        kind = op.replace("braid.", "").replace("_start", "")
        if kind == "reduce_scatter" and "reduction = 2 : i32" in line:
            kind = "scatter (max)"  # ReductionKind::Max, in generic form
        if kind == "all_reduce":
            b = 2 * (tp - 1) / tp * sum(tensor_bytes(t) for t in ins)
        elif kind in ("reduce_scatter", "scatter (max)"):
            b = (tp - 1) / tp * sum(tensor_bytes(t) for t in ins)
        elif kind == "all_gather":
            out = outs or TENSOR.findall(line.rsplit("->", 1)[1])
            b = (tp - 1) / tp * sum(tensor_bytes(t) for t in out)
        else:
            continue
        sent[kind] = sent.get(kind, 0) + b
    return kept, sent


def measure(work, tp, sp, layers):
    mlir = os.path.join(work, "gpt-tp%d-l%d.mlir" % (tp, layers))
    subprocess.run([sys.executable, "-m", "braid.models", "gpt2-medium", "--world-size", str(tp),
                    "--tp", str(tp), "--layers", str(layers), "--batch", str(B),
                    "--attention", "unfused", "-o", mlir],
                   check=True, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    # Megatron's sequence parallelism, which gathers the saved layer-norm
    # outputs again in the backward (what the count above assumes);
    # braid-compile's --regather=auto keeps the gathered copies where they fit.
    flags = ["--regather=true"] if sp else ["--sequence-parallel=false"]
    p = subprocess.run([os.path.join(BIN, "braid-compile"), mlir, "--emit=mlir",
                        "--mlir-print-op-generic", "-o", "-"] + flags,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit("sp-memory: braid-compile failed:\n" + p.stderr)
    return analyze(p.stdout, tp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="keep the generated steps in this directory")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="braid-sp-memory-")
    os.makedirs(work, exist_ok=True)
    sbh = S * B * H
    failures = []
    one = None
    print("| t | kept/layer MiB, tp | braid's count | kept/layer MiB, tp + sp | tp + sp x t "
          "/ (t = 1) | Korthikanti sp/tp | braid sp/tp | sent/layer MiB: tp all-reduce | tp + sp "
          "reduce-scatter + all-gather | of which backward re-gathers | sent by the step's cuts |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tp in (1, 2, 4, 8):
        row = {}
        for sp in (False, True):
            k2, s2 = measure(work, tp, sp, 2)
            k1, s1 = measure(work, tp, sp, 1)
            row[sp] = (k2 - k1, {k: s2.get(k, 0) - s1.get(k, 0) for k in set(s1) | set(s2)},
                       s1)
        kept_tp, kept_sp = row[False][0], row[True][0]
        if one is None:
            one = kept_tp
        count = 4 * (4 * sbh + 4 * S * B + (12 * sbh + A * S * S * B) / tp)
        korthikanti = (34 / tp + 5 * A * S / (H * tp)) / (10 + 24 / tp + 5 * A * S / (H * tp))
        ar = row[False][1].get("all_reduce", 0)
        rs, ag = row[True][1].get("reduce_scatter", 0), row[True][1].get("all_gather", 0)
        cuts = row[True][2].get("scatter (max)", 0)
        mib = lambda x: "%.2f" % (x / 2**20)  # noqa: E731
        print("| %d | %s | %s | %s | %.4f | %.3f | %.3f | %s | %s | %s | %s |" % (
            tp, mib(kept_tp), mib(count), mib(kept_sp), kept_sp * tp / one, korthikanti,
            kept_sp / kept_tp, mib(ar), mib(rs + ag), mib(ag - rs), mib(cuts)))
        if abs(kept_tp - count) > 0.01 * count:
            failures.append("t = %d: kept %d bytes per layer, braid's count %d" % (
                tp, kept_tp, count))
        if abs(kept_sp * tp - one) > 0.01 * one:
            failures.append("t = %d: sequence parallelism keeps %d bytes, %.4f of 1/t of t = 1" % (
                tp, kept_sp, kept_sp * tp / one))
        # Each all-reduce became a reduce-scatter and an all-gather of the same bytes.
        if abs(2 * rs - ar) > 0.005 * max(ar, 1):
            failures.append("t = %d: the reduce-scatters send %d bytes, the all-reduces they "
                            "replace %d (half is the reduce-scatter's share)" % (tp, rs, ar))
    print()
    print("Checks: braid's count matches the measurement, sequence parallelism divides what a "
          "rank keeps by t, and its reduce-scatters and all-gathers send what the all-reduces "
          "did (the re-gathers of saved inputs are the extra): %s" % (
              "hold" if not failures else "FAIL"))
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
