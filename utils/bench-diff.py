#!/usr/bin/env python3
"""What changed between two runs of a benchmark command, row by row.

    utils/bench-diff.py OLD.md NEW.md [--threshold 2]

OLD and NEW are the outputs of the same command (utils/bench-overlap.py,
bench-tensor-parallel.py, bench-recipe.py), for example with --cost-model
v1 and v2. Rows of their markdown tables are matched by their text cells
(model, cluster, ...) in order; for each figure (a cell of numbers, "a / b /
c" cells figure by figure) that moved by more than the threshold, in
percent, it prints the row, the column and old -> new. docs/Benchmarks.md
explains every such change.
"""

import argparse
import re
import sys

NUMBER = re.compile(r"^\**([-+]?[0-9]+(?:\.[0-9]+)?)[x%]?(?::.*)?\**$")


def tables(path):
    """[(header cells, [row cells])] of each markdown table in the file."""
    out, header, rows = [], None, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.startswith("|"):
                if header:
                    out.append((header, rows))
                header, rows = None, []
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(set(c) <= set("-:") for c in cells):
                rows.append(cells)
    if header:
        out.append((header, rows))
    return out


def figures(cell):
    """The numbers of a cell ("1.2 / 3.4" -> [1.2, 3.4]), or None for text."""
    parts = [p.strip() for p in cell.split(" / ")]
    values = [NUMBER.match(p) for p in parts]
    if not all(values):
        return None
    return [float(v.group(1)) for v in values]


def key(row):
    return tuple(c for c in row if figures(c) is None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threshold", type=float, default=2.0, help="percent (default 2)")
    args = ap.parse_args()
    old, new = tables(args.old), tables(args.new)
    if len(old) != len(new):
        sys.exit("bench-diff: %d tables in %s, %d in %s" % (len(old), args.old, len(new),
                                                            args.new))
    changes = 0
    for (header, rows), (header2, rows2) in zip(old, new):
        if header != header2 or [key(r) for r in rows] != [key(r) for r in rows2]:
            sys.exit("bench-diff: the tables headed %s do not have the same rows" % header[:3])
        for a, b in zip(rows, rows2):
            moved = []
            for name, x, y in zip(header, a, b):
                fx, fy = figures(x), figures(y)
                if fx is None or fy is None or len(fx) != len(fy):
                    continue
                for i, (u, v) in enumerate(zip(fx, fy)):
                    if abs(v - u) > args.threshold / 100 * max(abs(u), 1e-12):
                        label = name
                        if len(fx) > 1:
                            # "step ms naive / ddp / braid": "step ms ddp".
                            parts = name.split(" / ")
                            prefix = parts[0].rsplit(" ", 1)[0]
                            names = [parts[0]] + [prefix + " " + q for q in parts[1:]]
                            label = (names[i] if len(names) == len(fx)
                                     else "%s [%d]" % (name, i + 1))
                        moved.append("%s %g -> %g (%+.1f%%)" % (label, u, v, 100 * (v / u - 1)
                                                                if u else float("inf")))
            if moved:
                changes += 1
                print("%s: %s" % (" | ".join(key(a)), "; ".join(moved)))
    print("%d rows changed by more than %g%%" % (changes, args.threshold))


if __name__ == "__main__":
    main()
