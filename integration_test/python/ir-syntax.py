# braid.ir writes every op from the table generated from the ODS
# (braid.op_table.SYNTAX: arguments by ODS name and the assembly format),
# not from templates of its own. Each construct of the declarative formats
# braid uses is written as the ODS says: operands and their types, a
# variadic operand, an attribute where the format places it (integer,
# float, list, enum, symbol, strings), the attribute dictionary (flags and
# the rest, by name as MLIR prints it), an optional group with its anchor
# absent and present, and the alternative of the updates' learning rate
# (an operand or an attribute). What it writes verifies with braid-opt, and
# an argument the op does not have is an error naming it.
#
# RUN: %python %s %braid_bin/braid-opt

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

from braid import ir
from braid.op_table import SYNTAX

check = braidtest.Checker()


b = ir.StepBuilder("f", 2)
x = b.arg("batch", "x", (4, 8))
w = b.param("w", (4, 8))
labels = b.arg("batch", "labels", (4,), "i64")
lr = b.arg("hyperparameter", "lr", ())
g = b.arg("batch", "g", (4, 8))
buf = b.arg("batch", "buf", (4, 8))
bias = b.arg("batch", "bias", (8,))

written = [
    (b.matmul(x, w, tb=True, hint="mm"),
     "%mm = braid.matmul %x, %w {transpose_b} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>"),
    (b.op("matmul", "mmp", lhs=x, rhs=w, transpose_b=True, lhs_permutation=[0, 1]),
     "%mmp = braid.matmul %x, %w {lhs_permutation = array<i64: 0, 1>, transpose_b} "
     ": tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>"),
    (b.reduce_sum(x, [1], keep_dims=True, hint="s"),
     "%s = braid.reduce_sum %x dims = [1] {keep_dims} : tensor<4x8xf32> -> tensor<4x1xf32>"),
    (b.concat([x, x], 0, hint="c"),
     "%c = braid.concat %x, %x dim = 0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>"),
    (b.gelu(x, tanh=False, hint="gl"), "%gl = braid.gelu %x : tensor<4x8xf32>"),
    (b.op("gelu", "glb", input=x, bias=bias, approximate_tanh=True),
     "%glb = braid.gelu %x, %bias {approximate_tanh} : tensor<4x8xf32>, tensor<8xf32>"),
    (b.nll_loss(x, labels, hint="loss"),
     "%loss = braid.nll_loss %x, %labels reduction = mean : tensor<4x8xf32>, tensor<4xi64> "
     "-> tensor<f32>"),
    (b.nll_loss(x, labels, "sum", ignore_index=-100, hint="loss"),
     "%loss_1 = braid.nll_loss %x, %labels reduction = sum ignore_index = -100 "
     ": tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>"),
    (b.unary("tanh", x, hint="th"), "%th = braid.unary tanh %x : tensor<4x8xf32>"),
    (b.grad_all_reduce(g, "w"),
     '%g_w = braid.all_reduce %g on @world grid_axes = [0] reduction = avg grad_of = ["w"] '
     ': tensor<4x8xf32>'),
    (b.scale(x, 0.5, hint="h"), "%h = braid.scale %x by 5.000000e-01 : tensor<4x8xf32>"),
    (b.sgd("w", g, buf, 0.1, 0.9, dampening=0.1)[0],
     "%new_w, %new_w_momentum = braid.sgd %w, %g, %buf lr = 1.000000e-01 "
     "momentum = 9.000000e-01 weight_decay = 0.000000e+00 "
     "{dampening = 1.000000e-01 : f64} : tensor<4x8xf32>"),
    (b.sgd("w", g, buf, lr, 0.0)[0],
     "%new_w_1, %new_w_momentum_1 = braid.sgd %w, %g, %buf lr = %lr momentum = 0.000000e+00 "
     "weight_decay = 0.000000e+00 : tensor<4x8xf32>"),
]
for value, line in written:
    ok = line in b.body
    check(ok, "written as the ODS says: %s" % line if ok else "expected %s; the body has %s"
          % (line, [l for l in b.body if l.split(" = ", 1)[0].split(",")[0] == value.name]))

# Every op of the dialect has its syntax in the table, and every name its
# format uses is an argument or a result of the op.
def names(elements):
    for e in elements:
        if e[0] in ("var", "type"):
            yield e[1]
        elif e[0] in ("optional", "alternative"):
            yield e[1]
            for group in e[2:]:
                yield from names(group)


for op, syntax in SYNTAX.items():
    known = {n for n, _ in syntax.arguments} | {n for n, _ in syntax.results}
    unknown = sorted(set(names(syntax.format)) - known)
    if unknown:
        check(False, "%s's format names %s, which it does not have" % (op, unknown))
check(len(SYNTAX) > 70, "the table has the syntax of %d ops" % len(SYNTAX))

# An argument the op does not have.
try:
    b.op("relu", "r", input=x, transpose_b=True)
    check(False, "an unknown argument is refused")
except ValueError as e:
    check(str(e) == "braid.relu has no argument transpose_b", "an unknown argument: %s" % e)

# What it wrote verifies.
b.result(written[0][0])
verified = subprocess.run([sys.argv[1], "-"], input=b.text(), capture_output=True, text=True)
check(verified.returncode == 0, "braid-opt verifies what it wrote%s"
      % ("" if verified.returncode == 0 else ": " + verified.stderr))

check.finish("ir-syntax")
