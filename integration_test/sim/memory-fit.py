# Whether a plan fits its cluster's GPU memory (braid-runtime/PlanMemory.h):
# the simulator's report splits the plan's arena into parameters, optimizer
# state, batch, communication buffers and the rest, each recomputed here
# from the plan's bindings; a plan that fits says how much of the GPU it
# uses and compiles without a warning; one that does not fit gets a
# warning from braid-compile (the plan is written all the same) and from
# braid-run --backend=sim, naming by how much and the largest consumers,
# and its JSON report says "fits": false. Llama-2 70B data-parallel on
# 80 GB H100s does not fit. A cluster file without gpu_memory_gib is not
# checked; a bad value is an error. braid-compile's --regather=auto keeps
# sequence parallelism's gathered layer-norm outputs where the plan fits,
# and takes the smaller plan where it does not, saying so.
#
# REQUIRES: numpy
# RUN: env BRAID_BIN=%braid_bin %python %s %t

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

CLUSTERS = os.path.join(os.path.dirname(__file__), "..", "..", "common", "clusters")
GIB = 1 << 30
failures = 0


def check(ok, what):
    global failures
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    failures += not ok


def compile_plan(mlir, plan, cluster):
    return braidtest.run([braidtest.tool("braid-compile"), mlir, "-o", plan,
                          "--cluster=" + cluster], check=False)


def simulate(plan, out, cluster=None):
    report = plan + ".json"
    args = [braidtest.tool("braid-run"), "--backend=sim", plan, "--report", report]
    if cluster:
        args.append("--cluster=" + cluster)
    p = braidtest.run(args, check=False)
    with open(report) as f:
        return p, json.load(f)


def bytes_by_role(plan):
    """The bytes of the plan's distinct bound buffers by role, from --dump."""
    dump = braidtest.run([braidtest.tool("braid-run"), "--dump", plan]).stdout
    sizes = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i1": 1}
    seen, roles = set(), {}
    for role, shape, offset in re.findall(
            r"^\s+(parameter|optimizer_state|batch) '[^']*' tensor<([^>]*)> @(\d+)", dump, re.M):
        if offset in seen:
            continue
        seen.add(offset)
        *dims, dtype = shape.split("x")
        n = sizes[dtype]
        for d in dims:
            n *= int(d)
        roles[role] = roles.get(role, 0) + n
    arena = int(re.search(r"arena (\d+) bytes", dump).group(1))
    return roles, arena


def cluster_file(out, name, **changes):
    with open(os.path.join(CLUSTERS, "h100-8.json")) as f:
        c = json.load(f)
    c["name"] = name
    for k, v in changes.items():
        if v is None:
            c.pop(k)
        else:
            c[k] = v
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlir = os.path.join(out, "mlp.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "mlp", "--world-size", "2", "-o", mlir])

    # Fits: the breakdown against the plan's bindings.
    plan = os.path.join(out, "fits.plan")
    c = compile_plan(mlir, plan, "h100-8")
    check(c.returncode == 0 and "does not fit" not in c.stderr,
          "a plan that fits compiles without a warning")
    p, r = simulate(plan, out)
    roles, arena = bytes_by_role(plan)
    m = r["memory"]
    check(m["parameters"] == roles["parameter"] and m["optimizer_state"] == roles["optimizer_state"]
          and m["batch"] == roles["batch"],
          "parameters %d, optimizer state %d, batch %d bytes: the plan's bindings (%s)" % (
              m["parameters"], m["optimizer_state"], m["batch"], roles))
    # The MLP's gradients all go through its buckets: as many bytes as
    # its parameters (f32 both).
    check(m["communication"] >= m["parameters"],
          "communication buffers %d bytes hold every gradient (%d)" % (
              m["communication"], m["parameters"]))
    check(sum(m.values()) == arena == r["peak_memory_bytes"] and m["other"] > 0,
          "the classes add up to the arena (%d bytes)" % arena)
    capacity = int(79.647 * GIB)
    used = "%.2f%% used" % (100.0 * arena / capacity)
    check(r["fits"] is True and r["gpu_memory_bytes"] == capacity and
          "GPU memory             79.6 GiB: fits, " + used in p.stdout and p.stderr == "",
          "h100-8: fits, " + used)
    check(re.search(r"memory by use +parameters 3\.1 MiB, optimizer state 3\.1 MiB, "
                    r"communication buffers 3\.1 MiB, activations and other temporaries "
                    r"768\.1 KiB, batch 196\.5 KiB", p.stdout) is not None,
          "the report lists the classes, largest first")

    # Does not fit: a GPU of half the arena.
    half = arena / 2 / GIB
    small = cluster_file(out, "small", gpu_memory_gib=half)
    plan = os.path.join(out, "small.plan")
    c = compile_plan(mlir, plan, small)
    need = "the plan needs 10.3 MiB a rank, 5.1 MiB more than the 5.1 MiB of one " \
        "NVIDIA H100 SXM5 80GB (DGX H100); largest: parameters 3.1 MiB, optimizer state 3.1 MiB"
    check(c.returncode == 0 and ("braid-compile: warning: the plan does not fit cluster "
                                 "'small': " + need) in c.stderr and os.path.getsize(plan) > 0,
          "braid-compile warns and writes the plan: %s" % c.stderr.strip())
    p, r = simulate(plan, out)
    check(p.returncode == 0 and "GPU memory             DOES NOT FIT: " + need in p.stdout and
          "braid-run: warning: the plan does not fit cluster 'small': " + need in p.stderr,
          "the simulator reports it and warns")
    check(r["fits"] is False and r["gpu_memory_bytes"] == int(half * GIB) and
          r["peak_memory_bytes"] == arena, "the JSON report: fits false")
    # The same plan on a cluster that says nothing of its memory.
    p, r = simulate(plan, out, cluster_file(out, "unsaid", gpu_memory_gib=None))
    check(r["fits"] is True and r["gpu_memory_bytes"] == 0 and
          "GPU memory             not given by the cluster: not checked" in p.stdout and
          p.stderr == "", "no gpu_memory_gib: not checked")
    p = braidtest.run([braidtest.tool("braid-run"), "--backend=sim", plan, "--cluster=" +
                       cluster_file(out, "bad", gpu_memory_gib=0)], check=False)
    check(p.returncode == 1 and '"gpu_memory_gib" is 0, outside [1e-06, 1e+06]' in p.stderr,
          "gpu_memory_gib 0 is an error: %s" % p.stderr.strip())

    # --regather=auto (braid-compile's default with sequence parallelism):
    # the plan that keeps the forward's gathered layer-norm outputs where it
    # fits (said with --report), else whichever of it and the plan that
    # gathers them again needs less (always said).
    gpt = os.path.join(out, "gpt-tp2.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "gpt2-small", "--layers", "2",
                   "--world-size", "2", "--tp", "2", "--batch", "8", "--seq", "512",
                   "--vocab", "512", "-o", gpt])
    plans = []

    def compiled(cluster, *flags):
        plan = os.path.join(out, "gpt-%d.plan" % len(plans))
        plans.append(plan)
        c = braidtest.run([braidtest.tool("braid-compile"), gpt, "-o", plan,
                           "--cluster=" + cluster, *flags], check=False)
        return c, simulate(plan, out, cluster)[1]["peak_memory_bytes"]

    gib = lambda b: "%.2f GiB" % (b / GIB)  # noqa: E731
    # Under braid's overlap schedule the re-gathers start early and their
    # copies add to the kept ones' shards: keeping needs less. In program
    # order (--no-overlap) each re-gather comes right before its reader:
    # gathering again needs less. The note and the plan taken follow.
    for schedule in ([], ["--no-overlap"]):
        _, keep = compiled("h100-8", "--regather=false", *schedule)
        _, again = compiled("h100-8", "--regather=true", *schedule)
        c, auto = compiled("h100-8", "--report", *schedule)
        check(c.returncode == 0 and auto == keep and keep != again and
              ("braid-compile: note: --regather=auto: sequence parallelism keeps the forward's "
               "gathered layer-norm outputs for the backward: the plan needs %s a rank of the "
               "79.65 GiB of a GPU of 'h100-8'" % gib(keep)) in c.stderr,
              "%s: --regather=auto keeps the copies where the plan fits (%d bytes; %d gathering "
              "again)" % (schedule or "overlap", keep, again))
        tiny = cluster_file(out, "tiny", gpu_memory_gib=min(keep, again) / 2 / GIB)
        c, auto = compiled(tiny, *schedule)
        choice = "gathering again" if again < keep else "keeping them"
        check(c.returncode == 0 and auto == min(keep, again) and
              ("braid-compile: note: --regather=auto: the plan that keeps the forward's "
               "gathered layer-norm outputs needs %s a rank, over the %s of a GPU of 'tiny'; "
               "gathering them again in the backward needs %s: %s" % (
                   gib(keep), gib(min(keep, again) / 2), gib(again), choice)) in c.stderr and
              "does not fit cluster 'tiny'" in c.stderr,
              "%s: over the GPU, --regather=auto takes the smaller plan (%s): %s" % (
                  schedule or "overlap", choice, c.stderr.strip()))
    c = braidtest.run([braidtest.tool("braid-compile"), gpt, "-o", os.path.join(out, "bad.plan"),
                       "--regather=sometimes"], check=False)
    check(c.returncode == 1 and "braid-compile: error: --regather must be true, false or "
          "auto, but is 'sometimes'" in c.stderr, "a bad --regather: %s" % c.stderr.strip())

    # The case: Llama-2 70B, data parallel in bf16 on 80 GB H100s.
    llama = os.path.join(out, "llama2-70b.mlir")
    braidtest.run([sys.executable, "-m", "braid.models", "llama2-70b", "--dtype", "bf16",
                   "--world-size", "8", "--batch", "1", "-o", llama])
    plan = os.path.join(out, "llama2-70b.plan")
    c = compile_plan(llama, plan, "h100-8")
    p, r = simulate(plan, out)
    m = r["memory"]
    # 69.0e9 parameters in bf16 (2 bytes), AdamW's two moments each as
    # large (and its step count).
    check(abs(m["parameters"] / 2 - 68.98e9) < 0.1e9 and
          0 <= m["optimizer_state"] - 2 * m["parameters"] < 1 << 20,
          "llama2-70b: %.2fe9 parameters, two moments each" % (m["parameters"] / 2e9))
    check(r["fits"] is False and "does not fit cluster 'h100-8'" in c.stderr and
          "largest: optimizer state 257.0 GiB, parameters 128.5 GiB" in p.stdout,
          "llama2-70b on h100-8 does not fit: %s" % c.stderr.strip())
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
