#!/usr/bin/env bash
# Builds braid (and the runtime's sanitizer and fuzzer variants) and runs
# every test suite: the unit tests (unittests/, googletest), the regression
# tests (test/), the integration tests (integration_test/), and the
# regression tests again on the compiler built without the runtime
# (build/compiler-only, -DBRAID_ENABLE_RUNTIME=OFF), and the exporter's
# tests (integration_test/export) again under torch 2.x
# (utils/setup-torch2.sh), and the numerics tests again as a machine without
# AVX-512 (integration_test/numerics-tests.txt). Ends with one line
# `N passed, N failed, N skipped` summed over all suites (an XFAIL is
# reported on its own line before it), and exits non-zero if any test failed.
#
# Everything the tests need that utils/setup.sh installs (numpy, torch,
# OpenMPI) is required here: if one is missing the suite that needs it stops
# with an error naming it, instead of skipping its tests. Only a missing GPU
# skips (the cuda tests report UNSUPPORTED).
#
# Usage: utils/run-tests.sh [extra lit options...]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"

bash "$root/utils/build.sh" || { echo "0 passed, 1 failed"; exit 1; }
# The runtime again with sanitizers and as a fuzzer (runtime tests use them).
bash "$root/utils/build-runtime-variants.sh" || { echo "0 passed, 1 failed"; exit 1; }
# The compiler alone (-DBRAID_ENABLE_RUNTIME=OFF): its tests run there too.
bash "$root/utils/build-compiler-only.sh" || { echo "0 passed, 1 failed"; exit 1; }

# The exporter's tests run a second time under torch 2.x (a pinned venv
# next to Debian's torch 1.13, created when missing).
torch2=$(bash "$root/utils/setup-torch2.sh") || { echo "0 passed, 1 failed"; exit 1; }

# The integration suite's lit.cfg.py turns a missing requirement into an
# error when this is set (and when CI=true).
export BRAID_REQUIRE_FEATURES=1
status=0
results=()
run_suite() { # NAME DIR [lit options...]: one lit run, its results in NAME
  local json="$build/$1-results.json" dir=$2
  shift 2
  rm -f "$json"
  echo "== lit: $dir${BRAID_PYTHON:+ (python: $BRAID_PYTHON)}"
  /usr/bin/python3 /usr/lib/llvm-22/bin/lit -sv -o "$json" "$@" "$build/$dir" || status=1
  results+=("$json")
}
for suite in unittests test integration_test compiler-only/test; do
  run_suite "${suite//\//-}" "$suite" "$@"
done
BRAID_PYTHON=$torch2 run_suite integration_test-export-torch2 integration_test/export "$@"

# The numerics pass: the tests integration_test/numerics-tests.txt lists
# (every one that compares numbers with PyTorch, numpy or another summation
# order) again with OpenBLAS's Haswell kernels and braid's AVX2 vector math,
# as a machine without AVX-512 runs them (docs/Testing.md).
# The exporter's tests run there under torch 2.x (the newer of the two, and
# the one export-hf.py needs); the others under the default python.
numerics=() numerics_export=()
while read -r kind path _; do
  [ "$kind" = run ] || continue
  case $path in
    export/*) numerics_export+=("$build/integration_test/$path") ;;
    *) numerics+=("$build/integration_test/$path") ;;
  esac
done < "$root/integration_test/numerics-tests.txt"
machine=()
run_numerics() { # NAME [BRAID_PYTHON] TESTS...: one lit run of the numerics pass
  local json="$build/$1-results.json" python=$2
  shift 2
  rm -f "$json"
  echo "== lit: $# numerics tests again as a machine without AVX-512 (OPENBLAS_CORETYPE=Haswell BRAID_CPU_MATH=avx2)${python:+ (python: $python)}"
  env ${python:+BRAID_PYTHON="$python"} /usr/bin/python3 /usr/lib/llvm-22/bin/lit -sv -o "$json" \
    --param braid_machine=haswell "${lit_args[@]}" "$@" || status=1
  results+=("$json")
  machine+=(--machine="$json")
}
lit_args=("$@")
run_numerics integration_test-haswell "" "${numerics[@]}"
run_numerics integration_test-haswell-torch2 "$torch2" "${numerics_export[@]}"

# compiler-only/test runs the compiler built under ASan+UBSan; two
# integration tests run the runtime under ASan+UBSan and TSan (sanitizers.test)
# and the loader fuzzer under ASan+UBSan (plan-fuzzer.test).
sanitized=(--sanitized="$build/compiler-only-test-results.json"
           --sanitized-test=runtime/sanitizers.test --sanitized-test=runtime/plan-fuzzer.test)
/usr/bin/python3 "$root/utils/sum-lit-results.py" "${results[@]}" "${sanitized[@]}" \
  "${machine[@]}" || status=1
exit $status
