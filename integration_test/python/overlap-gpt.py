# Checks the overlap pipeline's promises on the bundled GPT step, by reading
# the scheduled IR independently of the passes:
#   - every bucket but one holding a single oversized gradient is at most
#     the cap, and the first bucket is at most first-bucket-cap-mb;
#   - every gradient is reduced exactly once, read from the data flow and not
#     from the labels the pass writes: each parameter's update reads a
#     result of a wait, whose start reduced, at that position, a value that
#     computes the same expression (ops and operands back to the function's
#     arguments) as the gradient the unscheduled step all-reduces for that
#     parameter; and no start operand feeds two updates;
#   - no wait sits before a compute op that does not need its result (the
#     optimizer phase, which needs the waits, follows the backward);
#   - each start comes right after the last producer of its gradients
#     (only its event synchronization in between).
#
# RUN: %python %s braid-opt %examples/gpt.mlir 25 1
# RUN: %python %s braid-opt %examples/gpt.mlir 8 0.5
# RUN: %python %s braid-opt %examples/mlp.mlir 1 0.01

import re
import subprocess
import sys

SSA = re.compile(r"%[\w.$-]+")


def parse(text):
    """The ops of the function body: (results, name, operands, line)."""
    body = text[text.index("func.func"):]
    body = body[body.index("{\n") + 2:]
    ops = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line == "}":
            continue
        lhs, eq, rhs = line.partition(" = ")
        if eq and lhs.startswith("%"):
            results = [r.split(":")[0] for r in lhs.split(", ")]
        else:
            results, rhs = [], line
        name = rhs.split()[0]
        operands = [o.split("#")[0] for o in SSA.findall(rhs.split(" : ")[0])]
        ops.append((results, name, operands, line))
    return ops


def main(braid_opt, example, cap_mb, first_cap_mb):
    cap = int(float(cap_mb) * 1024 * 1024)
    first_cap = int(float(first_cap_mb) * 1024 * 1024)
    opts = "bucket-cap-mb=%s first-bucket-cap-mb=%s" % (cap_mb, first_cap_mb)
    out = subprocess.run([braid_opt, "--braid-overlap=" + opts, example],
                         check=True, capture_output=True, text=True).stdout
    graph = subprocess.run([braid_opt, example], check=True, capture_output=True,
                           text=True).stdout
    ops = parse(out)
    producer = {}
    for i, (results, name, operands, line) in enumerate(ops):
        for r in results:
            producer[r] = i

    # Buckets and their sizes.
    starts = [(i, op) for i, op in enumerate(ops) if op[1] == "braid.all_reduce_start"]
    assert starts, "no buckets"
    reduced = []
    for k, (i, (results, name, operands, line)) in enumerate(starts):
        size = int(re.search(r"bucket_bytes = (\d+)", line).group(1))
        index = int(re.search(r"bucket_index = (\d+)", line).group(1))
        names = re.search(r'grad_of = \[([^\]]*)\]', line).group(1).split(", ")
        reduced += [n.strip('"') for n in names]
        assert index == k, (index, k)
        single = len(names) == 1
        limit = first_cap if k == 0 else cap
        assert size <= limit or single, "bucket %d holds %d bytes > %d" % (k, size, limit)
        if k == 0:
            assert size <= first_cap or single, size
        # Right after the last producer of its gradients (events between).
        last = max(producer.get(o, -1) for o in operands)
        between = [ops[j][1] for j in range(last + 1, i)]
        assert all(n in ("braid.record_event", "braid.wait_event", "braid.all_reduce_start")
                   for n in between), (k, between)
    params = re.findall(r'#braid.role<parameter "([^"]+)">', graph.split("->")[0])
    assert sorted(reduced) == sorted(params), (sorted(reduced), sorted(params))

    # No wait before a compute op that does not need its result. The
    # optimizer updates of other buckets need the result of some wait (they
    # run in the optimizer phase, bucket by bucket); every op that needs no
    # wait at all must come before the first wait.
    after_wait = set()
    first_wait = None
    for i, (results, name, operands, line) in enumerate(ops):
        if name == "braid.wait":
            first_wait = i if first_wait is None else first_wait
            after_wait |= set(results)
            continue
        if set(operands) & after_wait:
            after_wait |= set(results)
            continue
        if first_wait is None or name in ("braid.record_event", "braid.wait_event", "return"):
            continue
        if name.endswith("_start"):
            continue
        raise AssertionError("wait %r sits before %r, which needs no wait"
                             % (ops[first_wait][3][:60], line[:60]))
    check_data_flow(graph, out)
    print("ok: %d buckets, %d gradients" % (len(starts), len(reduced)))


VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
# What the overlap passes add to an op: its stream, bucket labels.
SCHEDULE_ATTRS = re.compile(r"braid\.stream = #braid\.stream<[^>]*>(, )?|"
                            r"bucket_(bytes|index) = \d+ : i64(, )?|grad_of = \[[^\]]*\]")
UPDATES = ("braid.sgd", "braid.adamw")


def values(text):
    """Defining op of each value, with its operand values (`%x#k` kept for
    results of multi-result ops): {value: (name, canonical text, operands)}."""
    body = text[text.index("func.func"):]
    body = body[body.index("{\n") + 2:]
    defs, ops = {}, []
    for line in body.splitlines():
        line = line.strip()
        if not line or line == "}":
            continue
        lhs, eq, rhs = line.partition(" = ")
        if not (eq and lhs.startswith("%")):
            lhs, rhs = "", line
        name = rhs.split()[0]
        operands = VALUE.findall(rhs.split(" : ")[0])
        # The op's own text without value names, labels or schedule attributes.
        canon = SCHEDULE_ATTRS.sub("", rhs).replace(", }", "}").replace(" {}", "")
        canon = VALUE.sub("%", canon)
        results = []
        for r in lhs.split(", ") if lhs else []:
            base, _, count = r.partition(":")
            results += ["%s#%d" % (base, k) for k in range(int(count))] if count else [base]
        for k, r in enumerate(results):
            defs[r] = (name, canon, operands, k)
        ops.append((name, operands, results))
    return defs, ops


def expression(defs, value, memo):
    """A canonical text of what computes `value`, back to the arguments."""
    if value in memo:
        return memo[value]
    if value not in defs:
        if "#" not in value and value + "#0" in defs:
            return expression(defs, value + "#0", memo)
        memo[value] = value  # a function argument, named by its position
        return value
    name, canon, operands, k = defs[value]
    text = "%s[%d](%s)" % (canon, k, ",".join(expression(defs, o, memo) for o in operands))
    memo[value] = text = "h%x" % (hash(text) & 0xffffffffffff)
    return text


def check_data_flow(graph, scheduled):
    gdefs, gops = values(graph)
    sdefs, sops = values(scheduled)
    gmemo, smemo = {}, {}
    # The unscheduled step: parameter argument -> the gradient it all-reduces.
    want = {}
    for name, operands, results in gops:
        if name in UPDATES:
            reduced = operands[1]
            op, _, ar_operands, k = gdefs[reduced if reduced in gdefs else reduced + "#0"]
            assert op == "braid.all_reduce", (name, reduced, op)
            want[operands[0]] = expression(gdefs, ar_operands[k], gmemo)
    assert want, "no optimizer update in the unscheduled step"
    # The scheduled step: parameter argument -> what its update's gradient
    # is, through the wait and its start.
    used = {}
    for name, operands, results in sops:
        if name not in UPDATES:
            continue
        grad = operands[1]
        key = grad if grad in sdefs else grad + "#0"
        op, _, wait_operands, k = sdefs[key]
        assert op == "braid.wait", "the update of %s reads %s, not a wait's result" % (
            operands[0], op)
        start, _, start_operands, _ = sdefs[wait_operands[0]]
        assert start == "braid.all_reduce_start", start
        source = (wait_operands[0], k)
        assert source not in used, "%s#%d feeds the updates of %s and %s" % (
            wait_operands[0], k, used[source], operands[0])
        used[source] = operands[0]
        got = expression(sdefs, start_operands[k], smemo)
        assert operands[0] in want, "update of %s, which the step does not update" % operands[0]
        assert got == want[operands[0]], (
            "the update of %s gets a reduced value that is not its gradient" % operands[0])
    assert sorted(used.values()) == sorted(want), (sorted(used.values()), sorted(want))


main(*sys.argv[1:])
