#!/usr/bin/env bash
# Builds the compiler alone, configured with -DBRAID_ENABLE_RUNTIME=OFF, in
# build/compiler-only: the compiler must build (and its tests pass, which
# the test command runs on this build too) with LLVM/MLIR and common/ only,
# without MPI, OpenBLAS, libzip or CUDA.
#
# Usage: utils/build-compiler-only.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/build/compiler-only"
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -f "$dir/build.ninja" ]; then
  mkdir -p "$dir"
  cmake -G Ninja -S "$root" -B "$dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DBRAID_ENABLE_RUNTIME=OFF >"$dir/configure.log" 2>&1 || {
      cat "$dir/configure.log"
      echo "build-compiler-only: configuring failed" >&2
      exit 1
    }
fi
if grep -q "braid runtime" "$dir/configure.log"; then
  echo "build-compiler-only: the configure added the runtime" >&2
  exit 1
fi
ninja -C "$dir" -j"$jobs" braid-opt braid-translate braid-compile braid-doc BraidUnitTests
