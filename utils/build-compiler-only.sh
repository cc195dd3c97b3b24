#!/usr/bin/env bash
# Builds the compiler alone, configured with -DBRAID_ENABLE_RUNTIME=OFF, in
# build/compiler-only: the compiler must build (and its tests pass, which
# the test command runs on this build too) with LLVM/MLIR and common/ only,
# without MPI, OpenBLAS, libzip or CUDA. It is built with AddressSanitizer
# and UndefinedBehaviorSanitizer (-fno-sanitize-recover=all), so that the
# compiler's lit suite runs under them (issue 18).
#
# Usage: utils/build-compiler-only.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/build/compiler-only"
# A build configured before the sanitizers were added is configured again.
if [ -f "$dir/CMakeCache.txt" ] &&
   ! grep -q '^BRAID_SANITIZE:STRING=address,undefined$' "$dir/CMakeCache.txt"; then
  rm -rf "$dir"
fi
BRAID_BUILD_DIR="$dir" \
  BRAID_CMAKE_FLAGS="-DBRAID_ENABLE_RUNTIME=OFF -DBRAID_SANITIZE=address,undefined" \
  bash "$root/utils/build.sh" braid-opt braid-translate braid-compile braid-doc \
  BraidUnitTests
if grep -q "braid runtime" "$dir/configure.log"; then
  echo "build-compiler-only: the configure added the runtime" >&2
  exit 1
fi
