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
#     on 2 ranks.
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
    all-reduce when there is more than one replica."""

    def __init__(self, dp):
        self.dp, self.lines, self.n = dp, [], 0

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

    def linear_backward(self, dy, x, w, xshape, wshape, param, need_dx=True):
        """dy @ w (the input's gradient) and dy^T @ x (the weight's)."""
        gw = self.op("braid.matmul %s, %s {transpose_a} : %s, %s -> %s" % (
            dy, x, t(B, wshape[0]), t(*xshape), t(*wshape)))
        gw = self.grad(gw, wshape, param)
        dx = None
        if need_dx:
            dx = self.op("braid.matmul %s, %s : %s, %s -> %s" % (
                dy, w, t(B, wshape[0]), t(*wshape), t(*xshape)))
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


def forward1(f):
    h1 = f.op("braid.matmul %%x, %%fc1_weight {transpose_b} : %s, %s -> %s" % (t(B, D), t(H, D), t(B, H)))
    a1 = f.op("braid.relu %s : %s" % (h1, t(B, H)))
    h2 = f.op("braid.matmul %s, %%fc2_weight {transpose_b} : %s, %s -> %s" % (a1, t(B, H), t(H, H), t(B, H)))
    a2 = f.op("braid.relu %s : %s" % (h2, t(B, H)))
    return a1, a2


def backward1(f, a1, a2, da2):
    dh2 = f.op("braid.relu_backward %s, %s : %s" % (da2, a2, t(B, H)))
    g2, da1 = f.linear_backward(dh2, a1, "%fc2_weight", (B, H), (H, H), "fc2.weight")
    dh1 = f.op("braid.relu_backward %s, %s : %s" % (da1, a1, t(B, H)))
    g1, _ = f.linear_backward(dh1, "%x", "%fc1_weight", (B, D), (H, D), "fc1.weight", need_dx=False)
    return g1, g2


def loss_and_backward(f, a2):
    logits = f.op("braid.matmul %s, %%fc3_weight {transpose_b} : %s, %s -> %s" % (a2, t(B, H), t(C, H), t(B, C)))
    loss = f.op("braid.cross_entropy %s, %%labels reduction = mean : %s, %s -> tensor<f32>" % (
        logits, t(B, C), t(B, dtype="i64")))
    one = f.op("braid.constant dense<1.000000e+00> : tensor<f32>")
    dlogits = f.op("braid.cross_entropy_backward %s, %s, %%labels reduction = mean : tensor<f32>, %s, %s" % (
        one, logits, t(B, C), t(B, dtype="i64")))
    g3, da2 = f.linear_backward(dlogits, a2, "%fc3_weight", (B, H), (C, H), "fc3.weight")
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


def whole_step(dp):
    f = Body(dp)
    a1, a2 = forward1(f)
    loss, g3, da2 = loss_and_backward(f, a2)
    g1, g2 = backward1(f, a1, a2, da2)
    ups = [f.sgd("%fc1_weight", g1, "%fc1_weight_m", (H, D)) + ((H, D),),
           f.sgd("%fc2_weight", g2, "%fc2_weight_m", (H, H)) + ((H, H),),
           f.sgd("%fc3_weight", g3, "%fc3_weight_m", (C, H)) + ((C, H),)]
    returns(f, ups, [(loss, "tensor<f32>")])
    args, results = signature({p for p, _ in PARAMS},
                              [("x", (B, D), "f32"), ("labels", (B,), "i64")], LOSS)
    return ("shard.grid @world(shape = %d)\n\nfunc.func @step(\n    %s)\n    -> (%s) {\n%s\n}\n" % (
        dp, args, results, "\n".join(f.lines)))


def stage_attr(index):
    return "attributes {braid.stage = #braid.stage<grid = @world, axis = 1, index = %d>}" % index


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
    return ("shard.grid @world(shape = %dx2)\n\n"
            "func.func @stage0(\n    %s)\n    -> (%s) %s {\n%s\n}\n\n"
            "func.func @stage1(\n    %s)\n    -> (%s) %s {\n%s\n}\n" % (
                dp, args0, results0, stage_attr(0), "\n".join(s0.lines),
                args1, results1, stage_attr(1), "\n".join(s1.lines)))


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


def compare(what, got_plan, got_ranks, want_plan, want_ranks, out):
    got_save, want_save = os.path.join(out, what + ".got.npz"), os.path.join(out, what + ".want.npz")
    got = train(got_plan, got_ranks, got_save)
    want = train(want_plan, want_ranks, want_save)
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, want)) if got and want else 1
    check(len(got) == len(want) == 6 and worst <= 1e-6,
          "%s: 6 losses within 1e-6 (worst %.2g): %s vs %s" % (what, worst, got, want))
    check(want[-1] < want[0], "%s: the loss falls (%.4g to %.4g)" % (what, want[0], want[-1]))
    g, w = np.load(got_save), np.load(want_save)
    check(sorted(g.files) == sorted(w.files),
          "%s: --save gathers every stage's arrays to rank 0 (%s vs %s)" % (
              what, sorted(g.files), sorted(w.files)))
    common = [k for k in w.files if k in g.files]
    worst = max((braidtest.max_rel_diff(g[k], w[k]), k) for k in common)
    check(len(common) == 7 and worst[0] <= 1e-6,
          "%s: %d saved arrays within 1e-6 (worst %.2g, %s)" % (what, len(common), worst[0], worst[1]))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pp = build(out, "pp2", pipelined_step(1))
    whole = build(out, "whole", whole_step(1))
    compare("pipeline 2 on 2 ranks vs the whole step on 1", pp, 2, whole, 1, out)
    dpp = build(out, "dp2pp2", pipelined_step(2))
    dp = build(out, "dp2", whole_step(2))
    compare("data parallel 2 x pipeline 2 on 4 ranks vs data parallel 2", dpp, 4, dp, 2, out)

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
