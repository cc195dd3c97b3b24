# Checks braid-cost-summary against closed-form costs of the MLP step,
# computed here independently of the C++ cost methods, for several shapes.
#
# RUN: %python %s braid-opt

import random
import re
import subprocess
import sys
import tempfile

from braid.models import mlp


def expected(B, F, H, C):
    """Flops and gradient bytes of one MLP step, op by op."""
    matmuls = 2 * B * F * H + 2 * B * H * C          # forward: h, logits
    matmuls += 2 * C * B * H + 2 * B * C * H         # backward: dW2, da
    matmuls += 2 * H * B * F                         # backward: dW1 (no dx)
    elementwise = (B * H + B * C)                    # bias_add x2
    elementwise += B * H + B * H                     # relu, relu_backward
    elementwise += 6 * B * C + 6 * B * C             # cross_entropy, backward
    elementwise += B * C + B * H                     # reduce_sum for biases
    params = H * F + H + C * H + C
    optimizer = 6 * params                           # sgd with momentum
    return matmuls + elementwise + optimizer, 4 * params


def summary(braid_opt, text):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        out = subprocess.run([braid_opt, "--braid-cost-summary", f.name, "-o", "/dev/null"],
                             check=True, capture_output=True, text=True).stdout
    fields = {}
    for line in out.splitlines():
        m = re.match(r"\s+([a-z ]+?)\s{2,}(\d+)", line)
        if m:
            fields[m.group(1)] = int(m.group(2))
    return fields


def main():
    braid_opt = sys.argv[1]
    rng = random.Random(7)
    shapes = [(64, 784, 1024, 10)] + [
        tuple(rng.randint(1, 300) for _ in range(4)) for _ in range(5)]
    for B, F, H, C in shapes:
        got = summary(braid_opt, mlp(batch=B, features=F, hidden=H, classes=C).text())
        flops, grad_bytes = expected(B, F, H, C)
        assert got["flops"] == flops, ((B, F, H, C), got["flops"], flops)
        assert got["gradient bytes to reduce"] == grad_bytes, (got, grad_bytes)
        assert got["collectives"] == 4, got
        print("ok", (B, F, H, C), flops)


main()
