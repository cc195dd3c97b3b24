# The braid integration tests: tests that need more than the build (Python
# with torch and numpy, MPI, a GPU). Each feature is detected here; a test
# that needs a missing one reports UNSUPPORTED (skipped) with lit's reason.
# Under utils/run-tests.sh (BRAID_REQUIRE_FEATURES=1) and in CI (CI=true),
# a missing feature that utils/setup.sh installs (numpy, torch, mpirun) is
# an error naming it instead: only a missing GPU may skip there.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "braid-integration"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".test", ".py"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.braid_obj_root, "integration_test")

# Debian's python3, which sees Debian's torch, numpy and pytest; BRAID_PYTHON
# names another interpreter (a venv's).
python = os.environ.get("BRAID_PYTHON", "/usr/bin/python3")
config.substitutions.append(("%python", python))
config.substitutions.append(("%examples", os.path.join(config.braid_src_root, "examples")))
config.substitutions.append(("%braid_src", config.braid_src_root))
config.environment["PYTHONPATH"] = os.path.join(config.braid_src_root, "python")
# braid.ir's result-type inference: this build's libBraidCAPI.so
# (python/braid/_native.py).
config.environment["BRAID_CAPI"] = os.path.join(config.braid_obj_root, "lib", "libBraidCAPI.so")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["braid-opt", "braid-compile", "braid-translate", "braid-run"],
    [config.braid_tools_dir])
config.substitutions.append(("%braid_bin", config.braid_tools_dir))
config.substitutions.append(("%braid_obj", config.braid_obj_root))
# lit itself, for the test of this file's requirement check.
config.substitutions.append(("%lit", os.path.abspath(sys.argv[0])))
# Sanitizers: OpenMPI's own allocations are not leaks of braid's.
config.environment["ASAN_OPTIONS"] = "detect_leaks=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1"


def python_has(module):
    return subprocess.run([python, "-c", "import " + module],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


strict = (os.environ.get("CI", "").lower() == "true" or
          os.environ.get("BRAID_REQUIRE_FEATURES", "") not in ("", "0"))
missing = []
for feature, found, what in (
        ("numpy", python_has("numpy"), "numpy (python3-numpy) for %s" % python),
        ("torch", python_has("torch"), "torch (python3-torch) for %s" % python),
        ("mpi", shutil.which("mpirun") is not None, "mpirun (openmpi-bin) on PATH")):
    if found:
        config.available_features.add(feature)
    else:
        missing.append(what)
if missing and strict:
    lit_config.fatal("missing test requirements: %s. utils/setup.sh installs them; "
                     "under CI=true and utils/run-tests.sh a missing requirement is an "
                     "error, not a skip" % "; ".join(missing))
# The torch major version: tests of what only torch 2.x has (fused
# attention, Hugging Face transformers) say `REQUIRES: torch2`, and run when
# utils/run-tests.sh runs this suite's export tests under the torch 2.x venv.
if "torch" in config.available_features:
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout.strip()
    if version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 2:
        config.available_features.add("torch2")
        if python_has("transformers"):
            config.available_features.add("transformers")
    lit_config.note("torch %s (%s)" % (version, python))
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("gpu")
else:
    lit_config.note("no GPU (nvidia-smi -L fails or is missing): the tests that "
                    "need one (runtime/cuda-*) report UNSUPPORTED")

# braid-run was built with the cuda backend (CUDA and NCCL were found).
if config.braid_cuda_backend in ("ON", "1", "TRUE"):
    config.available_features.add("cuda-backend")

# The numerics pass (utils/run-tests.sh, docs/Testing.md): the tests listed
# in numerics-tests.txt run a second time as a machine without AVX-512 runs
# them, OpenBLAS's Haswell kernels and braid's AVX2 vector math, in a work
# directory of their own. A test that needs to know says `REQUIRES:` or
# `UNSUPPORTED: haswell-pass`.
machine = lit_config.params.get("braid_machine", "")
if machine == "haswell":
    config.name += "-haswell"
    config.environment["OPENBLAS_CORETYPE"] = "Haswell"
    config.environment["BRAID_CPU_MATH"] = "avx2"
    config.test_exec_root = os.path.join(config.braid_obj_root, "integration_test-haswell")
    config.available_features.add("haswell-pass")
elif machine:
    lit_config.fatal("braid_machine=%s: the numerics pass knows 'haswell' only" % machine)
