#!/usr/bin/env bash
# Creates the torch 2.x virtual environment of the test command when it is
# missing: Debian's python3 (which has torch 1.13) with the packages pinned
# in utils/torch2-requirements.txt (torch 2.x, numpy, Hugging Face
# transformers) installed from PyPI, about 3 GB to download and 2 minutes
# here. Triton is removed afterwards (1 GB; braid's tests use no GPU
# compiler). Prints the environment's python on stdout.
#
# The environment lives outside the checkout, keyed by the requirements'
# hash, so that fresh clones (CI) share it and a change of a pin makes a new
# one: $BRAID_TORCH2_VENV, else ~/.cache/braid/venv-torch2-HASH. It is
# complete once it holds braid-complete (written last), and rebuilt from
# scratch otherwise.
#
# Usage: utils/setup-torch2.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/utils/torch2-requirements.txt"
hash=$(sha256sum "$req" | cut -c1-12)
venv=${BRAID_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/braid/venv-torch2-$hash}

if [ -f "$venv/braid-complete" ] && [ -x "$venv/bin/python" ]; then
  echo "$venv/bin/python"
  exit 0
fi
echo "setup-torch2: creating $venv from $req (about 3 GB from PyPI)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
"$venv/bin/python" -m pip uninstall --quiet --yes triton >&2 || true
"$venv/bin/python" -c "import torch, numpy, transformers" >&2
cp "$req" "$venv/braid-complete"
echo "setup-torch2: done" >&2
echo "$venv/bin/python"
