"""Renders a Chrome trace of `braid-run --backend=sim --trace` as a PNG.

    python3 -m braid.timeline trace.json -o timeline.png [--ranks N]

One row per (rank, stream); kernels blue, collectives orange. A pipelined
plan's trace (braid-pipeline tags each kernel with its schedule's action)
is drawn as the pipeline diagram: each rank's stage on its row, kernels
coloured by micro-batch, forwards full, backwards (B) lighter, W lightest,
the optimizer grey. Perfetto (ui.perfetto.dev) opens the same trace
interactively.
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog=module_command("braid.timeline"), description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    parser.add_argument("--ranks", type=int, default=8, help="ranks to show (default 8)")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        rows, spans, batches = render(args.trace, args.output, args.ranks, args.title)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("braid.timeline: error: %s" % e)
    print("timeline: %s (%d streams, %d spans%s)" % (
        args.output, rows, spans,
        ", the pipeline diagram of %d micro-batches" % batches if batches else ""))


if __name__ == "__main__":
    main()
