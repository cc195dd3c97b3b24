# A pipelined plan holds one program per stage, and each rank runs the
# program of its coordinate on the pipeline axis (docs/Pipeline.md). The
# same MLP step, written as two hand-made stage programs (stage 0: the
# first two layers, sending their activation and receiving its gradient;
# stage 1: the last layer and the loss), must train exactly as the one
# program of the whole step:
#
#   - pipeline 2 on 2 ranks against the whole step on 1 rank;
#   - data parallel 2 x pipeline 2 on 4 ranks (each stage all-reduces its
#     gradients over the data-parallel axis alone) against data parallel 2
#     on 2 ranks;
#   - gradient accumulation over two micro-batches, the stage programs in
#     GPipe's order and in 1F1B's (whose steady state is a braid.send_recv
#     on each stage: with a send and a receive it would deadlock), on 2
#     and on 4 ranks, against the accumulating whole step; the same stage
#     programs made by braid-pipeline (braid-compile --pipeline-axis) from
#     the step of one micro-batch, in each schedule (zb-h1 too, whose
#     split backward changes no kernel, only their order; not the
#     interleaved one, whose 2 x 2 stages need more than these 3 layers);
#   - a ring of three send-receives with two peers each;
#   - a residual that skips a rank under the interleaved schedule, passed
#     on by the rank between.
#
# Judged: the losses of every step and every array --save writes (gathered
# from the stages to rank 0) within 1e-6 relative (the same kernels in the
# same order: equal in practice); the plan's dump names the stages and the
# program of each rank; the simulator plays it; braid-run rejects what a
# pipelined plan does not allow with one clear error each.
#
# REQUIRES: numpy, mpi
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import braidtest  # noqa: E402
from braid.ir import PIPELINE_SCHEDULES  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


B, D, H, C = 8, 16, 32, 10  # batch per replica, input, hidden, classes


def role(kind, name):
    return '{braid.role = #braid.role<%s "%s">}' % (kind, name)


def t(*shape, dtype="f32"):
    return "tensor<%sx%s>" % ("x".join(map(str, shape)), dtype) if shape else "tensor<%s>" % dtype


class Body:
    """A function body under construction, with the data-parallel gradient
    all-reduce when there is more than one replica (or always: the step
    braid-pipeline splits, as the exporter writes it)."""

    def __init__(self, dp, always_reduce=False):
        self.dp, self.lines, self.n = (2 if always_reduce else dp), [], 0

    def op(self, text):
        self.n += 1
        name = "%%v%d" % self.n
        self.lines.append("  %s = %s" % (name, text))
        return name

    def raw(self, text):
        self.lines.append("  " + text)

    def grad(self, g, shape, param):
        if self.dp == 1:
            return g
        return self.op('braid.all_reduce %s on @world grid_axes = [0] reduction = avg '
                       'grad_of = ["%s"] : %s' % (g, param, t(*shape)))

    def linear_backward(self, dy, x, w, xshape, wshape, param, need_dx=True, reduce=True):
        """dy @ w (the input's gradient) and dy^T @ x (the weight's)."""
        rows = xshape[0]
        gw = self.op("braid.matmul %s, %s {transpose_a} : %s, %s -> %s" % (
            dy, x, t(rows, wshape[0]), t(*xshape), t(*wshape)))
        if reduce:
            gw = self.grad(gw, wshape, param)
        dx = None
        if need_dx:
            dx = self.op("braid.matmul %s, %s : %s, %s -> %s" % (
                dy, w, t(rows, wshape[0]), t(*wshape), t(*xshape)))
        return gw, dx

    def sgd(self, w, g, m, shape):
        self.n += 1
        a, b = "%%w%d" % self.n, "%%m%d" % self.n
        self.lines.append("  %s, %s = braid.sgd %s, %s, %s lr = 1.000000e-01 momentum = "
                          "9.000000e-01 weight_decay = 0.000000e+00 : %s" % (a, b, w, g, m, t(*shape)))
        return a, b


PARAMS = [("fc1.weight", (H, D)), ("fc2.weight", (H, H)), ("fc3.weight", (C, H))]


def signature(names, batch, extra_results=()):
    args = ["%%%s: %s %s" % (n, t(*s, dtype=d), role("batch", n)) for n, s, d in batch]
    results = []
    for p, shape in PARAMS:
        if p not in names:
            continue
        v = p.replace(".", "_")
        args.append("%%%s: %s %s" % (v, t(*shape), role("parameter", p)))
        args.append("%%%s_m: %s %s" % (v, t(*shape), role("optimizer_state", p + ".momentum")))
        results += ["%s %s" % (t(*shape), role("parameter", p)),
                    "%s %s" % (t(*shape), role("optimizer_state", p + ".momentum"))]
    results += list(extra_results)
    return ",\n    ".join(args), ",\n    ".join(results)


def forward1(f, x="%x", rows=B):
    h1 = f.op("braid.matmul %s, %%fc1_weight {transpose_b} : %s, %s -> %s" % (
        x, t(rows, D), t(H, D), t(rows, H)))
    a1 = f.op("braid.relu %s : %s" % (h1, t(rows, H)))
    h2 = f.op("braid.matmul %s, %%fc2_weight {transpose_b} : %s, %s -> %s" % (
        a1, t(rows, H), t(H, H), t(rows, H)))
    a2 = f.op("braid.relu %s : %s" % (h2, t(rows, H)))
    return a1, a2


def backward1(f, a1, a2, da2, x="%x", rows=B, reduce=True):
    dh2 = f.op("braid.relu_backward %s, %s : %s" % (da2, a2, t(rows, H)))
    g2, da1 = f.linear_backward(dh2, a1, "%fc2_weight", (rows, H), (H, H), "fc2.weight",
                                reduce=reduce)
    dh1 = f.op("braid.relu_backward %s, %s : %s" % (da1, a1, t(rows, H)))
    g1, _ = f.linear_backward(dh1, x, "%fc1_weight", (rows, D), (H, D), "fc1.weight",
                              need_dx=False, reduce=reduce)
    return g1, g2


def loss_and_backward(f, a2, labels="%labels", rows=B, seed="1.000000e+00", reduce=True):
    logits = f.op("braid.matmul %s, %%fc3_weight {transpose_b} : %s, %s -> %s" % (
        a2, t(rows, H), t(C, H), t(rows, C)))
    loss = f.op("braid.cross_entropy %s, %s reduction = mean : %s, %s -> tensor<f32>" % (
        logits, labels, t(rows, C), t(rows, dtype="i64")))
    one = f.op("braid.constant dense<%s> : tensor<f32>" % seed)
    dlogits = f.op("braid.cross_entropy_backward %s, %s, %s reduction = mean : tensor<f32>, %s, %s" % (
        one, logits, labels, t(rows, C), t(rows, dtype="i64")))
    g3, da2 = f.linear_backward(dlogits, a2, "%fc3_weight", (rows, H), (C, H), "fc3.weight",
                                reduce=reduce)
    return loss, g3, da2


def returns(f, pairs, extra=()):
    values, types = [], []
    for w, m, shape in pairs:
        values += [w, m]
        types += [t(*shape), t(*shape)]
    for v, ty in extra:
        values.append(v)
        types.append(ty)
    f.raw("return %s : %s" % (", ".join(values), ", ".join(types)))


LOSS = ("tensor<f32> %s" % role("loss", "loss"),)


def whole_step(dp, rows=B, grid=None):
    """The whole step on `rows` rows per replica; `grid` (default: dp) is
    the grid's shape, a second axis for braid-pipeline, whose step all-reduces
    each gradient even on one replica."""
    f = Body(dp, always_reduce=grid is not None)
    a1, a2 = forward1(f, rows=rows)
    loss, g3, da2 = loss_and_backward(f, a2, rows=rows)
    g1, g2 = backward1(f, a1, a2, da2, rows=rows)
    ups = [f.sgd("%fc1_weight", g1, "%fc1_weight_m", (H, D)) + ((H, D),),
           f.sgd("%fc2_weight", g2, "%fc2_weight_m", (H, H)) + ((H, H),),
           f.sgd("%fc3_weight", g3, "%fc3_weight_m", (C, H)) + ((C, H),)]
    returns(f, ups, [(loss, "tensor<f32>")])
    args, results = signature({p for p, _ in PARAMS},
                              [("x", (rows, D), "f32"), ("labels", (rows,), "i64")], LOSS)
    return ("shard.grid @world(shape = %s)\n\nfunc.func @step(\n    %s)\n    -> (%s) {\n%s\n}\n" % (
        grid or dp, args, results, "\n".join(f.lines)))


def stage_attr(index):
    return "attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = %d>}" % index


def two_stages(dp, *stages):
    """The module of two stage programs, each (arguments, results, Body)."""
    funcs = ["func.func @stage%d(\n    %s)\n    -> (%s) %s {\n%s\n}\n" % (
        i, args, results, stage_attr(i), "\n".join(body.lines))
        for i, (args, results, body) in enumerate(stages)]
    return "shard.grid @world(shape = %dx2)\n\n" % dp + "\n".join(funcs)


def pipelined_step(dp):
    s0 = Body(dp)
    a1, a2 = forward1(s0)
    s0.raw("braid.send %s on @world grid_axes = [1] peer = 1 : %s" % (a2, t(B, H)))
    da2 = s0.op("braid.recv on @world grid_axes = [1] peer = 1 : %s" % t(B, H))
    g1, g2 = backward1(s0, a1, a2, da2)
    returns(s0, [s0.sgd("%fc1_weight", g1, "%fc1_weight_m", (H, D)) + ((H, D),),
                 s0.sgd("%fc2_weight", g2, "%fc2_weight_m", (H, H)) + ((H, H),)])
    args0, results0 = signature({"fc1.weight", "fc2.weight"}, [("x", (B, D), "f32")])

    s1 = Body(dp)
    a2 = s1.op("braid.recv on @world grid_axes = [1] peer = 0 : %s" % t(B, H))
    loss, g3, da2 = loss_and_backward(s1, a2)
    s1.raw("braid.send %s on @world grid_axes = [1] peer = 0 : %s" % (da2, t(B, H)))
    returns(s1, [s1.sgd("%fc3_weight", g3, "%fc3_weight_m", (C, H)) + ((C, H),)],
            [(loss, "tensor<f32>")])
    args1, results1 = signature({"fc3.weight"}, [("labels", (B,), "i64")], LOSS)
    return two_stages(dp, (args0, results0, s0), (args1, results1, s1))


M = 2  # micro-batches of the accumulating step
MB = B // M
HALF = "5.000000e-01"  # each micro-batch's share of the loss


def micro_batch(f, k, x=True, labels=True):
    """Micro-batch k's rows of the step's inputs (x, labels)."""
    return (f.op("braid.slice %%x offsets = [%d, 0] : %s -> %s" % (k * MB, t(B, D), t(MB, D)))
            if x else None,
            f.op("braid.slice %%labels offsets = [%d] : %s -> %s" % (
                k * MB, t(B, dtype="i64"), t(MB, dtype="i64"))) if labels else None)


def accumulate(f, grads, shape, param):
    g = grads[0]
    for more in grads[1:]:
        g = f.op("braid.add %s, %s : %s" % (g, more, t(*shape)))
    return f.grad(g, shape, param)


def mean_loss(f, losses):
    total = f.op("braid.add %s, %s : tensor<f32>" % tuple(losses))
    return f.op("braid.scale %s by %s : tensor<f32>" % (total, HALF))


def accumulating_step(dp):
    """The whole step over M micro-batches, their gradients summed (each
    micro-batch's loss weighted 1/M) before the data-parallel reduction."""
    f = Body(dp)
    losses, grads = [], {p: [] for p, _ in PARAMS}
    for k in range(M):
        x, labels = micro_batch(f, k)
        a1, a2 = forward1(f, x, MB)
        loss, g3, da2 = loss_and_backward(f, a2, labels, MB, HALF, reduce=False)
        g1, g2 = backward1(f, a1, a2, da2, x, MB, reduce=False)
        losses.append(loss)
        for p_, g in zip(("fc1.weight", "fc2.weight", "fc3.weight"), (g1, g2, g3)):
            grads[p_].append(g)
    ups = []
    for p_, shape in PARAMS:
        g = accumulate(f, grads[p_], shape, p_)
        v = "%" + p_.replace(".", "_")
        ups.append(f.sgd(v, g, v + "_m", shape) + (shape,))
    returns(f, ups, [(mean_loss(f, losses), "tensor<f32>")])
    args, results = signature({p for p, _ in PARAMS},
                              [("x", (B, D), "f32"), ("labels", (B,), "i64")], LOSS)
    return ("shard.grid @world(shape = %d)\n\nfunc.func @step(\n    %s)\n    -> (%s) {\n%s\n}\n" % (
        dp, args, results, "\n".join(f.lines)))


def accumulating_pipeline(dp, schedule):
    """The accumulating step on two stages, in GPipe's order (both
    forwards, then both backwards) or 1F1B's (stage 0's second forward
    sends its activation while it receives the first gradient, in one
    send-receive; stage 1 sends that gradient back while it receives the
    second activation)."""
    send = "braid.send %s on @world grid_axes = [1] peer = %d : " + t(MB, H)
    recv = "braid.recv on @world grid_axes = [1] peer = %d : " + t(MB, H)
    pair = ("braid.send_recv %s on @world grid_axes = [1] send_peer = %d recv_peer = %d : "
            + t(MB, H) + " -> " + t(MB, H))

    s0 = Body(dp)
    fw, g = [], {"fc1.weight": [], "fc2.weight": []}

    def forward(k):
        x, _ = micro_batch(s0, k, labels=False)
        fw.append((x,) + forward1(s0, x, MB))

    def backward(k, da2):
        x, a1, a2 = fw[k]
        g1, g2 = backward1(s0, a1, a2, da2, x, MB, reduce=False)
        g["fc1.weight"].append(g1)
        g["fc2.weight"].append(g2)

    if schedule == "gpipe":
        for k in range(M):
            forward(k)
            s0.raw(send % (fw[k][2], 1))
        for k in range(M):
            backward(k, s0.op(recv % 1))
    else:
        forward(0)
        s0.raw(send % (fw[0][2], 1))
        forward(1)
        backward(0, s0.op(pair % (fw[1][2], 1, 1)))
        backward(1, s0.op(recv % 1))
    ups = []
    for p_, shape in PARAMS[:2]:
        acc = accumulate(s0, g[p_], shape, p_)
        v = "%" + p_.replace(".", "_")
        ups.append(s0.sgd(v, acc, v + "_m", shape) + (shape,))
    returns(s0, ups)
    args0, results0 = signature({"fc1.weight", "fc2.weight"}, [("x", (B, D), "f32")])

    s1 = Body(dp)
    losses, g3s = [], []

    def last(k, a2):
        _, labels = micro_batch(s1, k, x=False)
        loss, g3, da2 = loss_and_backward(s1, a2, labels, MB, HALF, reduce=False)
        losses.append(loss)
        g3s.append(g3)
        return da2

    if schedule == "gpipe":
        acts = [s1.op(recv % 0) for _ in range(M)]
        for k in range(M):
            s1.raw(send % (last(k, acts[k]), 0))
    else:
        da2 = last(0, s1.op(recv % 0))
        da2 = last(1, s1.op(pair % (da2, 0, 0)))
        s1.raw(send % (da2, 0))
    acc = accumulate(s1, g3s, (C, H), "fc3.weight")
    returns(s1, [s1.sgd("%fc3_weight", acc, "%fc3_weight_m", (C, H)) + ((C, H),)],
            [(mean_loss(s1, losses), "tensor<f32>")])
    args1, results1 = signature({"fc3.weight"}, [("labels", (B,), "i64")], LOSS)
    return two_stages(dp, (args0, results0, s0), (args1, results1, s1))


def build(out, name, text):
    mlir = os.path.join(out, name + ".mlir")
    with open(mlir, "w") as f:
        f.write(text)
    plan = os.path.join(out, name + ".plan")
    braidtest.compile_step(mlir, plan)
    return plan


def train(plan, ranks, save, steps=6):
    result = braidtest.braid_run(plan, ranks=ranks, args=["--steps", str(steps), "--save", save])
    return braidtest.losses(result.stdout)


def compare(what, got_plan, got_ranks, want_plan, want_ranks, out, tol=1e-6):
    got_save, want_save = os.path.join(out, what + ".got.npz"), os.path.join(out, what + ".want.npz")
    got = train(got_plan, got_ranks, got_save)
    want = train(want_plan, want_ranks, want_save)
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got and want else 1
    check(len(got) == len(want) == 6 and worst <= tol,
          "%s: 6 losses within %g (worst %.2g): %s vs %s" % (what, tol, worst, got, want))
    check(want[-1] < want[0], "%s: the loss falls (%.4g to %.4g)" % (what, want[0], want[-1]))
    g, w = np.load(got_save), np.load(want_save)
    check(sorted(g.files) == sorted(w.files),
          "%s: --save gathers every stage's arrays to rank 0 (%s vs %s)" % (
              what, sorted(g.files), sorted(w.files)))
    common = [k for k in w.files if k in g.files]
    worst = max((braidtest.max_rel_diff(g[k], w[k]), k) for k in common)
    check(len(common) == 7 and worst[0] <= tol,
          "%s: %d saved arrays within %g (worst %.2g, %s)" % (what, len(common), tol, worst[0],
                                                             worst[1]))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pp = build(out, "pp2", pipelined_step(1))
    whole = build(out, "whole", whole_step(1))
    compare("pipeline 2 on 2 ranks vs the whole step on 1", pp, 2, whole, 1, out)
    dpp = build(out, "dp2pp2", pipelined_step(2))
    dp = build(out, "dp2", whole_step(2))
    compare("data parallel 2 x pipeline 2 on 4 ranks vs data parallel 2", dpp, 4, dp, 2, out)

    # Gradient accumulation over two micro-batches, in GPipe's and in 1F1B's
    # order (the latter's steady state a send-receive on each stage): the
    # same kernels in the same order per stage as the accumulating whole
    # step, so its losses and state exactly.
    acc1 = build(out, "acc-whole", accumulating_step(1))
    acc2 = build(out, "acc-dp2", accumulating_step(2))
    for schedule in ("gpipe", "1f1b"):
        text = accumulating_pipeline(1, schedule)
        check(("braid.send_recv" in text) == (schedule == "1f1b"),
              "%s: the stage programs use a send-receive only in 1F1B's steady state" % schedule)
        plan = build(out, "acc-pp2-" + schedule, text)
        compare("%s, 2 micro-batches, pipeline 2 on 2 ranks vs accumulating on 1" % schedule,
                plan, 2, acc1, 1, out)
        plan = build(out, "acc-dp2pp2-" + schedule, accumulating_pipeline(2, schedule))
        compare("%s, 2 micro-batches, data parallel 2 x pipeline 2 vs accumulating data parallel 2"
                % schedule, plan, 4, acc2, 2, out)

    # braid-pipeline makes the stage programs from the step of one
    # micro-batch (4 rows): with 2 micro-batches in any schedule they
    # train as the accumulating step does (which weights each micro-batch's
    # loss by 1/2 where braid-pipeline halves the gradients' sum: equal to
    # rounding, within 1e-5). (Not the interleaved schedule: its 2 x 2
    # stages need four layers; pipeline-models.py and export-pipeline.py
    # train it.)
    for schedule in (s for s in PIPELINE_SCHEDULES if s != "interleaved"):
        for dp in (1, 2):
            mlir = os.path.join(out, "split-dp%d.mlir" % dp)
            with open(mlir, "w") as f:
                f.write(whole_step(dp, rows=MB, grid="%dx2" % dp))
            plan = os.path.join(out, "split-dp%d-%s.plan" % (dp, schedule))
            braidtest.compile_step(mlir, plan, "--pipeline-axis=1", "--micro-batches=%d" % M,
                                   "--pipeline-schedule=" + schedule, "--stage-boundaries=fc3")
            dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
            # (GPipe's stage 0 pairs its last activation with the first
            # gradient too: nothing runs between them.)
            check("send_recv" in dump and "2 stages on axis 1" in dump,
                  "braid-pipeline, %s, data parallel %d: two stage programs with a "
                  "send-receive" % (schedule, dp))
            compare("braid-pipeline, %s, 2 micro-batches, data parallel %d x pipeline 2 vs "
                    "accumulating on %d" % (schedule, dp, dp), plan, 2 * dp,
                    acc1 if dp == 1 else acc2, dp, out, tol=1e-5)

    # A residual that skips a rank: a chain of 8 layers whose third adds the
    # first's output, interleaved on 4 ranks of 2 virtual stages (layer 1
    # on rank 0, layer 3 on rank 2: the value and its gradient go through
    # rank 1, braid-pipeline's programs exchanging with their neighbours
    # alone) trains as GPipe's 4 stages of 2 layers (where the residual
    # stays between neighbours), both against the accumulating step on 1.
    chain = {}
    for schedule in ("interleaved", "gpipe"):
        mlir = os.path.join(out, "skip-%s.mlir" % schedule)
        with open(mlir, "w") as f:
            f.write(braidtest.pipeline_chain(4, 4, schedule, 2, 4, 8, skip=True))
        chain[schedule] = os.path.join(out, "skip-%s.plan" % schedule)
        braidtest.compile_step(mlir, chain[schedule])
    programs = braidtest.run([braidtest.tool("braid-opt"), os.path.join(out, "skip-interleaved.mlir"),
                              "--braid-pipeline"]).stdout.split("func.func @step_stage")
    check(len(programs) == 5 and "peer = 2" not in programs[1] and "peer = 0" not in programs[3]
          and "peer = 2" in programs[2],
          "interleaved with a residual that skips a rank: rank 0 exchanges with ranks 1 and 3 "
          "alone, rank 1 passes the residual on to rank 2")
    saves = {k: os.path.join(out, "skip-%s.npz" % k) for k in chain}
    got = {k: train(plan, 4, saves[k]) for k, plan in chain.items()}
    worst = max(abs(a - b) / abs(b) for a, b in zip(got["interleaved"], got["gpipe"]))
    a, b = np.load(saves["interleaved"]), np.load(saves["gpipe"])
    arrays = max(braidtest.max_rel_diff(a[k], b[k]) for k in b.files)
    check(len(got["interleaved"]) == 6 and worst <= 1e-5 and sorted(a.files) == sorted(b.files)
          and arrays <= 1e-5 and got["gpipe"][-1] < got["gpipe"][0],
          "the residual chain, interleaved on 4 ranks vs GPipe on 4: 6 losses within 1e-5 (worst "
          "%.2g), %d saved arrays (worst %.2g)" % (worst, len(b.files), arrays))

    # The schedules braid.models and braid.export offer are braid-pipeline's.
    refused = braidtest.run([braidtest.tool("braid-opt"), "--braid-pipeline=axis=0 schedule=none",
                             os.path.join(out, "split-dp1.mlir")], check=False)
    known = refused.stderr.split("(known: ")[-1].split(")")[0].split(", ")
    check(refused.returncode != 0 and sorted(known) == sorted(PIPELINE_SCHEDULES),
          "braid-pipeline knows the schedules braid.ir.PIPELINE_SCHEDULES lists (%s)" % known)

    # A ring of three stages, each sending its parameter to the next and
    # receiving the one before's in one send-receive (two different peers):
    # after a step each stage holds its predecessor's tensor, exactly, in
    # the synchronous form and as a start and wait.
    n = 5
    start = {"p%d" % i: np.arange(n, dtype=np.float32) + 10 * i for i in range(3)}
    init = os.path.join(out, "ring-init.npz")
    np.savez(init, **start)
    ring = ["shard.grid @world(shape = 3)"]
    for i in range(3):
        ty = t(n)
        ring.append('func.func @s%d(%%p: %s %s) -> (%s %s) %s {\n'
                    '  %%r = braid.send_recv %%p on @world grid_axes = [0] send_peer = %d '
                    'recv_peer = %d : %s -> %s\n  return %%r : %s\n}' % (
                        i, ty, role("parameter", "p%d" % i), ty, role("parameter", "p%d" % i),
                        stage_attr(i).replace("axis = 1", "axis = 0"), (i + 1) % 3, (i + 2) % 3,
                        ty, ty, ty))
    mlir = os.path.join(out, "ring.mlir")
    with open(mlir, "w") as f:
        f.write("\n".join(ring) + "\n")
    for flags, form in ((["--no-overlap"], "synchronous"), ([], "start")):
        plan = os.path.join(out, "ring-%s.plan" % form)
        braidtest.compile_step(mlir, plan, *flags)
        dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
        check(("send_recv_start" in dump) == (form == "start") and "send_recv" in dump,
              "the ring's %s plan holds the send-receive in that form" % form)
        saved = os.path.join(out, "ring-%s.npz" % form)
        braidtest.braid_run(plan, ranks=3, args=["--steps", "1", "--params", init, "--save", saved])
        got = np.load(saved)
        ok = all(np.array_equal(got["p%d" % i], start["p%d" % ((i + 2) % 3)]) for i in range(3))
        check(ok, "a ring of send-receives (%s form) on 3 ranks: each stage holds the one "
              "before's tensor (%s)" % (form, {k: got[k].tolist() for k in sorted(got.files)}))

    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", dpp]).stdout
    check("4 ranks" not in dump and "world size 4, 2 stages on axis 1 of a grid [2, 2]" in dump
          and "program of each rank: 0 1 0 1" in dump and "stage 1: plan of @stage1" in dump,
          "the dump names the stages and the program of each rank")

    # What a pipelined plan does not allow, each one clear error.
    wrong = braidtest.braid_run(pp, ranks=1, args=["--steps", "1"], check=False)
    check(wrong.returncode == 1 and "compiled for 2 ranks, but runs on 1" in wrong.stderr,
          "a pipelined plan on the wrong number of ranks: %s" % wrong.stderr.strip()[:200])
    sim = braidtest.braid_run(dpp, args=["--cluster=h100-8"], check=False, backend="sim")
    check(sim.returncode == 0 and "pipeline stages        2, bubble fraction" in sim.stdout
          and "stage 1 " in sim.stdout,
          "the simulator plays the pipelined plan, a program per rank: %s" % (
              sim.stdout + sim.stderr).strip()[-300:])
    # --params names the state of every stage: stage 0 loads a file with
    # stage 1's arrays too, and a name no stage has is still an error.
    saved = os.path.join(out, "pipeline 2 on 2 ranks vs the whole step on 1.got.npz")
    resumed = braidtest.braid_run(pp, ranks=2, args=["--steps", "1", "--params", saved], check=False)
    check(resumed.returncode == 0 and braidtest.losses(resumed.stdout),
          "a file saved from a pipeline loads back on every stage: %s" % resumed.stderr.strip()[:200])
    arrays = dict(np.load(saved))
    arrays["fc9.weight"] = np.zeros((2, 2), np.float32)
    stray = os.path.join(out, "stray.npz")
    np.savez(stray, **arrays)
    bad = braidtest.braid_run(pp, ranks=2, args=["--steps", "1", "--params", stray], check=False)
    check(bad.returncode == 1 and "has 'fc9.weight', which is not a parameter" in bad.stderr,
          "an array no stage has is an error: %s" % bad.stderr.strip()[:200])

    if failures:
        sys.exit("%d checks failed" % len(failures))
    print("all checks passed")


if __name__ == "__main__":
    main()
