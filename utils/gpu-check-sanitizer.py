#!/usr/bin/python3
"""utils/gpu-check.sh's compute-sanitizer run: memcheck and initcheck on the
overlapped plans of cuda-train.py's tiny MLP and GPT, 2 steps each.

usage: gpu-check-sanitizer.py OUT_DIR COMPUTE_SANITIZER (from gpu-check.sh,
whose environment points at the bundle's braid-run and plan cache)"""

import importlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "integration_test", "runtime", "Inputs"))
sys.path.insert(0, os.path.join(ROOT, "integration_test", "runtime"))

train = importlib.import_module("cuda-train")


def main():
    out, sanitizer = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    bad = 0
    for model in train.MODELS:
        plan = train.compile_plans(out, model)["overlap"]
        for tool in ("memcheck", "initcheck"):
            p = subprocess.run(
                [sanitizer, "--tool", tool, "--error-exitcode", "9",
                 os.path.join(os.environ["BRAID_BIN"], "braid-run"),
                 "--backend=cuda", plan, "--steps", "2"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            summary = [l for l in p.stdout.splitlines() if "ERROR SUMMARY" in l]
            print("%s %s %s: %s" % ("ok  " if p.returncode == 0 else "FAIL", model, tool,
                                    summary[-1].strip() if summary
                                    else "exit %d" % p.returncode))
            if p.returncode:
                print(p.stdout[-3000:])
            bad += p.returncode != 0
    print("sanitizer: %d failed" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
