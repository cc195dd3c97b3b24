"""Print the schedule of a compiled step for people.

    braid-compile step.mlir --cluster=h100-8x8 --schedule-report=step.schedule.json -o step.plan
    python3 -m braid.schedule step.schedule.json

Reads the schedule report that braid-compile --schedule-report (or
braid-translate --braid-to-schedule-report on any braid IR) writes, a JSON
object the compiler makes from the scheduled IR, and prints the streams (ops
on each), every gradient bucket in issue order (its bytes, its parameters,
where it starts and where it is waited for) and the cross-stream events.
Only the standard library.
"""

import argparse
import json
import sys

from braid._cli import module_command

FIELDS = ("function", "world", "ops", "streams", "events", "sync_collectives", "buckets")


def load(text):
    """The report as a dict; ValueError if it is not one."""
    report = json.loads(text)
    if not isinstance(report, dict) or any(k not in report for k in FIELDS):
        raise ValueError("not a schedule report (it needs %s)" % ", ".join(FIELDS))
    return report


def _size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def _stream(s):
    return "%s stream %d" % tuple(s) if s else "no stream"


def format_summary(s, width=100):
    out = ["schedule of @%s (%s ranks): %d ops" % (s["function"], s["world"], s["ops"])]
    out.append("  streams: " + ", ".join("%s (%d ops)" % (_stream(e["stream"]), e["ops"])
                                         for e in s["streams"]))
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
    parser = argparse.ArgumentParser(prog=module_command("braid.schedule"),
                                     description="Print the streams and gradient buckets of a "
                                                 "scheduled braid step, from the report of "
                                                 "braid-compile --schedule-report.")
    parser.add_argument("input", help="schedule report (JSON); - reads standard input")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    except OSError as e:
        print("braid.schedule: error: %s" % e, file=sys.stderr)
        return 1
    try:
        report = load(text)
    except ValueError as e:
        print("braid.schedule: error: %s: %s; write one with braid-compile "
              "--schedule-report=FILE or braid-translate --braid-to-schedule-report"
              % (args.input, e), file=sys.stderr)
        return 1
    print(format_summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
