# The cuda kernels that reduce rows and columns (CudaReductions.cu) and GELU
# with its backward (CudaElementwise.cu) compute in FP32: FP64 is a small
# fraction of FP32 throughput on H100-class GPUs. The build compiles both
# files to PTX as well (braid-runtime-cuda-ptx); this test reads it:
#
#   - no FP64 instruction (an opcode with a .f64 type, or a %fd register)
#     anywhere in CudaReductions.cu's PTX, nor in the GELU kernels and the
#     functions they call;
#   - the row kernels are block-parallel: the forEachRowKernel entries
#     (a block per row) combine their threads with warp shuffles and a
#     barrier, but for the two that give each thread its own columns;
#   - the detector finds the FP64 that the rarer elementwise kernels keep
#     on purpose (braid.pow, braid.unary in double), so it can fail.
#
# REQUIRES: cuda-backend
# RUN: %python %s %braid_obj

import glob
import os
import re
import sys

FP64 = re.compile(r"\.f64\b|%fd\d")
HEADER = re.compile(r"^(?:\.visible |\.weak )?\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
CALL = re.compile(r"call(?:\.uni)?\s*(?:\([^)]*\),\s*)?([\w$]+)")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def functions(path):
    """{name: (kind, lines)} of the PTX's .entry and .func definitions."""
    found, name, body = {}, None, []
    with open(path) as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                name, body = m.group(2), []
                found[name] = (m.group(1), body)
            elif name is not None:
                body.append(line)
                if line.startswith("}"):
                    name = None
    return found


def fp64_lines(fns, name, seen=None):
    """The FP64 instructions of function `name` and those it calls."""
    seen = set() if seen is None else seen
    if name in seen or name not in fns:
        return []
    seen.add(name)
    lines = [l.strip() for l in fns[name][1] if FP64.search(l) and not l.strip().startswith("//")]
    for l in fns[name][1]:
        for callee in CALL.findall(l):
            lines += fp64_lines(fns, callee, seen)
    return lines


def ptx(obj, name):
    paths = [p for p in glob.glob(os.path.join(obj, "**", name), recursive=True)
             if "braid-runtime-cuda-ptx" in p]
    if not paths:
        sys.exit("cuda-ptx: no %s under %s (is braid-runtime-cuda-ptx built?)" % (name, obj))
    return paths[0]


def main():
    obj = sys.argv[1]
    red = functions(ptx(obj, "CudaReductions.ptx"))
    entries = [n for n, (k, _) in red.items() if k == "entry"]
    check(len(entries) >= 15, "CudaReductions.ptx has %d kernels" % len(entries))
    bad = {n: fp64_lines(red, n) for n in entries}
    bad = {n: l for n, l in bad.items() if l}
    check(not bad, "no FP64 in CudaReductions.cu's kernels (%d with some%s)" % (
        len(bad), "".join("\n       %s: %s" % (n[:90], l[0]) for n, l in bad.items())))
    rows = [n for n in entries if "forEachRowKernel" in n]
    reducing = [n for n in rows if "shfl.sync.bfly" in "".join(red[n][1])
                and "bar.sync" in "".join(red[n][1])]
    # The others (the embedding backward's rows, the vocabulary-parallel
    # backward's) give each thread its own columns of the row.
    check(len(rows) >= 10 and len(reducing) >= len(rows) - 2,
          "%d row kernels (a block per row), %d of them combining their threads "
          "with warp shuffles and a barrier" % (len(rows), len(reducing)))

    elem = functions(ptx(obj, "CudaElementwise.ptx"))
    gelu = [n for n, (k, _) in elem.items() if k == "entry" and "Gelu" in n]
    check(sorted(re.search(r"Gelu\w*?(Forward|Backward)", n).group(1) for n in gelu) ==
          ["Backward", "Forward"], "the GELU kernels: %d" % len(gelu))
    for n in gelu:
        lines = fp64_lines(elem, n)
        check(not lines, "no FP64 in %s%s" % (re.search(r"Gelu\w+?(?=E)", n).group(0),
                                              ": " + lines[0] if lines else ""))
    others = [n for n, (k, _) in elem.items() if k == "entry" and "Gelu" not in n]
    check(any(fp64_lines(elem, n) for n in others),
          "the detector finds the FP64 of the double-precision elementwise kernels")
    print("cuda-ptx: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
