# The braid integration tests: tests that need more than the build (Python
# with torch and numpy, MPI, a GPU). Each feature is detected here; a test
# that needs a missing one reports UNSUPPORTED (skipped) with lit's reason.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "braid-integration"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".test", ".py"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.braid_obj_root, "integration_test")

# Debian's python3, which sees Debian's torch, numpy and pytest.
python = "/usr/bin/python3"
config.substitutions.append(("%python", python))
config.substitutions.append(("%examples", os.path.join(config.braid_src_root, "examples")))
config.substitutions.append(("%braid_src", config.braid_src_root))
config.environment["PYTHONPATH"] = os.path.join(config.braid_src_root, "python")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["braid-opt", "braid-compile", "braid-translate", "braid-run"],
    [config.braid_tools_dir])
config.substitutions.append(("%braid_bin", config.braid_tools_dir))
config.substitutions.append(("%braid_obj", config.braid_obj_root))
# Sanitizers: OpenMPI's own allocations are not leaks of braid's.
config.environment["ASAN_OPTIONS"] = "detect_leaks=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1"


def python_has(module):
    return subprocess.run([python, "-c", "import " + module],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


if python_has("numpy"):
    config.available_features.add("numpy")
if python_has("torch"):
    config.available_features.add("torch")
if shutil.which("mpirun"):
    config.available_features.add("mpi")
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("gpu")
else:
    lit_config.note("no GPU (nvidia-smi -L fails or is missing): the tests that "
                    "need one (runtime/cuda-*) report UNSUPPORTED")

# braid-run was built with the cuda backend (CUDA and NCCL were found).
if config.braid_cuda_backend in ("ON", "1", "TRUE"):
    config.available_features.add("cuda-backend")
