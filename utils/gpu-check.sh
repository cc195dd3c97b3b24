#!/bin/bash
# Runs the GPU tests on a machine with a GPU but none of braid's build
# dependencies, from a bundle made by utils/gpu-bundle.py on a build machine:
#   utils/gpu-check.sh BUNDLE.tar.xz [OUT_DIR]
# Unpacks the bundle, points the loader and OpenMPI (a singleton: one rank,
# no mpirun) at it, takes CUDA's libraries from this machine, then runs
#   kernels.py with the cuda backend  (every kernel against numpy)
#   cuda-train.py                     (20 steps, cuda against cpu: step 1's
#                                      loss within 1e-6, parameters by the
#                                      cpu test's rule; the naive and the
#                                      overlapped plan, and one plan run
#                                      twice, bit for bit)
#   compute-sanitizer memcheck and initcheck on the tiny MLP and GPT for 2
#     steps (where this machine has compute-sanitizer)
#   a timing of GPT-2 small (batch 8 x 512 tokens, one GPU): cuda with
#     --profile (the first step against the median of the others, and the
#     time per op) and cpu
#   braid-gpu-bench: GEMM rates, memory bandwidth and launch times for the
#     cost model, written to OUT_DIR/calibration.json
# Each section's whole output goes to OUT_DIR/NAME.log; the screen gets its
# summary lines and every failure. Exits non-zero if a test failed. A few
# minutes on one H200.
set -u -o pipefail
bundle=$(readlink -f "$1")
out=${2:-/tmp/braid-gpu-out}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=/tmp/braid-gpu
rm -rf "$dest" && mkdir -p "$dest" "$out"
tar -C "$dest" -xJf "$bundle" || exit 1
b=$dest/bundle

# CUDA's libraries (cudart, cuBLAS, NCCL) from this machine.
cudalibs=""
for name in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
  found=$(find /usr/local/cuda/lib64/ /usr/local/cuda/lib/ /usr/lib/x86_64-linux-gnu \
            /usr/local/lib /opt -name "$name" 2>/dev/null | head -1)
  if [ -z "$found" ]; then echo "gpu-check: $name not found on this machine"; exit 1; fi
  echo "gpu-check: $name: $found"
  cudalibs="$cudalibs:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$b/lib$cudalibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX=$b/openmpi OPAL_PKGLIBDIR=$b/openmpi/lib OPAL_PKGDATADIR=$b/openmpi/share
export OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_plm=isolated
export BRAID_BIN=$b/bin BRAID_PLAN_CACHE=$b/plans BRAID_PLAN_CACHE_ONLY=1
export PYTHONPATH=$root/python PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
nvidia-smi -L
ldd "$b/bin/braid-run" | grep -E "not found|cuda|cublas|nccl|mpi"

failed=0
tests=$root/integration_test/runtime
# section NAME PATTERN COMMAND...: runs COMMAND, its output to
# OUT_DIR/NAME.log; prints the lines matching PATTERN and every failure.
section() {
  local name=$1 pattern=$2
  shift 2
  echo "== $name"
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  grep -E "FAIL|rror|$pattern" "$out/$name.log" | head -25
  if [ $rc != 0 ]; then
    echo "   ($name exited $rc: $out/$name.log)"
    failed=1
  fi
}

section kernels "failed|results checked" \
  env BRAID_BACKEND=cuda $python "$tests/kernels.py" "$out/kernels"
section cuda-train "^ok|cuda-train:" $python "$tests/cuda-train.py" "$out/train"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$sanitizer" ]; then
  section sanitizer "sanitizer:|^ok" $python "$root/utils/gpu-check-sanitizer.py" \
    "$out/sanitizer" "$sanitizer"
else
  echo "== sanitizer: no compute-sanitizer on this machine: skipped"
fi
section timing "^gpt2|^profile: kernels|^  [a-z_]+ +[0-9]" \
  $python "$root/utils/gpu-check-timing.py" "$out/timing"
section calibration "braid-gpu-bench|^  [a-z0-9]+ " \
  "$b/bin/braid-gpu-bench" "$out/calibration.json"

echo "gpu-check: $([ $failed = 0 ] && echo passed || echo FAILED) (logs in $out)"
exit $failed
