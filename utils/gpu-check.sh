#!/bin/bash
# Runs the GPU tests on a machine with a GPU but none of braid's build
# dependencies, from a bundle made by utils/gpu-bundle.py on a build machine:
#   utils/gpu-check.sh BUNDLE.tar.xz [OUT_DIR]
# Unpacks the bundle, points the loader and OpenMPI (a singleton: one rank,
# no mpirun) at it, takes CUDA's libraries from this machine, then runs
#   kernels.py with the cuda backend  (every kernel against numpy)
#   cuda-train.py                     (20 steps, cuda against cpu)
#   a timing of GPT-2 small (batch 8 x 512 tokens, one GPU): cuda and cpu
# and exits non-zero if a test failed.
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
echo "== kernels (cuda backend) against numpy"
BRAID_BACKEND=cuda $python "$tests/kernels.py" "$out/kernels" || failed=1
echo "== cuda-train: 20 steps, cuda against cpu"
$python "$tests/cuda-train.py" "$out/train" || failed=1

echo "== timing: GPT-2 small, batch 8 x 512 tokens, one rank"
$python - "$out/timing" <<'EOF' || failed=1
import os, sys
sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "..", "integration_test", "runtime", "Inputs"))
sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "..", "utils"))
import braidtest
gb = __import__("gpu-bundle")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, args in gb.timing_models():
    mlir = os.path.join(out, name + ".mlir")
    braidtest.run([sys.executable, "-m", "braid.models"] + args + ["-o", mlir])
    for flags in gb.timing_variants():
        plan = os.path.join(out, name + flags[0] + ".plan")
        braidtest.compile_step(mlir, plan, *flags)
        for backend, steps in (("cuda", "20"), ("cpu", "2")):
            p = braidtest.braid_run(plan, backend=backend, args=["--steps", steps])
            losses = braidtest.losses(p.stdout)
            t = [l for l in p.stdout.splitlines() if l.startswith("time:")]
            print("%s %s %s: loss %.4f -> %.4f; %s" % (name, flags[0], backend, losses[0],
                                                      losses[-1], t[0] if t else "no time"))
EOF
echo "gpu-check: $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
