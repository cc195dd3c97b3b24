"""Renders a Chrome trace of `braid-run --backend=sim --trace` as a PNG.

    python3 -m braid.timeline trace.json -o timeline.png [--ranks N]

One row per (rank, stream); kernels blue, collectives orange. Perfetto
(ui.perfetto.dev) opens the same trace interactively.
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
    spans = []
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            spans.append(e)
    return names, spans


def render(trace_path, out_path, max_ranks=8, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, spans = load(trace_path)
    rows = sorted(k for k in names if k[0] < max_ranks)
    if not rows:
        raise ValueError("%s: the trace has no streams" % trace_path)
    index = {k: i for i, k in enumerate(rows)}
    colors = {"compute": "#4C72B0", "comm": "#DD8452"}
    bars = {"compute": [[] for _ in rows], "comm": [[] for _ in rows]}
    end = 0.0
    for e in spans:
        k = (e["pid"], e["tid"])
        if k in index:
            bars[e.get("cat", "compute")][index[k]].append((e["ts"] / 1e3, e["dur"] / 1e3))
            end = max(end, (e["ts"] + e["dur"]) / 1e3)
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(rows) + 1.2))
    for cat, per_row in bars.items():
        for i, segments in enumerate(per_row):
            if segments:
                ax.broken_barh(segments, (i - 0.4, 0.8), facecolors=colors[cat],
                               edgecolor="none", label=cat if i == 0 or not ax.get_legend() else None)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(["rank %d %s" % (r, names[(r, t)]) for r, t in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01 if end else 1)
    ax.set_xlabel("ms")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in ("compute", "comm")]
    ax.legend(handles, ["kernels", "collectives"], loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or trace_path)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return len(rows), sum(len(s) for p in bars.values() for s in p)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=module_command("braid.timeline"), description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    parser.add_argument("--ranks", type=int, default=8, help="ranks to show (default 8)")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        rows, spans = render(args.trace, args.output, args.ranks, args.title)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("braid.timeline: error: %s" % e)
    print("timeline: %s (%d streams, %d spans)" % (args.output, rows, spans))


if __name__ == "__main__":
    main()
