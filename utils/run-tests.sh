#!/usr/bin/env bash
# Builds braid (and the runtime's sanitizer and fuzzer variants) and runs
# every test suite: the unit tests (unittests/, googletest), the regression
# tests (test/), the integration tests (integration_test/), and the
# regression tests again on the compiler built without the runtime
# (build/compiler-only, -DBRAID_ENABLE_RUNTIME=OFF). Ends with one line
# `N passed, N failed, N skipped` summed over all suites, and exits non-zero if
# any test failed.
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

status=0
results=()
for suite in unittests test integration_test compiler-only/test; do
  xml="$build/${suite//\//-}-results.xml"
  rm -f "$xml"
  echo "== lit: $suite"
  /usr/bin/python3 /usr/lib/llvm-22/bin/lit -sv --xunit-xml-output="$xml" "$@" \
    "$build/$suite" || status=1
  results+=("$xml")
done

/usr/bin/python3 "$root/utils/sum-lit-results.py" "${results[@]}" || status=1
exit $status
