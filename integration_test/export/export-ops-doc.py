# docs/Export.md's lowering table names exactly the aten ops that
# braid.aten.LOWERINGS lowers (by overload packet: `pow` for
# aten.pow.Tensor_Scalar, `masked_fill` for aten.masked_fill.Scalar): an op
# lowered but not documented, or documented but not lowered, fails.
#
# REQUIRES: torch
# RUN: %python %s %braid_src/docs/Export.md

import re
import sys

from braid.aten import LOWERINGS, TORCH2_LOWERINGS, op_name


def documented(path):
    """The backticked names of the aten column of the lowering table."""
    names, inside = set(), False
    for line in open(path):
        if line.startswith("| aten | braid |"):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if inside and not line.startswith("|---"):
            aten = line.split("|")[1]
            names |= {n.split(".")[0] for n in re.findall(r"`([A-Za-z_][A-Za-z_0-9.]*)`", aten)}
    return names


def main():
    doc = documented(sys.argv[1])
    # torch 1.13 lacks the torch 2.x ops, documented all the same.
    lowered = {op_name(op).split(".")[1] for op in LOWERINGS} | set(TORCH2_LOWERINGS)
    missing, extra = sorted(lowered - doc), sorted(doc - lowered)
    print("lowered: %d ops of %d names; documented: %d names" % (len(LOWERINGS), len(lowered),
                                                                  len(doc)))
    if missing:
        print("FAIL lowered but not in docs/Export.md's table: %s" % ", ".join(missing))
    if extra:
        print("FAIL in docs/Export.md's table but not lowered: %s" % ", ".join(extra))
    sys.exit(1 if missing or extra else 0)


if __name__ == "__main__":
    main()
