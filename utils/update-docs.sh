#!/usr/bin/env bash
# Copies the reference docs that mlir-tblgen generates from the ODS and
# Passes.td (build/docs/Braid) into docs/reference, where they are read on
# the web, and the generated op table into python/braid/op_table.py and
# common/generated (the runtime builds from it without LLVM). The test suite
# fails while they differ from what the build generates.
#
# Usage: utils/update-docs.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/utils/build.sh" braid-doc braid-op-table-gen
mkdir -p "$root/docs/reference"
cp "$root"/build/docs/Braid/*.md "$root/docs/reference/"
echo "docs/reference updated from build/docs/Braid"
# The op table for the Python package, generated from the ODS with the
# runtime's (common/gen-op-table.py).
cp "$root/build/common/include/braid-common/braid_ops.py" "$root/python/braid/op_table.py"
echo "python/braid/op_table.py updated from the ODS"
# Its C++, for a runtime built without LLVM (common/CMakeLists.txt,
# BRAID_CHECKED_IN_OP_TABLE).
mkdir -p "$root/common/generated/braid-common"
for f in BraidOpTable.h.inc BraidOpTable.cpp.inc BraidOpDecode.inc BraidOpEncode.inc; do
  cp "$root/build/common/include/braid-common/$f" "$root/common/generated/braid-common/$f"
done
echo "common/generated updated from the ODS"
