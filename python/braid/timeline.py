"""Renders a Chrome trace of `braid-run --backend=sim --trace` as a PNG.

    python3 -m braid.timeline trace.json -o timeline.png [--ranks N]
    python3 -m braid.timeline trace.json --text [--ranks N]
    python3 -m braid.timeline trace.json --streams FROM TO [--unit US]

One row per (rank, stream); kernels blue, collectives orange. A pipelined
plan's trace (braid-pipeline tags each kernel with its schedule's action)
is drawn as the pipeline diagram: each rank's stage on its row, kernels
coloured by micro-batch, forwards full, backwards (B) lighter, W lightest,
the optimizer grey. Perfetto (ui.perfetto.dev) opens the same trace
interactively.

`--streams FROM TO` prints one rank's streams between two times (in
microseconds of the trace) as text, a row a stream and a column a `--unit`
(10 µs by default), each column the letter of the op that starts or runs
there: M matmul, A attention, n layer norm, + add, c a copy (slice,
concat, shard_slice, shard_concat), . another kernel; g all-gather, s
reduce-scatter, r all-reduce, p collective permute, ~ another collective
(docs/TensorParallel.md draws a layer's forward and backward with it).

`--text` prints a pipelined trace's diagram as text instead, one line per
rank: each action (F3, B3, W3: micro-batch 3's forward, input gradient and
weight gradient) at its place in time, a column per `--unit` of time (the
median action's by default; an action takes at least one column and starts
no earlier than the one before it ends), '.' where the stage computes
nothing of an action, '-' where an action lasts more than one column.
"""

import argparse
import json
import sys

from braid._cli import module_command


def load(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise ValueError("%s: not a Chrome trace (no traceEvents list)" % path)
    names = {}
    processes = {}
    spans = []
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "process_name":
            processes[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            spans.append(e)
    for (pid, tid), name in names.items():
        if pid in processes:
            names[(pid, tid)] = "%s %s" % (processes[pid], name)
        else:
            names[(pid, tid)] = "rank %d %s" % (pid, name)
    return names, spans


# The shade of each action kind of a pipeline diagram: forwards full,
# backwards (B) lighter, W lightest.
SHADES = {"F": 1.0, "B": 0.65, "W": 0.35}


def _mix(color, shade):
    """`color` (r, g, b) towards white by 1 - shade."""
    return tuple(1 - shade * (1 - c) for c in color[:3])


def render(trace_path, out_path, max_ranks=8, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, spans = load(trace_path)
    rows = sorted(k for k in names if k[0] < max_ranks)
    if not rows:
        raise ValueError("%s: the trace has no streams" % trace_path)
    index = {k: i for i, k in enumerate(rows)}
    colors = {"compute": "#4C72B0", "comm": "#DD8452", "rest": "#999999"}
    pipelined = any("micro_batch" in e.get("args", {}) for e in spans)
    palette = plt.get_cmap("tab10")
    # (colour) -> segments of each row.
    bars = {}
    end = 0.0
    for e in spans:
        k = (e["pid"], e["tid"])
        if k not in index:
            continue
        cat = e.get("cat", "compute")
        color = colors[cat]
        args = e.get("args", {})
        if pipelined and cat == "compute":
            if "micro_batch" in args:
                color = _mix(palette(args["micro_batch"] % 10), SHADES[args["action"][0]])
            else:
                color = colors["rest"]
        bars.setdefault(color, [[] for _ in rows])[index[k]].append(
            (e["ts"] / 1e3, e["dur"] / 1e3))
        end = max(end, (e["ts"] + e["dur"]) / 1e3)
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(rows) + 1.2))
    for color, per_row in bars.items():
        for i, segments in enumerate(per_row):
            if segments:
                ax.broken_barh(segments, (i - 0.4, 0.8), facecolors=[color], edgecolor="none")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names[k] for k in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01 if end else 1)
    ax.set_xlabel("ms")
    if pipelined:
        batches = sorted({e["args"]["micro_batch"] for e in spans if "micro_batch" in e.get("args", {})})
        shown = batches[:10]
        handles = [plt.Rectangle((0, 0), 1, 1, color=palette(b % 10)) for b in shown]
        labels = ["micro-batch %d" % b for b in shown]
        for kind, shade in SHADES.items():
            handles.append(plt.Rectangle((0, 0), 1, 1, color=_mix(palette(0), shade)))
            labels.append({"F": "forward", "B": "backward (B)", "W": "W"}[kind])
        handles += [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in ("rest", "comm")]
        labels += ["optimizer", "transfers, collectives"]
    else:
        handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in ("compute", "comm")]
        labels = ["kernels", "collectives"]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or trace_path)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    batches = {e["args"]["micro_batch"] for e in spans if "micro_batch" in e.get("args", {})}
    return len(rows), sum(len(s) for p in bars.values() for s in p), len(batches)


def actions(spans):
    """Per rank, its actions in time order: (start, end, label), the kernels
    of one action (consecutive, one label) merged."""
    per_rank = {}
    for e in sorted(spans, key=lambda e: e["ts"]):
        label = e.get("args", {}).get("action")
        if label is None or e.get("cat", "compute") != "compute":
            continue
        row = per_rank.setdefault(e["pid"], [])
        start, end = e["ts"], e["ts"] + e["dur"]
        if row and row[-1][2] == label:
            row[-1] = (row[-1][0], max(row[-1][1], end), label)
        else:
            row.append((start, end, label))
    return per_rank


def text(trace_path, max_ranks=8, unit=None):
    """The pipeline diagram as lines of text (see the module's doc)."""
    names, spans = load(trace_path)
    per_rank = actions(spans)
    if not per_rank:
        raise ValueError("%s: not a pipelined trace (no kernel names an action; "
                         "braid-pipeline's plans do)" % trace_path)
    if unit is None:
        durations = sorted(end - start for row in per_rank.values() for start, end, _ in row)
        unit = durations[len(durations) // 2] or 1.0
    elif unit <= 0:
        raise ValueError("--unit must be positive, not %g" % unit)
    else:
        unit *= 1e3  # ms -> the trace's microseconds
    width = max(len(label) for row in per_rank.values() for _, _, label in row) + 1
    columns = max(round(end / unit) for row in per_rank.values() for _, end, _ in row)
    if columns * width > 100000 or columns > 100 * sum(map(len, per_rank.values())):
        raise ValueError("--unit %g ms makes %d columns; choose a larger one" % (unit / 1e3, columns))
    lines = []
    for r in sorted(per_rank)[:max_ranks]:
        cells = []
        for start, end, label in per_rank[r]:
            a = max(round(start / unit), len(cells))
            b = max(round(end / unit), a + 1)
            cells += ["." * width] * (a - len(cells))
            cells += [label.ljust(width)] + ["-" * width] * (b - a - 1)
        lines.append("rank %-3d %s" % (r, "".join(cells).rstrip()))
    return lines


# The letter of each op in --streams (a collective by its name without
# `_start`).
LETTERS = {"matmul": "M", "attention": "A", "attention_backward": "A", "layer_norm": "n",
           "layer_norm_backward": "n", "add": "+", "slice": "c", "concat": "c",
           "shard_slice": "c", "shard_concat": "c", "all_gather": "g", "reduce_scatter": "s",
           "all_reduce": "r", "collective_permute": "p"}


def streams(trace_path, start, end, rank=0, unit=None):
    """Rank `rank`'s streams from `start` to `end` (microseconds) as lines of
    text, a column `unit` microseconds (see the module's doc)."""
    unit = 10.0 if unit is None else unit
    if unit <= 0 or end <= start:
        raise ValueError("--streams needs FROM < TO and a positive --unit")
    columns = int((end - start) / unit) + 1
    if columns > 100000:
        raise ValueError("--unit %g us makes %d columns; choose a larger one" % (unit, columns))
    names, spans = load(trace_path)
    rows = {}
    for e in sorted(spans, key=lambda e: e["ts"]):
        if e["pid"] != rank or e["dur"] <= 0 or e["ts"] + e["dur"] <= start or e["ts"] >= end:
            continue
        name = e["name"].split()[0]
        name = name[:-len("_start")] if name.endswith("_start") else name
        other = "~" if e.get("cat") == "comm" else "."
        letter = LETTERS.get(name, other)
        row = rows.setdefault(e["tid"], [" "] * columns)
        first = max(0, int((e["ts"] - start) / unit))
        last = max(first + 1, int((e["ts"] + e["dur"] - start) / unit))
        for c in range(first, min(last, columns)):
            if row[c] in " .~":
                row[c] = letter
    if not rows:
        raise ValueError("%s: rank %d runs nothing from %g to %g us" % (
            trace_path, rank, start, end))
    width = max(len(names.get((rank, tid), str(tid))) for tid in rows)
    return ["%s |%s|" % (names.get((rank, tid), str(tid)).ljust(width), "".join(rows[tid]))
            for tid in sorted(rows)]


def main(argv=None):
    parser = argparse.ArgumentParser(prog=module_command("braid.timeline"), description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", help="the PNG to write")
    parser.add_argument("--text", action="store_true",
                        help="print the pipeline diagram as text instead")
    parser.add_argument("--unit", type=float,
                        help="with --text: ms per column (default: the shortest action's); "
                             "with --streams: us per column (default 10)")
    parser.add_argument("--streams", nargs=2, type=float, metavar=("FROM", "TO"),
                        help="print the first rank's streams from FROM to TO (us) as text")
    parser.add_argument("--ranks", type=int, default=8, help="ranks to show (default 8)")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    if (args.text + bool(args.output) + bool(args.streams)) != 1:
        parser.error("give one of -o/--output, --text and --streams")
    if args.unit is not None and not (args.text or args.streams):
        parser.error("--unit needs --text or --streams")
    if args.streams:
        try:
            print("\n".join(streams(args.trace, *args.streams, unit=args.unit)))
        except (OSError, ValueError, KeyError) as e:
            sys.exit("braid.timeline: error: %s" % e)
        return
    if args.text:
        try:
            print("\n".join(text(args.trace, args.ranks, args.unit)))
        except (OSError, ValueError, KeyError) as e:
            sys.exit("braid.timeline: error: %s" % e)
        return
    try:
        rows, spans, batches = render(args.trace, args.output, args.ranks, args.title)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("braid.timeline: error: %s" % e)
    print("timeline: %s (%d streams, %d spans%s)" % (
        args.output, rows, spans,
        ", the pipeline diagram of %d micro-batches" % batches if batches else ""))


if __name__ == "__main__":
    main()
