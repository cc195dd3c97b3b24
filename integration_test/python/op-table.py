# The Python package's op table (braid.op_table, generated from the ODS and
# kept equal to the build's by docs-up-to-date.test) is what braid.ir checks
# the ops it writes against: an op the dialect does not have and a wrong
# result count are errors when the IR is built. Every op the model
# generators write is in the table, and every collective there has a start
# form of its kind.
#
# RUN: %python %s

import contextlib
import io
import re
import sys

from braid import ir, models
from braid.op_table import OPS, InstrKind

failures = 0


def check(ok, what):
    global failures
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    failures += not ok


b = ir.StepBuilder("f", 2)
x = b.arg("batch", "x", (4, 8))
try:
    b.op("relux", "y", input=x)
    check(False, "an op the dialect does not have is refused")
except ValueError as e:
    check("braid.relux is not an op of the braid dialect" in str(e),
          "an op the dialect does not have is refused: %s" % e)
try:
    b.op("relu", ["a", "b"], input=x)
    check(False, "a wrong result count is refused")
except ValueError as e:
    check("braid.relu yields 1 values, not 2" in str(e), "a wrong result count is refused: %s" % e)

# The ops the generators write (a GPT and an MLP step) are all in the table.
out = io.StringIO()
with contextlib.redirect_stdout(out):
    models.main(["gpt", "--tiny", "--world-size", "2", "-o", "-"])
    models.main(["mlp", "--tiny", "--world-size", "2", "-o", "-"])
used = set(re.findall(r"^\s*(?:%[^=]*= )?braid\.(\w+)", out.getvalue(), re.M))
missing = sorted(u for u in used if u not in OPS)
check(len(used) > 10 and not missing, "the generators' %d ops are in the table%s" % (
    len(used), "" if not missing else " (missing %s)" % missing))

opcodes = [v.opcode for v in OPS.values()]
check(len(set(opcodes)) == len(opcodes), "opcodes are unique")
for name, op in OPS.items():
    # A collective kind exactly where the op is one.
    collective = op.kind in (InstrKind.Collective, InstrKind.CollectiveStart)
    check((op.collective is not None) == collective,
          "%s: %s, collective kind %s" % (name, op.kind.name, op.collective))
    if op.kind is InstrKind.Collective:
        start = OPS.get(name + "_start")
        check(start is not None and start.kind is InstrKind.CollectiveStart
              and start.collective is op.collective and start.opcode == op.opcode + 1,
              "%s has its start form (opcode %d, kind %s)"
              % (name, op.opcode + 1, op.collective.name))
print("op-table: %d failed" % failures)
sys.exit(1 if failures else 0)
