# Writes step-count.test's inputs into the folder argv[1] names.
import os
import sys

import numpy as np

out = sys.argv[1]
good = {"w": np.ones((8, 8), np.float32),
        "w.exp_avg": np.zeros((8, 8), np.float32),
        "w.exp_avg_sq": np.zeros((8, 8), np.float32),
        "count": np.array(3.0, np.float32),
        "draws": np.array(7.0, np.float32),
        "step": np.array(2.5, np.float32)}
np.savez(os.path.join(out, "good.npz"), **good)
np.savez(os.path.join(out, "count.npz"), **dict(good, count=np.array(2.5, np.float32)))
np.savez(os.path.join(out, "draws.npz"), **dict(good, draws=np.array(-1.0, np.float32)))
np.savez(os.path.join(out, "x.npz"), x=np.ones((4, 8), np.float32))
