# braidtest.max_rel_diff, the comparison every runtime and export test uses:
# an error in a small entry counts relative to that entry (not hidden by the
# tensor's largest one), shapes must be equal (no broadcasting), and NaN or
# infinity is an infinite difference.
#
# REQUIRES: numpy
# RUN: %python %s

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime", "Inputs"))
import braidtest  # noqa: E402

assert braidtest.REL_FLOOR == 1e-2
ref = np.array([100.0, 2.0, -2.0])
# 2e-3 off the entry 2.0: 1e-3 relative to it (the old measure, divided by
# the largest entry, read 2e-5).
got = ref + np.array([0.0, 2e-3, 0.0])
assert abs(braidtest.max_rel_diff(got, ref) - 1e-3) < 1e-12, braidtest.max_rel_diff(got, ref)
# An entry below REL_FLOOR of the largest is judged against the floor
# (here 1.0); the floor is a parameter.
tiny = np.array([100.0, 1e-9])
assert abs(braidtest.max_rel_diff(tiny + [0, 1e-4], tiny) - 1e-4) < 1e-12
assert abs(braidtest.max_rel_diff(tiny + [0, 1e-4], tiny, floor=1e-3) - 1e-3) < 1e-12
assert braidtest.max_rel_diff(ref, ref) == 0.0
# Shapes: (3,) against (1, 3) or a scalar is an error, not a broadcast.
for other in (ref.reshape(1, 3), np.array(1.0)):
    try:
        braidtest.max_rel_diff(other, ref)
    except braidtest.ShapeMismatch as e:
        assert "shape" in str(e)
    else:
        sys.exit("a shape mismatch %s vs %s was not reported" % (other.shape, ref.shape))
assert braidtest.max_rel_diff([np.nan, 1.0, 2.0], [1.0, 1.0, 2.0]) == float("inf")
assert braidtest.max_rel_diff([1.0, 1.0, 2.0], [np.inf, 1.0, 2.0]) == float("inf")
print("braidtest-compare: ok")
