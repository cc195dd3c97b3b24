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
BRAID_BUILD_DIR="$dir" BRAID_CMAKE_FLAGS="-DBRAID_ENABLE_RUNTIME=OFF" \
  bash "$root/utils/build.sh" braid-opt braid-translate braid-compile braid-doc \
  BraidUnitTests
if grep -q "braid runtime" "$dir/configure.log"; then
  echo "build-compiler-only: the configure added the runtime" >&2
  exit 1
fi
