#!/usr/bin/env python3
"""The cpu backend against PyTorch: the same model trained on the same data
by braid-run and by PyTorch DDP (gloo), same ranks, same per-rank batch,
same threads, one after the other several times in one run.

Usage: /usr/bin/python3 utils/bench-cpu.py [--ranks N] [--threads T]
           [--steps K] [--rounds R] [--cases tiny-mlp,gpt,gpt-mid]
           [--torch-python PY] [--no-profile]

For each case it prints each side's median step time (over steps 2..K of a
run; the median of the rounds' medians) and braid / PyTorch, then each
round's figures. braid's time is braid-run's own median (rank 0's wall
time of a step, with the loss's all-reduce and printing); PyTorch's is
rank 0's wall time of zero_grad, forward, backward (DDP's bucketed
all-reduce), optimizer step and loss.item(). Then braid-run --profile's time per op for the largest case.

The cases: the tiny MLP of examples/pytorch/mlp.py (16 rows per rank), the
bundled GPT (examples/pytorch/gpt.py: width 64, 2 layers, sequence 32, 4
sequences per rank), and a mid-size GPT (width 256, 4 layers, 8 heads,
sequence 64, vocabulary 64, 8 sequences per rank), all exported with
braid.export.

PyTorch runs in the pinned torch 2.x environment of the test command
(utils/setup-torch2.sh) unless --torch-python names another interpreter;
the export runs in this one. Both sides get T threads per rank:
torch.set_num_threads(T) and braid-run --threads T.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
BIN = os.environ.get("BRAID_BIN") or os.path.join(ROOT, "build", "bin")
EXAMPLES = os.path.join(ROOT, "examples", "pytorch")

CASES = {
    "tiny-mlp": ("tiny MLP (32-64-64-10, 16 rows)", "mlp.py", {}),
    "gpt": ("bundled GPT (w64, 2 layers, s32, 4 seqs)", "gpt.py", {}),
    "gpt-mid": ("mid GPT (w256, 4 layers, s64, 8 seqs)", "gpt.py",
                dict(width=256, layers=4, heads=8, seq=64, batch_size=8)),
}


def load(case, ranks):
    """The spec of `case` for `ranks` data-parallel ranks."""
    import importlib.util
    _, file, kwargs = CASES[case]
    spec = importlib.util.spec_from_file_location("bench_" + case.replace("-", "_"),
                                                  os.path.join(EXAMPLES, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(data_parallel=ranks, **kwargs)


# --- PyTorch DDP (run in the torch interpreter: --torch-worker) -------------

def _torch_rank(rank, case, ranks, threads, steps, port, out):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    spec = load(case, ranks)
    model = torch.nn.parallel.DistributedDataParallel(spec["model"])
    # The optimizer was built over the spec's model: the same parameters.
    optimizer = spec["optimizer"]
    (inputs,), (targets,) = spec["global_batch"]
    rows = inputs.shape[0] // ranks
    x = inputs[rank * rows:(rank + 1) * rows]
    y = targets[rank * rows:(rank + 1) * rows]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = spec["loss_fn"](model(x), y)
        loss.backward()
        optimizer.step()
        loss.item()
        times.append(time.perf_counter() - start)
    if rank == 0:
        with open(out, "w") as f:
            f.write("\n".join("%.9f" % t for t in times))
    dist.barrier()
    dist.destroy_process_group()


def torch_worker(args):
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_torch_rank, args=(args.case, args.ranks, args.threads, args.steps, port,
                                args.out), nprocs=args.ranks, join=True)


# --- the benchmark ----------------------------------------------------------

def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode:
        sys.exit("bench-cpu: command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    return p


def mpirun(ranks):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-np", str(ranks)]


def braid_step_ms(work, case, args, profile=False):
    """braid-run's median step time (ms), and its output."""
    prefix = os.path.join(work, case)
    cmd = mpirun(args.ranks) + [os.path.join(BIN, "braid-run"), prefix + ".plan",
                                "--steps", str(args.steps), "--params", prefix + ".npz",
                                "--data", prefix + ".batch.npz", "--threads",
                                str(args.threads)]
    if profile:
        cmd.append("--profile")
    out = run(cmd).stdout
    m = re.search(r"then median ([0-9.]+) ms", out)
    if not m:
        sys.exit("bench-cpu: no median in braid-run's output:\n" + out)
    return float(m.group(1)), out


def torch_step_ms(work, case, args):
    out = os.path.join(work, case + ".torch.txt")
    cmd = [args.torch_python, os.path.abspath(__file__), "--torch-worker", "--case", case,
           "--ranks", str(args.ranks), "--threads", str(args.threads), "--steps",
           str(args.steps), "--out", out]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               OMP_NUM_THREADS=str(args.threads))
    # gloo's rendezvous on a port probed free just before can lose it to
    # another process (a rank then aborts): start such a run again, twice.
    for attempt in range(3):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
        if p.returncode == 0:
            break
        if attempt == 2:
            sys.exit("bench-cpu: PyTorch DDP failed 3 times (%d): %s\n%s%s" % (
                p.returncode, " ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
        print("bench-cpu: PyTorch DDP exited with %d; starting it again" % p.returncode,
              file=sys.stderr)
    with open(out) as f:
        times = [float(line) for line in f if line.strip()]
    return statistics.median(times[1:]) * 1e3


def torch2_python():
    p = run(["bash", os.path.join(ROOT, "utils", "setup-torch2.sh")])
    return p.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="threads per rank, both sides")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--torch-python", help="the interpreter PyTorch DDP runs in")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    cases = args.cases.split(",")
    for c in cases:
        if c not in CASES:
            sys.exit("bench-cpu: unknown case '%s' (cases: %s)" % (c, ", ".join(CASES)))
    if args.ranks < 1 or args.threads < 1 or args.steps < 3 or args.rounds < 1:
        sys.exit("bench-cpu: --ranks, --threads and --rounds must be positive, --steps 3 or more")
    if not args.torch_python:
        args.torch_python = torch2_python()
    torch_version = run([args.torch_python, "-c", "import torch; print(torch.__version__)"]
                        ).stdout.strip()

    import braid
    work = tempfile.mkdtemp(prefix="bench-cpu-")
    try:
        for case in cases:
            spec = load(case, args.ranks)
            prefix = os.path.join(work, case)
            braid.export(spec["model"], spec["example_inputs"], spec["example_targets"],
                         spec["loss_fn"], spec["optimizer"], args.ranks, output=prefix,
                         global_batch=spec.get("global_batch"))
            run([os.path.join(BIN, "braid-compile"), prefix + ".mlir", "-o", prefix + ".plan"])

        print("bench-cpu: %d ranks x %d thread%s, %d steps a run (median of steps 2-%d), "
              "%d rounds alternating braid-run and PyTorch %s DDP (gloo)" % (
                  args.ranks, args.threads, "" if args.threads == 1 else "s", args.steps,
                  args.steps, args.rounds, torch_version))
        print("%-42s %10s %12s %14s" % ("case", "braid ms", "PyTorch ms", "braid/PyTorch"))
        rows = {}
        for case in cases:
            braid_ms, torch_ms = [], []
            for _ in range(args.rounds):
                braid_ms.append(braid_step_ms(work, case, args)[0])
                torch_ms.append(torch_step_ms(work, case, args))
            b, t = statistics.median(braid_ms), statistics.median(torch_ms)
            rows[case] = (b, t)
            print("%-42s %10.3f %12.3f %14.3f" % (CASES[case][0], b, t, b / t))
            if args.rounds > 1:
                print("  rounds: braid %s; PyTorch %s" % (
                    " ".join("%.4g" % x for x in braid_ms),
                    " ".join("%.4g" % x for x in torch_ms)))
            sys.stdout.flush()
        if not args.no_profile:
            case = cases[-1]
            print("\nbraid-run --profile, %s:" % CASES[case][0])
            print(braid_step_ms(work, case, args, profile=True)[1].split("\n", args.steps)[-1]
                  .strip())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
