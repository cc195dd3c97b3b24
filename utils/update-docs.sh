#!/usr/bin/env bash
# Copies the reference docs that mlir-tblgen generates from the ODS and
# Passes.td (build/docs/Braid) into docs/reference, where they are read on
# the web. The test suite fails while the two differ.
#
# Usage: utils/update-docs.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/utils/build.sh" braid-doc
mkdir -p "$root/docs/reference"
cp "$root"/build/docs/Braid/*.md "$root/docs/reference/"
echo "docs/reference updated from build/docs/Braid"
