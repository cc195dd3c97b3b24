# The simulator plays a pipelined plan, each rank its stage's program, and
# reports the bubble: the share of the step a stage computes nothing
# (docs/Pipeline.md). Stage programs in GPipe's order (every micro-batch's
# forward, then every backward) on uniform stages, written here for p in
# {2, 4, 8} stages and m in {4, 8, 16, 32} micro-batches, on a cluster of
# ideal links (no latency, no contention, the largest bandwidth a cluster
# file allows: a transfer of a micro-batch's 1 MiB takes a nanosecond), must
# give GPipe's bubble (p - 1) / (m + p - 1) to 1e-4 relative (the issue asks
# for 1%), and the step (m + p - 1)(F + B) from the kernels' own times to
# the same bound; on h100-8, whose transfers
# take time, the bubble is larger than the ideal one, by less than the
# transfers' share. The trace names each rank's stage.
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


def stage_program(p, i, m):
    """Stage i of p in GPipe's order: micro-batch k's forward is one
    product (its input from stage i - 1, its output to stage i + 1), its
    backward two (the input's gradient, sent back, and the weight's) and
    the sum that accumulates the weight's gradient."""
    lines, n = [], [0]

    def op(text):
        n[0] += 1
        lines.append("  %%v%d = %s" % (n[0], text))
        return "%%v%d" % n[0]

    inputs, outputs = [], []
    for k in range(m):
        x = "%x" if i == 0 else op("braid.recv on @pipe grid_axes = [0] peer = %d : %s" % (i - 1, T))
        y = op("braid.matmul %s, %%w : %s, %s -> %s" % (x, T, W, T))
        if i + 1 < p:
            lines.append("  braid.send %s on @pipe grid_axes = [0] peer = %d : %s" % (y, i + 1, T))
        inputs.append(x)
        outputs.append(y)
    acc = "%acc"
    for k in range(m):
        g = outputs[k] if i + 1 == p else op(
            "braid.recv on @pipe grid_axes = [0] peer = %d : %s" % (i + 1, T))
        dx = op("braid.matmul %s, %%w {transpose_b} : %s, %s -> %s" % (g, T, W, T))
        if i > 0:
            lines.append("  braid.send %s on @pipe grid_axes = [0] peer = %d : %s" % (dx, i - 1, T))
        dw = op("braid.matmul %s, %s {transpose_a} : %s, %s -> %s" % (inputs[k], g, T, T, W))
        acc = op("braid.add %s, %s : %s" % (acc, dw, W))
    args = "%%w: %s {braid.role = #braid.role<parameter \"w%d\">}, %%acc: %s" % (W, i, W)
    if i == 0:
        args += ", %%x: %s {braid.role = #braid.role<batch \"x\">}" % T
    return ("func.func @stage%d(%s) -> %s\n    attributes {braid.stage = #braid.stage<grid = @pipe, "
            "axis = 0, index = %d>} {\n%s\n  return %s : %s\n}\n" % (
                i, args, W, i, "\n".join(lines), acc, W))


def gpipe(p, m):
    return "shard.grid @pipe(shape = %d)\n\n" % p + "\n".join(stage_program(p, i, m) for i in range(p))


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
    # Ideal links: the h100-8 preset with transfers that take no time and
    # no contention between kernels and transfers.
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "common", "clusters",
                           "h100-8.json")) as f:
        ideal = json.load(f)
    ideal.update(name="ideal-links-8", nvlink_latency_us=0, network_latency_us=0,
                 collective_base_latency_us=0, nvlink_gb_per_s=1e6, network_gb_per_s=1e6,
                 compute_slowdown_during_comm=0, comm_slowdown_during_compute=0)
    ideal.pop("nccl", None)
    ideal_path = os.path.join(out, "ideal-links-8.json")
    with open(ideal_path, "w") as f:
        json.dump(ideal, f)

    for p in (2, 4, 8):
        for m in (4, 8, 16, 32):
            name = os.path.join(out, "gpipe-p%d-m%d" % (p, m))
            with open(name + ".mlir", "w") as f:
                f.write(gpipe(p, m))
            braidtest.compile_step(name + ".mlir", name + ".plan", "--cluster=h100-8")
            rep = simulate(name + ".plan", ideal_path, name)
            want = (p - 1) / (m + p - 1)
            got = rep["bubble_fraction"]
            # Every stage computes m (F + B); the step is (m + p - 1) of them.
            per_batch = rep["stages"][0]["compute"] / m
            step = (m + p - 1) * per_batch
            check(abs(got - want) <= 1e-4 * want and abs(rep["step_time"] - step) <= 1e-4 * step
                  and len(rep["stages"]) == p,
                  "GPipe p=%d m=%d on ideal links: bubble %.6f, formula (p-1)/(m+p-1) = %.6f; "
                  "step %.6f ms, formula %.6f ms" % (p, m, got, want, rep["step_time"] * 1e3,
                                                      step * 1e3))
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
    if failures:
        sys.exit("%d checks failed" % len(failures))
    print("all checks passed")


if __name__ == "__main__":
    main()
