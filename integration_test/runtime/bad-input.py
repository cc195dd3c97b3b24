# Bad input to braid-run: each case must end with a message naming the
# problem and a non-zero exit on every rank, within the timeout, never a
# crash (a signal) or a hang.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402

failures = []


def expect_error(name, cmd, patterns, ranks=1, limit=30, every_rank=True):
    """Runs `cmd` (under mpirun for ranks > 1) and checks the exit code,
    the time taken and that stderr has each pattern (on every rank when
    `every_rank`)."""
    if ranks > 1 or ":" in cmd:
        cmd = braidtest.MPIRUN + ["-np", str(ranks)] + cmd
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        failures.append(name + ": hung past %d s" % limit)
        print("FAIL", name, "hung")
        return
    took = time.time() - start
    problems = []
    if p.returncode == 0:
        problems.append("exit code 0")
    if p.returncode < 0:
        problems.append("killed by signal %d (a crash)" % -p.returncode)
    if "Segmentation" in p.stderr or "Aborted (core" in p.stderr or "AddressSanitizer" in p.stderr:
        problems.append("crashed")
    for pattern in patterns:
        if pattern not in p.stderr:
            problems.append("no %r in stderr" % pattern)
    if every_rank and ranks > 1:
        for r in range(ranks):
            if "rank %d:" % r not in p.stderr:
                problems.append("rank %d printed no error" % r)
    status = "FAIL" if problems else "ok  "
    print("%s %s (exit %d, %.1f s)%s" % (status, name, p.returncode, took,
                                          ": " + "; ".join(problems) if problems else ""))
    if problems:
        print(p.stderr[-2000:])
        failures.append(name)
    return p


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    run = braidtest.tool("braid-run")
    mlir = os.path.join(out, "gpt2.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--tiny",
                   "--world-size", "2", "-o", mlir])
    plan = os.path.join(out, "gpt2.plan")
    braidtest.compile_step(mlir, plan)
    data = open(plan, "rb").read()

    def variant(name, payload):
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            f.write(payload)
        return path

    # Damaged plan files, on two ranks (every rank must report) and --dump.
    cases = [
        ("truncated header", data[:20], ["shorter than a plan header"]),
        ("truncated payload", data[:len(data) // 2], ["truncated?"]),
        ("corrupted byte", data[:200] + bytes([data[200] ^ 0x40]) + data[201:],
         ["checksum mismatch"]),
        ("wrong version", data[:8] + struct.pack("<I", 99) + data[12:],
         ["plan format version 99", "reads version 6"]),
        ("not a plan", b"hello, this is not a plan file at all" * 4,
         ["bad magic number"]),
        ("empty file", b"", ["shorter than a plan header"]),
    ]
    for name, payload, patterns in cases:
        path = variant(name.replace(" ", "-") + ".plan", payload)
        expect_error("plan: " + name, [run, path, "--steps", "1"], patterns, ranks=2)
        expect_error("plan --dump: " + name, [run, "--dump", path], patterns)
    expect_error("plan: missing file", [run, os.path.join(out, "nope.plan")],
                 ["cannot open plan file"])
    # Not a regular file: read forever (/dev/zero, a FIFO nobody writes) or
    # failing late; each refused by what it is, by name (issue 48).
    fifo = os.path.join(out, "fifo.plan")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    for path, what in (("/dev/zero", "a device"), (out, "a directory"), (fifo, "a FIFO")):
        expect_error("plan --dump: %s" % what, [run, "--dump", path],
                     ["'%s' is %s, not a plan file" % (path, what)], limit=10)
        expect_error("plan: %s" % what, [run, path], ["'%s' is %s, not a plan file" % (path, what)],
                     ranks=2, limit=20)

    # The same on two ranks: every rank reports and exits.
    expect_error("2 ranks: corrupted plan",
                 [run, variant("c2.plan", data[:300] + bytes([data[300] ^ 1]) + data[301:])],
                 ["checksum mismatch"], ranks=2)

    # A plan for 4 ranks run on 2.
    mlir4 = os.path.join(out, "gpt4.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--tiny",
                   "--world-size", "4", "-o", mlir4])
    plan4 = os.path.join(out, "gpt4.plan")
    braidtest.compile_step(mlir4, plan4)
    expect_error("plan for 4 ranks on 2", [run, plan4], ["compiled for 4 ranks, but runs on 2"],
                 ranks=2)

    # Parameter and data files.
    good = os.path.join(out, "good.npz")
    braidtest.braid_run(plan, ranks=2, args=["--steps", "0", "--save", good])
    params = dict(np.load(good))
    params.pop("loss", None)

    def npz(name, arrays):
        path = os.path.join(out, name)
        np.savez(path, **arrays)
        return path

    missing = dict(params)
    missing.pop("wte")
    expect_error("params: missing array", [run, plan, "--params", npz("missing.npz", missing)],
                 ["has no array 'wte'"], ranks=2)
    wrong = dict(params)
    wrong["wpe"] = np.zeros((3, 3), np.float32)
    expect_error("params: wrong shape", [run, plan, "--params", npz("wrong.npz", wrong)],
                 ["'wpe' has shape (3, 3)"], ranks=2)
    extra = dict(params)
    extra["fc9.weight"] = np.zeros(3, np.float32)
    expect_error("params: unknown array", [run, plan, "--params", npz("extra.npz", extra)],
                 ["'fc9.weight', which is not a parameter"], ranks=2)
    ints = dict(params)
    ints["wte"] = params["wte"].astype(np.int64)
    expect_error("params: wrong dtype", [run, plan, "--params", npz("ints.npz", ints)],
                 ["dtype '<i8'"], ranks=2)
    # Same width, other kind: the bits of an int32 are not a float32 (nor
    # a float64's an int64); each is refused by its dtype, not converted or
    # reinterpreted.
    same_width = dict(params)
    same_width["wte"] = params["wte"].astype(np.int32)
    expect_error("params: int32 into a float32 parameter",
                 [run, plan, "--params", npz("int32.npz", same_width)],
                 ["'wte' has dtype '<i4', but the plan holds f32"], ranks=2)
    # AdamW's step count is the steps taken: a negative, fractional or NaN
    # one trained on with a wrong bias correction (issue 48).
    for value in (-5.0, 2.5, float("nan")):
        bad_step = dict(params)
        bad_step["step"] = np.array(value, np.float32)
        expect_error("params: step %s" % value,
                     [run, plan, "--params", npz("step.npz", bad_step)],
                     ["'step' is ", "not a step count (a whole number of steps taken, 0 to 2^24)"],
                     ranks=2)
    rng = np.random.default_rng(5)
    expect_error("data: float64 into int64 tokens",
                 [run, plan, "--data", npz("f64.npz", {
                     "tokens": rng.integers(0, 64, (4, 32)).astype(np.float64),
                     "labels": rng.integers(0, 64, (4, 32))})],
                 ["'tokens' has dtype '<f8', but the plan holds i64"], ranks=2)
    # int64 data into the plan's int32: a value that does not fit is an
    # error naming the array and position, never wrapped (2^32 + 3 is not 3);
    # the extremes that fit load exactly.
    i32 = os.path.join(out, "ids32.mlir")
    with open(i32, "w") as f:
        f.write('func.func @ids(%ids: tensor<2x2xi32> {braid.role = #braid.role<batch "ids">})'
                ' -> tensor<4xi32> {\n'
                '  %0 = braid.reshape %ids : tensor<2x2xi32> -> tensor<4xi32>\n'
                '  return %0 : tensor<4xi32>\n}\n')
    i32plan = os.path.join(out, "ids32.plan")
    braidtest.compile_step(i32, i32plan)
    expect_error("data: int64 beyond int32",
                 [run, i32plan, "--data", npz("ids-big.npz", {
                     "ids": np.array([[1, 2], [2**32 + 3, 4]], np.int64)})],
                 ["'ids' holds 4294967299 at [1, 0], which does not fit the plan's "
                  "32-bit integers"])
    expect_error("data: int64 below int32",
                 [run, i32plan, "--data", npz("ids-small.npz", {
                     "ids": np.array([[1, -2**31 - 1], [3, 4]], np.int64)})],
                 ["'ids' holds -2147483649 at [0, 1]"])
    extremes = np.array([[-2**31, 2**31 - 1], [0, -1]], np.int64)
    saved = os.path.join(out, "ids-out.npz")
    braidtest.braid_run(i32plan, args=["--data", npz("ids-ok.npz", {"ids": extremes}),
                                        "--save", saved])
    got = np.load(saved)["result0"]
    if got.dtype != np.int32 or got.tolist() != extremes.reshape(4).tolist():
        failures.append("data: int32 extremes")
        print("FAIL data: int32 extremes loaded as %s %s" % (got.dtype, got.tolist()))
    else:
        print("ok   data: int32 extremes load exactly")
    expect_error("params: missing file", [run, plan, "--params", os.path.join(out, "none.npz")],
                 ["cannot read"], ranks=2)
    expect_error("params: not an npz", [run, plan, "--params", plan],
                 ["cannot read"], ranks=2)
    expect_error("data: wrong shape", [run, plan, "--data",
                                       npz("d.npz", {"tokens": np.zeros((5, 7), np.int64)})],
                 ["'tokens' has shape (5, 7)"], ranks=2)
    expect_error("data: token out of range",
                 [run, plan, "--data", npz("big.npz", {"tokens": np.full((2, 32), 999, np.int64),
                                                       "labels": np.zeros((2, 32), np.int64)})],
                 ["token id 999", "out of range"], ranks=2, every_rank=False)

    # Only rank 1 fails to start (its own --params, through mpirun's MPMD
    # syntax): rank 0 must not wait for it in a collective call.
    expect_error("params: missing on rank 1 only",
                 [run, plan, ":", "-np", "1", run, plan, "--params",
                  os.path.join(out, "none.npz")],
                 ["rank 1: cannot read", "rank 0: stopping: another rank failed to start"],
                 ranks=1, every_rank=False)

    # Bad options.
    expect_error("option: unknown backend", [run, plan, "--backend=tpu"], ["unknown backend"])
    expect_error("option: bad steps", [run, plan, "--steps", "x"],
                 ["--steps expects a decimal number, got 'x'"])
    # Hexadecimal and exponents are not counts (std::stod takes both: 0x10
    # ran 16 steps, issue 48).
    expect_error("option: hexadecimal steps", [run, plan, "--steps", "0x10"],
                 ["--steps expects a decimal number, got '0x10'"])
    expect_error("option: steps with an exponent", [run, plan, "--steps", "1e1"],
                 ["--steps expects a decimal integer, got '1e1'"])
    expect_error("option: bad timeout", [run, plan, "--timeout", "0"], ["--timeout must be positive"])
    # Numbers out of range are refused by name before anything runs (1e20
    # steps used to overflow and run nothing with exit 0; a timeout of
    # 1e10 s overflowed the deadline; seed 2^32 aliased seed 0).
    for option, text, expect in (
            ("--steps", "1e20", "--steps must be at most 1000000000000, but is 1e20"),
            ("--steps", "inf", "--steps expects a decimal number, got 'inf'"),
            ("--timeout", "1e10", "--timeout must be at most 1000000000 seconds"),
            ("--timeout", "inf", "--timeout expects a decimal number, got 'inf'"),
            ("--timeout", "nan", "--timeout expects a decimal number, got 'nan'"),
            ("--seed", "4294967296", "--seed must be at most 4294967295, but is 4294967296")):
        expect_error("option: %s %s" % (option, text), [run, plan, option, text], [expect])
    # Outputs are checked before the first step, not after the last; empty
    # file names, a fault on a rank that does not exist and a --data array
    # the plan has no input for are errors, not ignored.
    expect_error("save: a directory", [run, plan, "--steps", "3", "--save", out],
                 ["rank 0: cannot write --save file '%s': Is a directory" % out,
                  "rank 1: stopping: another rank failed to start"], ranks=2)
    expect_error("params: empty name", [run, plan, "--params", ""],
                 ["--params needs a file name, but is empty"])
    expect_error("fault: no such rank", [run, plan, "--inject-fault=kill:5:1"],
                 ["--inject-fault names rank 5 and step 1, but the run has ranks 0 to 1 and "
                  "steps 1 to 1"], ranks=2)
    rng = np.random.default_rng(9)
    expect_error("data: an array the plan has no input for",
                 [run, plan, "--data", npz("extra-data.npz", {
                     "tokens": rng.integers(0, 64, (4, 32)), "labels": rng.integers(0, 64, (4, 32)),
                     "label": rng.integers(0, 64, (4, 32))})],
                 ["has 'label', which is not a batch input of the plan"], ranks=2)

    # A rank that stops answering: the watchdog names it on the other rank.
    expect_error("rank 1 hangs in step 2",
                 [run, plan, "--steps", "5", "--timeout", "3", "--inject-fault=hang:1:2"],
                 ["did not complete within 3 s", "ranks that did not arrive: 1"],
                 ranks=2, limit=30, every_rank=False)
    # A rank that never starts (stopped before it reaches MPI_Init): the
    # others give up after --timeout instead of waiting in MPI_Init forever.
    expect_error("rank 1 never starts",
                 [run, plan, "--timeout", "3", ":", "-np", "1", "sh", "-c",
                  "kill -STOP $$; exec %s %s --timeout 3" % (run, plan)],
                 ["rank 0: startup did not complete within 3 s (--timeout), stuck in MPI_Init"],
                 ranks=1, limit=30, every_rank=False)
    # A rank that stops answering after its last step (issue 48, D2): the
    # --save gathers (a pipeline's stages sent to rank 0, a tensor-parallel
    # group's pieces gathered) run under the deadline too, which names the
    # phase and the rank that never sent; no file is left, not even a part.
    for kind, flags, stuck in (
            ("pipeline 2", ["--world-size", "2", "--pp", "2", "--micro-batches", "2"],
             "stuck saving: receiving stage 1's state from rank 1, which never sent it"),
            ("tensor parallel 2", ["--world-size", "2", "--tp", "2"],
             "stuck saving: making the tensor-parallel groups' communicators")):
        name = kind.replace(" ", "")
        end_mlir = os.path.join(out, name + ".mlir")
        braidtest.run([sys.executable, "-m", "braid.models", "gpt", "--tiny"] + flags +
                      ["-o", end_mlir])
        end_plan = os.path.join(out, name + ".plan")
        braidtest.compile_step(end_mlir, end_plan)
        saved = os.path.join(out, name + "-end.npz")
        if os.path.exists(saved):
            os.remove(saved)
        expect_error("%s: rank 1 hangs after the last step, --save" % kind,
                     [run, end_plan, "--steps", "2", "--timeout", "3", "--save", saved,
                      "--inject-fault=hang:1:end"],
                     ["rank 0: the end of the run did not complete within 3 s (--timeout), "
                      + stuck], ranks=2, limit=30, every_rank=False)
        leftovers = [f for f in os.listdir(out) if f.startswith(name + "-end.npz")]
        if leftovers:
            failures.append("%s: --save left %s after a rank hung" % (kind, leftovers))
            print("FAIL %s: --save left %s" % (kind, leftovers))
    # A rank killed mid-step: every rank stops (mpirun ends the job) and the
    # survivor says which step it was stopped in; the killed rank is rank 1,
    # by SIGKILL (mpirun's report), and no step after the first completed.
    p = expect_error("rank 1 killed in step 2",
                     [run, plan, "--steps", "5", "--timeout", "3", "--inject-fault=kill:1:2"],
                     ["braid-run: error: rank 0: terminated in step 2 (SIGTERM: mpirun stops "
                      "the job when another rank dies or fails)", "rank 1 with PID",
                      "signal 9"], ranks=2, limit=30, every_rank=False)
    if p is not None:
        steps = [l for l in p.stdout.splitlines() if l.startswith("step ")]
        if len(steps) != 1 or not steps[0].startswith("step 1/5"):
            failures.append("rank 1 killed in step 2: steps completed %s" % steps)
            print("FAIL rank 1 killed in step 2: the steps that completed: %s" % steps)

    print("bad-input: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
