#!/usr/bin/python3
"""A mutation fuzzer for the compiler's input (issue 18).

Mutates small steps (examples/gpt-tiny.mlir, and from braid.models a tiny
MLP and a tiny tensor-parallel GPT with its vocabulary split, all for 2
ranks) line by line and token by token,
runs each mutant through braid-compile (the whole pipeline, and with
--no-overlap and --sequence-parallel=false), and judges what comes back:

  - exit 0: a plan. It must load and simulate (braid-run --backend=sim), and
    a plan for few enough ranks must run one step on the cpu backend with
    --check-memory: a plan the verifier accepted that then fails the memory
    check is a finding;
  - exit 1: an error, which must name its place (FILE:LINE:COL) or say
    `braid-compile: error:`;
  - anything else (a signal, a sanitizer report, another status, a stack
    dump) is a crash, and a run past the time limit a hang.

Prints one line per finding with the mutant's file, and a summary line:
`fuzz-compiler: N mutants (A accepted, E errors): C crashes, H hangs, U
unlocated errors, M memory-check failures`. Exits 1 on any finding.

usage: /usr/bin/python3 utils/fuzz-compiler.py [--mutants N] [--seconds S]
       [--seed K] [--edits E] [--keep DIR]
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BRAID_BIN", os.path.join(ROOT, "build", "bin"))
# An error names its place in the input, or is the tool's own about its
# options or files (`<unknown>:0:` is not a place).
LOCATED = re.compile(r"^[^\s:]+\.mlir:\d+:\d+: error: |^braid-compile: error: ", re.M)
CRASH_SIGNS = ("Stack dump", "PLEASE submit", "AddressSanitizer", "runtime error:",
               "Segmentation fault", "crashed while")
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
TOKENS = ["0", "1", "-1", "2", "3", "64", "4294967296", "f32", "f16", "i64", "i1",
          "tensor<f32>", "[0]", "[1]", "[0, 1]", "sum", "max", "avg", "parameter",
          "optimizer_state", "batch", "loss", "split", "partial", "replicated", "blocks",
          "#braid.sharding<split 1>", "#braid.sharding<partial>",
          "#braid.sharding<split 0 blocks [32, 32]>", "transpose_b", "transpose_a"]


def mutate(lines, rng):
    """One random edit of a step's lines; the edit's description."""
    body = [i for i, l in enumerate(lines) if l.strip() and not l.startswith("//")]
    i = rng.choice(body)
    kind = rng.randrange(6)
    out = list(lines)
    if kind == 0:
        del out[i]
        return out, "line %d deleted" % (i + 1)
    if kind == 1:
        j = rng.choice(body)
        out[i], out[j] = out[j], out[i]
        return out, "lines %d and %d swapped" % (i + 1, j + 1)
    if kind == 2:
        out.insert(rng.choice(body), out[i])
        return out, "line %d duplicated" % (i + 1)
    numbers = list(NUMBER.finditer(out[i]))
    if kind == 3 and numbers:
        m = rng.choice(numbers)
        new = rng.choice(["0", "1", "3", str(int(m.group()) * 2), str(int(m.group()) + 1),
                          "9223372036854775807"])
        out[i] = out[i][:m.start()] + new + out[i][m.end():]
        return out, "line %d: %s -> %s" % (i + 1, m.group(), new)
    words = list(re.finditer(r"[\w.#%<>\[\]-]+", out[i]))
    if kind == 4 and words:
        m = rng.choice(words)
        new = rng.choice(TOKENS)
        out[i] = out[i][:m.start()] + new + out[i][m.end():]
        return out, "line %d: %r -> %r" % (i + 1, m.group(), new)
    # An op's name for another's, keeping its operands and types.
    ops = re.findall(r"braid\.\w+", "\n".join(lines))
    m = re.search(r"braid\.\w+", out[i])
    if m and ops:
        new = rng.choice(ops)
        out[i] = out[i][:m.start()] + new + out[i][m.end():]
        return out, "line %d: %s -> %s" % (i + 1, m.group(), new)
    del out[i]
    return out, "line %d deleted" % (i + 1)


def run(args, timeout):
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, errors="replace")
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, ""


def world_size(text):
    m = re.search(r"shard\.grid @\w+\(shape = ([\dx]+)\)", text)
    if not m:
        return 1
    n = 1
    for d in m.group(1).split("x"):
        n *= int(d)
    return n


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=0,
                        help="stop after this long (0: after --mutants)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--edits", type=int, default=1,
                        help="edits per mutant, each a random one of the kinds above")
    parser.add_argument("--keep", help="keep every mutant and plan here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="braid-fuzz-compiler-")
    os.makedirs(work, exist_ok=True)
    seeds = {}
    with open(os.path.join(ROOT, "examples", "gpt-tiny.mlir")) as f:
        seeds["gpt-tiny.mlir"] = f.read().splitlines()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for name, model in (("mlp.mlir", ["mlp", "--tiny", "--world-size", "2"]),
                        ("gpt-tp.mlir", ["gpt", "--tiny", "--world-size", "2", "--tp", "2",
                                         "--vocab-parallel"])):
        p = subprocess.run([sys.executable, "-m", "braid.models"] + model,
                           stdout=subprocess.PIPE, text=True, check=True, env=env)
        seeds[name] = p.stdout.splitlines()
    flags = [[], ["--no-overlap"], ["--sequence-parallel=false"]]
    counts = dict(mutants=0, accepted=0, errors=0, crashes=0, hangs=0, unlocated=0, memory=0)
    findings = []
    start = time.time()
    while counts["mutants"] < args.mutants or args.seconds:
        if args.seconds and time.time() - start > args.seconds:
            break
        name = rng.choice(sorted(seeds))
        lines, whats = seeds[name], []
        for _ in range(max(1, args.edits)):
            lines, what = mutate(lines, rng)
            whats.append(what)
        what = "; ".join(whats)
        k = counts["mutants"]
        counts["mutants"] += 1
        mlir = os.path.join(work, "m%d-%s" % (k, name))
        text = "\n".join(lines) + "\n"
        with open(mlir, "w") as f:
            f.write(text)
        plan = mlir + ".plan"
        extra = rng.choice(flags)
        code, out = run([os.path.join(BIN, "braid-compile"), mlir, "-o", plan] + extra, 60)
        where = "%s (%s, %s%s)" % (mlir, name, what, " " + " ".join(extra) if extra else "")
        if code is None:
            counts["hangs"] += 1
            findings.append("hang: braid-compile on " + where)
            continue
        if code not in (0, 1) or any(s in out for s in CRASH_SIGNS):
            counts["crashes"] += 1
            findings.append("crash (exit %s): braid-compile on %s\n    %s" % (
                code, where, out.strip().splitlines()[-1] if out.strip() else ""))
            continue
        if code == 1:
            counts["errors"] += 1
            if not LOCATED.search(out):
                counts["unlocated"] += 1
                findings.append("unlocated error: braid-compile on %s\n    %s" % (
                    where, out.strip().splitlines()[0] if out.strip() else "(nothing printed)"))
            elif os.path.exists(plan):
                counts["crashes"] += 1
                findings.append("plan written despite an error: " + where)
            continue
        counts["accepted"] += 1
        code, out = run([os.path.join(BIN, "braid-run"), "--backend=sim", plan], 60)
        if code != 0:
            findings.append("accepted plan fails the simulator (exit %s): %s\n    %s" % (
                code, where, out.strip().splitlines()[-1] if out.strip() else ""))
            counts["crashes"] += 1
            continue
        ranks = world_size(text)
        if ranks <= 4:
            cmd = (["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)]
                   if ranks > 1 else [])
            code, out = run(cmd + [os.path.join(BIN, "braid-run"), plan, "--steps", "1",
                                   "--check-memory", "--timeout", "30"], 90)
            if code is None:
                counts["hangs"] += 1
                findings.append("hang: braid-run --check-memory on " + where)
            elif code != 0 and ("memory check" in out or "check-memory" in out or
                                "reads" in out and "written" in out):
                counts["memory"] += 1
                findings.append("accepted plan fails the memory check: %s\n    %s" % (
                    where, out.strip().splitlines()[-1]))
            elif code not in (0, 1) or any(s in out for s in CRASH_SIGNS):
                counts["crashes"] += 1
                findings.append("crash (exit %s): braid-run on %s\n    %s" % (
                    code, where, out.strip().splitlines()[-1] if out.strip() else ""))
    for f in findings:
        print(f)
    print("fuzz-compiler: %(mutants)d mutants (%(accepted)d accepted, %(errors)d errors): "
          "%(crashes)d crashes, %(hangs)d hangs, %(unlocated)d unlocated errors, "
          "%(memory)d memory-check failures" % counts)
    if not findings and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
