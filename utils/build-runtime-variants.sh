#!/usr/bin/env bash
# Builds the runtime (its own CMake project) three more times, for the tests:
#   build/runtime-asan  AddressSanitizer + UndefinedBehaviorSanitizer
#   build/runtime-tsan  ThreadSanitizer (the executor's tests, braid-run and
#                       its self-test)
#   build/runtime-fuzz  the libFuzzer target for the plan loader
# Usage: utils/build-runtime-variants.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
variant() {
  local name=$1 targets=$2
  shift 2
  local dir="$root/build/runtime-$name"
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -G Ninja -S "$root/runtime" -B "$dir" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DBRAID_RUNTIME_CUDA=OFF "$@" >"$dir.configure.log" 2>&1 || {
        cat "$dir.configure.log"
        echo "build-runtime-variants: configuring $name failed" >&2
        exit 1
      }
  fi
  ninja -C "$dir" -j"$jobs" $targets
}
variant asan "braid-run braid-executor-test braid-device-backend-test" -DBRAID_RUNTIME_SANITIZE=address,undefined
variant tsan "braid-run braid-executor-test braid-device-backend-test braid-tsan-self-test" -DBRAID_RUNTIME_SANITIZE=thread
variant fuzz "braid-plan-fuzzer" -DBRAID_RUNTIME_FUZZ=ON
