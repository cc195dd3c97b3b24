#!/usr/bin/env bash
# Configures (once) and builds braid in build/. Installs what is missing first.
# BRAID_BUILD_DIR and BRAID_CMAKE_FLAGS configure another build (as
# utils/build-compiler-only.sh does).
#
# Usage: utils/build.sh [ninja targets...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/utils/setup.sh"

build=${BRAID_BUILD_DIR:-$root/build}
# ccache, with paths taken relative to the source tree, so that a copy of
# the tree at another path (utils/mutants.py's scratch copy) hits the cache
# the main build filled.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
fi
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -G Ninja -S "$root" -B "$build" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit ${BRAID_CMAKE_FLAGS:-} \
    >"$build/configure.log" 2>&1 || {
      cat "$build/configure.log"
      echo "build: cmake configuration failed (log above)" >&2
      exit 1
    }
fi
jobs=$(nproc 2>/dev/null || echo 2)
# The compilers' output is kept for build-warnings.test (a fresh build
# compiles every file: no warning may come from braid's own sources).
ninja -C "$build" -j"$jobs" "$@" 2>&1 | tee "$build/build-output.log"
