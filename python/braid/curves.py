"""Draws the loss curves of `braid-run --metrics` logs as a PNG.

    python3 -m braid.curves METRICS.jsonl [MORE.jsonl ...] -o loss.png [--title T]

One line a file, the loss against the step (a restarted run's log, which
`--resume` appends to, repeats the steps it took again after its
checkpoint: the later value of a step is drawn), and, where the log has
evaluations (`braid-run --eval-data`: lines with `eval_loss`), their loss
as a second line of points in the same color. Prints each file's first
and last loss, and evaluation loss.
"""

import argparse
import json
import os
import sys

from braid._cli import module_command


def load(path):
    """The (step, loss) pairs of a metrics log, by step, later lines
    replacing earlier ones of the same step."""
    return load_all(path)[0]


def load_all(path):
    """The (step, loss) pairs of a metrics log and its (step, eval_loss)
    pairs, each by step, later lines replacing earlier ones of the same
    step."""
    losses, evals = {}, {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as e:
                raise ValueError("%s:%d: not a JSON line: %s" % (path, number, e)) from None
            if "step" not in entry:
                raise ValueError("%s:%d: no 'step'" % (path, number))
            if "loss" in entry:
                losses[int(entry["step"])] = float(entry["loss"])
            if "eval_loss" in entry:
                evals[int(entry["step"])] = float(entry["eval_loss"])
    if not losses:
        raise ValueError("%s: no step with a loss" % path)
    return sorted(losses.items()), sorted(evals.items())


def draw(curves, out, title=None, evals=None):
    """Writes the PNG of `curves` ({label: [(step, loss), ...]}) and of
    `evals` ({label: [(step, eval loss), ...]}, drawn as points joined in
    its curve's color) to `out`; returns the matplotlib figure."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("braid.curves draws with matplotlib, which %s lacks (Debian's "
                           "/usr/bin/python3 has it: python3-matplotlib)" % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in curves.items():
        steps, losses = [s for s, _ in points], [v for _, v in points]
        # A loss a step is noisy (each step a new batch): the steps faint,
        # their running mean over about a 50th of the run drawn over them.
        width = len(points) // 50
        if width >= 2:
            raw, = ax.plot(steps, losses, alpha=0.3, linewidth=0.8)
            means = [sum(losses[max(0, i - width + 1):i + 1]) / (i + 1 - max(0, i - width + 1))
                     for i in range(len(losses))]
            line, = ax.plot(steps, means, color=raw.get_color(),
                            label="%s (train, mean of %d steps)" % (label, width))
        else:
            line, = ax.plot(steps, losses, label=label)
        held = (evals or {}).get(label)
        if held:
            ax.plot([s for s, _ in held], [v for _, v in held], "o--", color=line.get_color(),
                    markeredgecolor="black", linewidth=1.5, zorder=3,
                    label=label + " (eval)")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(prog=module_command("braid.curves"),
                                     description=__doc__.splitlines()[0])
    parser.add_argument("metrics", nargs="+", help="braid-run --metrics files")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    parser.add_argument("--title", help="the plot's title")
    args = parser.parse_args(argv)
    try:
        loaded = {path: load_all(path) for path in args.metrics}
        curves = {path: train for path, (train, _) in loaded.items()}
        evals = {path: held for path, (_, held) in loaded.items() if held}
    except (OSError, ValueError) as e:
        print("braid.curves: error: %s" % e, file=sys.stderr)
        return 1
    try:
        # Each curve is labeled by its file's name, or path where names repeat.
        names = [os.path.basename(p) for p in curves]
        label = {p: n if names.count(n) == 1 else p for p, n in zip(curves, names)}
        draw({label[p]: v for p, v in curves.items()}, args.output, args.title,
             {label[p]: v for p, v in evals.items()})
    except RuntimeError as e:
        print("braid.curves: error: %s" % e, file=sys.stderr)
        return 1
    for path, points in curves.items():
        print("%s: %d steps, loss %.4f at step %d -> %.4f at step %d" % (
            path, len(points), points[0][1], points[0][0], points[-1][1], points[-1][0]))
        held = evals.get(path)
        if held:
            print("%s: %d evaluations, eval loss %.4f at step %d -> %.4f at step %d" % (
                path, len(held), held[0][1], held[0][0], held[-1][1], held[-1][0]))
    print("wrote %s" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
