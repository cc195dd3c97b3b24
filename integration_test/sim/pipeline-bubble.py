# The simulator plays a pipelined plan, each rank its stage's program, and
# reports the bubble: the share of the step a stage computes nothing
# (docs/Pipeline.md). Stage programs in GPipe's order (every micro-batch's
# forward, then every backward) and in 1F1B's (p - i - 1 warm-up forwards
# on stage i, then a forward and a backward in turn, their transfers
# paired in send-receives, then the remaining backwards), on uniform
# stages, written here for p in {2, 4, 8} stages and m in {4, 8, 16, 32}
# micro-batches, on a cluster of ideal links (no latency, no contention,
# the largest bandwidth a cluster file allows: a transfer of a
# micro-batch's 1 MiB takes a nanosecond), must give both schedules'
# bubble (p - 1) / (m + p - 1) to 1e-3 relative (the issue asks for 1%;
# GPipe's is within 4e-5, 1F1B's, with more of its nanosecond transfers on
# the critical path, within 6e-4), and the step (m + p - 1)(F + B) from the
# kernels' own times to 1e-4; on h100-8, whose transfers take time, GPipe's
# bubble is larger than the ideal one, by less than the transfers' share.
# Each stage's peak memory is reported, the step's the largest; the trace
# names each rank's stage. ZB-H1 and interleaved 1F1B (v chunks per rank,
# written here as braid-pipeline posts their transfers) on uniform stages
# give their formulas' bubbles, below 1F1B's by what the formulas say.
#
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


B, D = 256, 1024  # rows of a micro-batch, width of a stage's layer
T = "tensor<%dx%dxf32>" % (B, D)
W = "tensor<%dx%dxf32>" % (D, D)


def batch_args(m, x_type):
    """Stage 0's micro-batches %x0, %x1, ...: one argument each, so that no
    two micro-batches compute the same values (braid-compile's cse would
    run the first stage's forward once for all of them)."""
    return ["%%x%d: %s {braid.role = #braid.role<batch \"x%d\">}" % (k, x_type, k)
            for k in range(m)]


def stage_function(i, m, x_type, w_type, lines, result, kept=()):
    """Stage i's program of `lines`: its weight %w and accumulator %acc,
    the micro-batches %x0... on stage 0, the accumulated gradient
    returned, and the `kept` values (stage 0's input gradients, which no
    stage receives: returned so that braid-compile's canonicalizer keeps
    them, as every stage computes the same)."""
    args = "%%w: %s {braid.role = #braid.role<parameter \"w%d\">}, %%acc: %s" % (w_type, i, w_type)
    if i == 0:
        args += ", " + ", ".join(batch_args(m, x_type))
    types = ", ".join([w_type] + [x_type] * len(kept))
    return ("func.func @stage%d(%s) -> (%s)\n    attributes {braid.stage = #braid.stage<grid = @pipe, "
            "axis = 0, index = %d>} {\n%s\n  return %s : %s\n}\n" % (
                i, args, types, i, "\n".join(lines), ", ".join([result] + list(kept)), types))


def stage_program(p, i, m, schedule="gpipe"):
    """Stage i of p: micro-batch k's forward is one product (its input from
    stage i - 1, its output to stage i + 1), its backward two (the weight's
    gradient with the sum that accumulates it, then the input's, sent
    back). In GPipe's order every forward comes before every
    backward; in 1F1B's (Megatron-LM's schedule) stage i runs p - i - 1
    forwards, then alternates a forward and a backward, then runs the
    remaining backwards, and its steady state exchanges with both
    neighbours in send-receives (the activation forward with a gradient
    back, the gradient back with the next activation)."""
    lines, n = [], [0]

    def op(text):
        n[0] += 1
        lines.append("  %%v%d = %s" % (n[0], text))
        return "%%v%d" % n[0]

    def send(v, peer):
        lines.append("  braid.send %s on @pipe grid_axes = [0] peer = %d : %s" % (v, peer, T))

    def recv(peer):
        return op("braid.recv on @pipe grid_axes = [0] peer = %d : %s" % (peer, T))

    def send_recv(v, peer):
        return op("braid.send_recv %s on @pipe grid_axes = [0] send_peer = %d recv_peer = %d : "
                  "%s -> %s" % (v, peer, peer, T, T))

    first, last = i == 0, i + 1 == p
    inputs, outputs, acc, kept = [], [], ["%acc"], []

    def forward(x):
        inputs.append(x)
        outputs.append(op("braid.matmul %s, %%w : %s, %s -> %s" % (x, T, W, T)))
        return outputs[-1]

    def backward(k, g):
        # The weight's gradient first and the input's last, so that a
        # backward's result leaves at its end, as the formula assumes
        # (sending the input's gradient first shortens the bubble: zero
        # bubble's split of the backward).
        dw = op("braid.matmul %s, %s {transpose_a} : %s, %s -> %s" % (inputs[k], g, T, T, W))
        acc[0] = op("braid.add %s, %s : %s" % (acc[0], dw, W))
        return op("braid.matmul %s, %%w {transpose_b} : %s, %s -> %s" % (g, T, W, T))

    if schedule == "gpipe":
        for k in range(m):
            y = forward("%%x%d" % k if first else recv(i - 1))
            if not last:
                send(y, i + 1)
        for k in range(m):
            dx = backward(k, outputs[k] if last else recv(i + 1))
            if not first:
                send(dx, i - 1)
            else:
                kept.append(dx)
    else:
        warmup = min(p - i - 1, m)
        for k in range(warmup):
            y = forward("%%x%d" % k if first else recv(i - 1))
            send(y, i + 1)
        x = "%x" if first or warmup == m else recv(i - 1)
        for j in range(m - warmup):
            if first:
                x = "%%x%d" % (warmup + j)
            y = forward(x)
            g = y if last else send_recv(y, i + 1)
            dx = backward(j, g)
            if first:
                kept.append(dx)
                continue
            if j + 1 == m - warmup:
                send(dx, i - 1)
            else:
                x = send_recv(dx, i - 1)
        for k in range(m - warmup, m):
            dx = backward(k, recv(i + 1))
            if not first:
                send(dx, i - 1)
            else:
                kept.append(dx)
    return stage_function(i, m, T, W, lines, acc[0], kept)


N = 1024  # rows of a micro-batch of the uniform stages, as wide as a layer
U = "tensor<%dx%dxf32>" % (N, N)


def uniform_program(p, i, m, schedule):
    """Stage i of p uniform stages, each action one product and one sum of
    the same size (a forward x W^T and y + y, B the input's gradient g W
    and its double, W the weight's g^T x and its sum into the
    accumulator), so that F = B = W; in `schedule`'s order (1F1B's backward
    is B and W, W first so that the gradient leaves at its end; ZB-H1 runs
    W apart). Transfers are sends after the action that computes them and
    receives before the one that needs them (or, after a B's sends, before
    the W between), each run with one peer each way one send-receive, as
    braid-pipeline makes them."""
    items, n = [], [0]

    def op(text):
        n[0] += 1
        items.append(("op", "  %%u%d = %s" % (n[0], text)))
        return "%%u%d" % n[0]

    def mm(a, b, attr=""):
        return op("braid.matmul %s, %s%s : %s, %s -> %s" % (a, b, attr, U, U, U))

    def double(v):
        return op("braid.add %s, %s : %s" % (v, v, U))

    def recv(peer):
        n[0] += 1
        items.append(("recv", "%%u%d" % n[0], peer))
        return "%%u%d" % n[0]

    first, last = i == 0, i + 1 == p
    inputs, outputs, grads, acc, kept = {}, {}, {}, ["%acc"], []

    def weight(k):
        dw = mm(inputs[k], grads[k], " {transpose_a}")
        acc[0] = op("braid.add %s, %s : %s" % (acc[0], dw, U))

    acts = braidtest.pipeline_actions(schedule, p, i, m)
    for j, (kind, k) in enumerate(acts):
        if kind == "F":
            if k not in inputs:
                inputs[k] = "%%x%d" % k if first else recv(i - 1)
            outputs[k] = double(mm(inputs[k], "%w", " {transpose_b}"))
            if not last:
                items.append(("send", outputs[k], i + 1))
        elif kind == "B":
            if k not in grads:
                grads[k] = outputs[k] if last else recv(i + 1)
            if schedule != "zb-h1":
                weight(k)
            dx = double(mm(grads[k], "%w"))
            if not first:
                items.append(("send", dx, i - 1))
            else:
                kept.append(dx)
        else:
            # After a B's sends, the next action's receives go before the W
            # (braid-pipeline's order: one send-receive with those sends).
            if items and items[-1][0] == "send" and j + 1 < len(acts) and acts[j + 1][0] != "W":
                nk, nb = acts[j + 1]
                if nk == "F" and not first:
                    inputs[nb] = recv(i - 1)
                elif nk == "B" and not last:
                    grads[nb] = recv(i + 1)
            weight(k)
    lines, run = [], []

    def flush():
        sends = [x for x in run if x[0] == "send"]
        recvs = [x for x in run if x[0] == "recv"]
        if sends and recvs and len({x[2] for x in sends}) == 1 and len({x[2] for x in recvs}) == 1:
            assert len(sends) == len(recvs) == 1
            lines.append("  %s = braid.send_recv %s on @pipe grid_axes = [0] send_peer = %d "
                         "recv_peer = %d : %s -> %s" % (recvs[0][1], sends[0][1], sends[0][2],
                                                         recvs[0][2], U, U))
        else:
            for x in run:
                if x[0] == "send":
                    lines.append("  braid.send %s on @pipe grid_axes = [0] peer = %d : %s"
                                 % (x[1], x[2], U))
                else:
                    lines.append("  %s = braid.recv on @pipe grid_axes = [0] peer = %d : %s"
                                 % (x[1], x[2], U))
        run.clear()

    for x in items:
        if x[0] == "op":
            flush()
            lines.append(x[1])
        else:
            run.append(x)
    flush()
    return stage_function(i, m, U, U, lines, acc[0], kept)


def interleaved_program(p, r, m, v):
    """Rank r of p holding v chunks (virtual stages c p + r of p v) of
    uniform stages, in the interleaved schedule's order: each chunk's
    forward one product and its double, its backward the weight's gradient
    (a product and its sum into the chunk's accumulator) and the input's (a
    product and its double), on every chunk alike (the first's input
    gradient is computed and not sent, but returned; the last's forward output is its own
    backward's input). Transfers as braid-pipeline posts them for this
    schedule (Megatron-LM's units): after each unit (a warm-up forward, a
    forward and a backward, a drain backward) its sends and the next
    unit's receives, per neighbour one send-receive, even ranks with the
    next rank first, odd ones with the previous."""
    last = p * v - 1
    lines, n = [], [0]

    def op(text):
        n[0] += 1
        lines.append("  %%u%d = %s" % (n[0], text))
        return "%%u%d" % n[0]

    def mm(a, b, attr=""):
        return op("braid.matmul %s, %s%s : %s, %s -> %s" % (a, b, attr, U, U, U))

    inputs, outputs, grads, dxs = {}, {}, {}, {}
    acc = ["%%acc%d" % c for c in range(v)]

    def stage(a):
        return a[2] * p + r

    def compute(a):
        kind, k, c = a
        s = stage(a)
        if kind == "F":
            x = "%%x%d" % k if s == 0 else inputs[(k, s)]
            inputs[(k, s)] = x
            y = mm(x, "%%w%d" % c, " {transpose_b}")
            outputs[(k, s)] = op("braid.add %s, %s : %s" % (y, y, U))
        else:
            g = outputs[(k, s)] if s == last else grads[(k, s)]
            dw = mm(inputs[(k, s)], g, " {transpose_a}")
            acc[c] = op("braid.add %s, %s : %s" % (acc[c], dw, U))
            dx = mm(g, "%%w%d" % c)
            dxs[(k, s)] = op("braid.add %s, %s : %s" % (dx, dx, U))

    def group(sending, receiving):
        parts = {}
        for kind, k, c in sending:
            s = c * p + r
            if kind == "F" and s < last:
                parts.setdefault((s + 1) % p, ([], []))[0].append(outputs[(k, s)])
            if kind == "B" and s > 0:
                parts.setdefault((s - 1) % p, ([], []))[0].append(dxs[(k, s)])
        for kind, k, c in receiving:
            s = c * p + r
            if kind == "F" and s > 0:
                n[0] += 1
                inputs[(k, s)] = "%%u%d" % n[0]
                parts.setdefault((s - 1) % p, ([], []))[1].append(inputs[(k, s)])
            if kind == "B" and s < last:
                n[0] += 1
                grads[(k, s)] = "%%u%d" % n[0]
                parts.setdefault((s + 1) % p, ([], []))[1].append(grads[(k, s)])
        for peer in sorted(parts, key=lambda q: (q - r) % p, reverse=r % 2 == 1):
            sends, recvs = parts[peer]
            if sends and recvs:
                lines.append("  %s = braid.send_recv %s on @pipe grid_axes = [0] send_peer = %d "
                             "recv_peer = %d : %s -> %s" % (
                                 ", ".join(recvs), ", ".join(sends), peer, peer,
                                 ", ".join([U] * len(sends)), ", ".join([U] * len(recvs))))
                continue
            for x in sends:
                lines.append("  braid.send %s on @pipe grid_axes = [0] peer = %d : %s" % (x, peer, U))
            for x in recvs:
                lines.append("  %s = braid.recv on @pipe grid_axes = [0] peer = %d : %s" % (x, peer, U))

    acts = braidtest.interleaved_actions(p, r, m, v)
    warm = braidtest.interleaved_warmup(p, r, m, v)
    units, j = [], 0
    while j < len(acts):
        if warm <= j < 2 * m * v - warm:
            units.append(acts[j:j + 2])
            j += 2
        else:
            units.append(acts[j:j + 1])
            j += 1
    group([], units[0])
    for u, unit in enumerate(units):
        for a in unit:
            compute(a)
        group(unit, units[u + 1] if u + 1 < len(units) else [])
    args = ", ".join(["%%w%d: %s {braid.role = #braid.role<parameter \"w%d\">}" % (c, U, c * p + r)
                      for c in range(v)] + ["%%acc%d: %s" % (c, U) for c in range(v)] +
                     (batch_args(m, U) if r == 0 else []))
    # Stage 0's input gradients, which no stage receives, returned (as
    # stage_function's `kept`).
    kept = [dxs[(k, 0)] for k in range(m)] if r == 0 else []
    types = ", ".join([U] * (v + len(kept)))
    return ("func.func @stage%d(%s) -> (%s)\n    attributes {braid.stage = #braid.stage<grid = "
            "@pipe, axis = 0, index = %d>} {\n%s\n  return %s : %s\n}\n" % (
                r, args, types, r, "\n".join(lines), ", ".join(acc + kept), types))


def pipeline(p, m, schedule):
    return "shard.grid @pipe(shape = %d)\n\n" % p + "\n".join(
        stage_program(p, i, m, schedule) for i in range(p))


def simulate(plan, cluster, out, trace=None):
    report = out + ".report.json"
    cmd = [braidtest.tool("braid-run"), "--backend=sim", "--cluster=" + cluster, plan,
           "--report", report]
    if trace:
        cmd += ["--trace", trace]
    braidtest.run(cmd)
    with open(report) as f:
        return json.load(f)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ideal_path = braidtest.ideal_links_cluster(out)

    for p in (2, 4, 8):
        for m in (4, 8, 16, 32):
            name = os.path.join(out, "gpipe-p%d-m%d" % (p, m))
            rep, got, want = {}, {}, (p - 1) / (m + p - 1)
            for schedule in ("gpipe", "1f1b"):
                name = os.path.join(out, "%s-p%d-m%d" % (schedule, p, m))
                with open(name + ".mlir", "w") as f:
                    f.write(pipeline(p, m, schedule))
                braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
                r = rep[schedule] = simulate(name + ".plan", ideal_path, name)
                got[schedule] = r["bubble_fraction"]
                # Every stage computes m (F + B); the step is (m + p - 1) of them.
                per_batch = r["stages"][0]["compute"] / m
                step = (m + p - 1) * per_batch
                check(abs(got[schedule] - want) <= 1e-3 * want
                      and abs(r["step_time"] - step) <= 1e-4 * step and len(r["stages"]) == p,
                      "%s p=%d m=%d on ideal links: bubble %.6f, formula (p-1)/(m+p-1) = %.6f; "
                      "step %.6f ms, formula %.6f ms" % (
                          "GPipe" if schedule == "gpipe" else "1F1B", p, m, got[schedule], want,
                          r["step_time"] * 1e3, step * 1e3))
            # Each stage's peak memory is its program's memory plan; the
            # step's is the largest. (The memory arithmetic of the schedules
            # needs activations that a stage keeps for its backward, which
            # these one-product stages barely have: integration_test/
            # pipeline, with the stage programs of braid-pipeline.)
            for schedule in ("gpipe", "1f1b"):
                mem = [st["peak_memory_bytes"] for st in rep[schedule]["stages"]]
                check(len(mem) == p and min(mem) > 0 and max(mem) == rep[schedule]["peak_memory_bytes"],
                      "%s p=%d m=%d: the step's peak memory is its largest stage's (%s MiB)" % (
                          schedule, p, m, " ".join(str(b >> 20) for b in mem)))
            name = os.path.join(out, "gpipe-p%d-m%d" % (p, m))
            got = got["gpipe"]
            rep = rep["gpipe"]
            if (p, m) == (4, 8):
                real = simulate(name + ".plan", "h100-8", name + ".h100", trace=name + ".trace.json")
                extra = real["step_time"] - rep["step_time"]
                check(real["bubble_fraction"] > got and
                      real["bubble_fraction"] - got <= extra / real["step_time"] + 1e-9,
                      "GPipe p=4 m=8 on h100-8: bubble %.4f above the ideal %.4f by no more than "
                      "the transfers' share of the step (%.4f)" % (
                          real["bubble_fraction"], got, extra / real["step_time"]))
                with open(name + ".trace.json") as f:
                    trace = json.load(f)
                names = sorted(e["args"]["name"] for e in trace["traceEvents"]
                               if e.get("name") == "process_name")
                check(names == ["rank %d (stage %d)" % (r, r) for r in range(4)],
                      "the trace names each rank's stage: %s" % names)
    # Zero bubble: uniform stages whose backward splits into B and W of the
    # same time as the forward. ZB-H1's step is m (F + B + W) + (p - 1)
    # (F + B - W) to 1e-3 and its bubble (p - 1) / (3m + p - 1) (Qi et al.
    # 2024, for m >= p) to 5e-3 relative (the nanosecond transfers weigh
    # more in the smallest bubbles, 0.01 of the step at p = 2, m = 32);
    # 1F1B's of the same programs (its backward B and W together)
    # m (F + B + W) + (p - 1)(F + B + W), so ZB-H1 gains 2 (p - 1) W, two
    # thirds of 1F1B's bubble.
    for p in (2, 4, 8):
        for m in (4, 8, 16, 32):
            if m < p:
                continue
            got = {}
            for schedule in ("1f1b", "zb-h1"):
                name = os.path.join(out, "uniform-%s-p%d-m%d" % (schedule, p, m))
                with open(name + ".mlir", "w") as f:
                    f.write("shard.grid @pipe(shape = %d)\n\n" % p + "\n".join(
                        uniform_program(p, i, m, schedule) for i in range(p)))
                braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
                got[schedule] = simulate(name + ".plan", ideal_path, name)
            zb, plain = got["zb-h1"], got["1f1b"]
            f = zb["stages"][0]["compute"] / (3 * m)  # F = B = W
            want = (p - 1) / (3 * m + p - 1)
            check(abs(zb["bubble_fraction"] - want) <= 5e-3 * want
                  and abs(zb["step_time"] - (3 * m + p - 1) * f) <= 1e-3 * zb["step_time"],
                  "ZB-H1 p=%d m=%d on ideal links: bubble %.6f, formula (p-1)/(3m+p-1) = %.6f; "
                  "step %.4f ms, formula (3m + p - 1) F = %.4f ms" % (
                      p, m, zb["bubble_fraction"], want, zb["step_time"] * 1e3,
                      (3 * m + p - 1) * f * 1e3))
            gain = plain["step_time"] - zb["step_time"]
            check(abs(gain - 2 * (p - 1) * f) <= 1e-3 * plain["step_time"],
                  "ZB-H1 p=%d m=%d: %.4f ms faster than 1F1B (bubble %.4f), formula 2(p-1)W = "
                  "%.4f ms" % (p, m, gain * 1e3, plain["bubble_fraction"],
                               2 * (p - 1) * f * 1e3))
    # Interleaved 1F1B (Narayanan et al. 2021): each rank holds v chunks of
    # uniform stages, each chunk's forward f and backward b = 2f. Its step
    # is (m v + p - 1)(f + b) to 1e-3 and its bubble (p - 1)/(v m + p - 1)
    # to 5e-3 relative (as ZB-H1's: its 2 v transfers per micro-batch weigh
    # most in the smallest bubble, 1.7e-3 at p = 2, m = 32): 1F1B's (p - 1)/(m + p - 1) of the same work (a stage
    # of v chunks, F + B = v (f + b), checked above) over v, the step
    # (p - 1)(v - 1)(f + b) shorter.
    for p in (2, 4, 8):
        for m in (8, 16, 32):
            for v in ((2, 4) if (p, m) == (4, 16) else (2,)):
                name = os.path.join(out, "interleaved-p%d-v%d-m%d" % (p, v, m))
                with open(name + ".mlir", "w") as f:
                    f.write("shard.grid @pipe(shape = %d)\n\n" % p + "\n".join(
                        interleaved_program(p, r, m, v) for r in range(p)))
                braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
                r = simulate(name + ".plan", ideal_path, name)
                fb = r["stages"][0]["compute"] / (m * v)  # f + b of a chunk
                want = (p - 1) / (v * m + p - 1)
                plain = (m + p - 1) * v * fb  # 1F1B's step of the same work
                check(abs(r["bubble_fraction"] - want) <= 5e-3 * want
                      and abs(r["step_time"] - (m * v + p - 1) * fb) <= 1e-3 * r["step_time"],
                      "interleaved p=%d v=%d m=%d on ideal links: bubble %.6f, formula "
                      "(p-1)/(vm+p-1) = %.6f (1F1B's %.6f); step %.4f ms, %.4f ms below "
                      "1F1B's formula, (p-1)(v-1)(f+b) = %.4f ms" % (
                          p, v, m, r["bubble_fraction"], want, (p - 1) / (m + p - 1),
                          r["step_time"] * 1e3, (plain - r["step_time"]) * 1e3,
                          (p - 1) * (v - 1) * fb * 1e3))
    if failures:
        sys.exit("%d checks failed" % len(failures))
    print("all checks passed")


if __name__ == "__main__":
    main()
