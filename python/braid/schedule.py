"""Print the schedule of a compiled step for people.

    braid-compile step.mlir --cluster=h100-8x8 --emit=mlir -o step.scheduled.mlir
    python3 -m braid.schedule step.scheduled.mlir

Reads the scheduled IR that `braid-compile --emit=mlir` (or the braid-overlap
pass) writes and prints the streams (ops on each), every gradient bucket in
issue order (its bytes, its parameters, where it starts and where it is
waited for) and the cross-stream events. Only the standard library.
"""

import argparse
import re
import sys

_OP = re.compile(r"^\s*(?:(%[\w.]+)(?::\d+)?(?:\s*,\s*%[\w.]+(?::\d+)?)*\s*=\s*)?(braid\.\w+|func\.return|return)\b(.*)$")
_STREAM = re.compile(r"braid\.stream = #braid\.stream<(\w+), (\d+)>")
_GRAD_OF = re.compile(r'grad_of = \[([^\]]*)\]')
_INT_ATTR = r"%s = (\d+)"


def parse(text):
    """The ops of the (first) step function: dicts with name, op, stream,
    result and the line's text."""
    ops = []
    inside = False
    for line in text.splitlines():
        if not inside:
            inside = "func.func @" in line
            continue
        m = _OP.match(line)
        if not m:
            continue
        result, op, rest = m.groups()
        if op in ("func.return", "return"):
            break
        s = _STREAM.search(rest)
        ops.append({"op": op[len("braid."):], "result": result, "text": rest,
                    "stream": (s.group(1), int(s.group(2))) if s else None})
    return ops


def summarize(text):
    ops = parse(text)
    name = re.search(r"func\.func @([\w.$-]+)", text)
    world = re.search(r"shard\.grid @\w+\(shape = ([\dx]+)\)", text)
    streams = {}
    for o in ops:
        streams[o["stream"]] = streams.get(o["stream"], 0) + 1
    buckets = []
    starts = {}
    for i, o in enumerate(ops):
        if o["op"].endswith("_start") and "grad_of" in o["text"]:
            g = _GRAD_OF.search(o["text"])
            b = re.search(_INT_ATTR % "bucket_bytes", o["text"])
            idx = re.search(_INT_ATTR % "bucket_index", o["text"])
            bucket = {"kind": o["op"][:-len("_start")], "position": i + 1,
                      "stream": o["stream"], "bytes": int(b.group(1)) if b else None,
                      "index": int(idx.group(1)) if idx else None,
                      "params": [p.strip().strip('"') for p in g.group(1).split(",")],
                      "wait": None}
            buckets.append(bucket)
            if o["result"]:
                starts[o["result"]] = bucket
        elif o["op"] == "wait":
            f = re.match(r"\s*(%[\w.]+)", o["text"])
            if f and f.group(1) in starts:
                starts[f.group(1)]["wait"] = (i + 1, o["stream"])
    events = sum(1 for o in ops if o["op"] == "record_event")
    return {"function": name.group(1) if name else "?", "world": world.group(1) if world else "?",
            "ops": len(ops), "streams": streams, "buckets": buckets, "events": events,
            "sync_collectives": sum(1 for o in ops if o["op"] == "all_reduce")}


def _size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def _stream(s):
    return "%s stream %d" % s if s else "no stream"


def format_summary(s, width=100):
    out = ["schedule of @%s (%s ranks): %d ops" % (s["function"], s["world"], s["ops"])]
    out.append("  streams: " + ", ".join("%s (%d ops)" % (_stream(k), n) for k, n in
                                         sorted(s["streams"].items(), key=lambda kv: str(kv[0]))))
    out.append("  cross-stream events: %d" % s["events"])
    if s["sync_collectives"]:
        out.append("  synchronous all-reduces (not overlapped): %d" % s["sync_collectives"])
    out.append("  gradient buckets: %d, in issue order" % len(s["buckets"]))
    for b in s["buckets"]:
        wait = "waited at op %d on %s" % (b["wait"][0], _stream(b["wait"][1])) if b["wait"] \
            else "never waited"
        n = len(b["params"])
        out.append("  bucket %s: %s (%s bytes), %d gradient%s, %s starts at op %d of %d (%d%%) "
                   "on %s, %s" % (b["index"] if b["index"] is not None else "-",
                                  _size(b["bytes"] or 0), b["bytes"], n, "" if n == 1 else "s",
                                  b["kind"],
                                  b["position"], s["ops"], 100 * b["position"] // max(s["ops"], 1),
                                  _stream(b["stream"]), wait))
        line = "    "
        for p in b["params"]:
            if len(line) + len(p) + 1 > width:
                out.append(line.rstrip())
                line = "    "
            line += p + " "
        out.append(line.rstrip())
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m braid.schedule",
                                     description="Print the streams and gradient buckets of a "
                                                 "scheduled braid step (braid-compile --emit=mlir).")
    parser.add_argument("input", help="scheduled IR; - reads standard input")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    except OSError as e:
        print("braid.schedule: error: %s" % e, file=sys.stderr)
        return 1
    if "func.func @" not in text:
        print("braid.schedule: error: %s has no step function" % args.input, file=sys.stderr)
        return 1
    print(format_summary(summarize(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
