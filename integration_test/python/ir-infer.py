# braid.ir takes the result type of an op whose shape changes from the op
# itself: its InferTypeOpInterface, asked through libBraidCAPI.so
# (braid._native), the rule the verifier checks. Each op braid.ir would
# otherwise compute a shape for gets its type from there; operands an op
# rejects are a ValueError in the verifier's words when the IR is built; a
# missing library is an error naming where it was looked for; and what the
# builder writes verifies with braid-opt.
#
# RUN: %python %s %braid_bin/braid-opt

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

from braid import _native, ir

check = braidtest.Checker()


def raises(error, function):
    try:
        function()
    except error as e:
        return str(e)
    return None


b = ir.StepBuilder("f", 2)
x = b.arg("batch", "x", (4, 8))
w = b.param("w", (16, 8))
ids = b.arg("batch", "ids", (2, 3), "i64")
table = b.param("table", (10, 8))
gamma, beta = b.param("gamma", (8,)), b.param("beta", (8,))
q = b.arg("batch", "q", (2, 4, 8, 16), "bf16")
kv = b.arg("batch", "kv", (2, 2, 8, 16), "bf16")

cases = [
    ("matmul", b.matmul(x, w, tb=True), (4, 16), "f32"),
    ("matmul transpose_a", b.matmul(x, x, ta=True), (8, 8), "f32"),
    ("reduce_sum", b.reduce_sum(x, [0]), (8,), "f32"),
    ("reduce_mean keep_dims", b.reduce_mean(x, [1], keep_dims=True), (4, 1), "f32"),
    ("transpose", b.transpose(x, [1, 0]), (8, 4), "f32"),
    ("concat", b.concat([x, x, x], 1), (4, 24), "f32"),
    ("embedding", b.embedding(table, ids), (2, 3, 8), "f32"),
]
ln, mean, rstd = b.layer_norm(x, gamma, beta)
cases += [("layer_norm", ln, (4, 8), "f32"), ("layer_norm mean", mean, (4,), "f32"),
          ("layer_norm rstd", rstd, (4,), "f32")]
o, lse = b.attention(q, kv, kv, True, 0.25)
cases += [("attention output", o, (2, 4, 8, 16), "bf16"),
          ("attention logsumexp", lse, (2, 4, 8), "f32")]
for what, value, shape, dtype in cases:
    check(value.shape == shape and value.dtype == dtype,
          "%s yields %s %s (inferred: %s %s)" % (what, shape, dtype, value.shape, value.dtype))

# Operands an op rejects: the verifier's words, where the op is built.
y = b.arg("batch", "y", (4, 3))
for what, build, words in [
        ("matmul", lambda: b.matmul(x, y), "'braid.matmul' op contracting sizes differ: lhs has 8, rhs has 4"),
        ("transpose", lambda: b.transpose(x, [1, 1]), "'braid.transpose' op permutation repeats dimension 1"),
        ("reduce_sum", lambda: b.reduce_sum(x, [2]), "'braid.reduce_sum' op reduced dimension 2 is out of range for rank 2"),
        ("concat", lambda: b.concat([x, y], 0), "'braid.concat' op input #1 has size 3 in dimension 1, input #0 has 8"),
        ("attention", lambda: b.attention(q, q, kv, False, 1.0),
         "'braid.attention' op key [2, 4, 8, 16] and value [2, 2, 8, 16] differ in heads or sequence")]:
    message = raises(ValueError, build)
    check(message == words, "%s rejects its operands: %r" % (what, message))

# The attributes the inference reads, in MLIR's generic syntax by the op
# table's kinds (an enum, which the inference does not read, left out).
check(ir._attributes("matmul", {"transpose_b": True, "transpose_a": False,
                                "lhs_permutation": [1, 0], "rhs_slice": None})
      == "{lhs_permutation = array<i64: 1, 0>, transpose_b}",
      "matmul's attribute dictionary: %s" % ir._attributes("matmul", {"transpose_b": True}))
check(ir._attributes("layer_norm", {"epsilon": 1e-5}) == "{epsilon = 1.000000e-05 : f64}",
      "layer_norm's: %s" % ir._attributes("layer_norm", {"epsilon": 1e-5}))
check(ir._attributes("nll_loss", {"reduction": "mean", "ignore_index": -100})
      == "{ignore_index = -100 : i64}",
      "nll_loss's: %s" % ir._attributes("nll_loss", {"reduction": "mean", "ignore_index": -100}))

# An op braid.ir does not know, straight to the library.
message = raises(ValueError, lambda: _native.infer_result_types("braid.relux", [x.type], "{}"))
check(message == "'braid.relux' is not an op of the braid dialect", "unknown op: %r" % message)
message = raises(ValueError, lambda: _native.infer_result_types("braid.matmul", ["tensor<4x8"], "{}"))
check(message is not None and message.startswith(
    "cannot parse the operand types [tensor<4x8] or attributes {} of 'braid.matmul': "),
    "malformed type: %r" % message)

# An unranked operand, which only the library (inferring for an op not
# verified) can be handed: an error, not a crash.
message = raises(ValueError, lambda: _native.infer_result_types(
    "braid.transpose", ["tensor<*xf32>"], "{permutation = array<i64: 1, 0>}"))
check(message == "'braid.transpose' op operands must be ranked tensors, not 'tensor<*xf32>'",
      "unranked operand: %r" % message)

# What the builder wrote verifies.
b.result(ln)
text = b.text()
verified = subprocess.run([sys.argv[1], "-"], input=text, capture_output=True, text=True)
check(verified.returncode == 0, "braid-opt verifies the step%s" % (
    "" if verified.returncode == 0 else ": " + verified.stderr))

# Without the library: an error that says where it looked and what to do.
probe = ("import sys; from braid import ir; b = ir.StepBuilder('f', 1); "
         "x = b.arg('batch', 'x', (2, 2)); b.matmul(x, x)")
env = dict(os.environ, BRAID_CAPI="/nonexistent/libBraidCAPI.so")
missing = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
check(missing.returncode != 0 and "RuntimeError" in missing.stderr
      and "/nonexistent/libBraidCAPI.so" in missing.stderr and "utils/build.sh" in missing.stderr,
      "a missing library is a clear error: %s" % missing.stderr.strip().splitlines()[-1:])

check.finish("ir-infer")
