#!/usr/bin/env bash
# Installs the Debian packages braid needs, when they are missing. Idempotent:
# when everything is present it only runs dpkg-query and returns in a second.
#
# Usage: utils/setup.sh
set -euo pipefail

packages=(
  # LLVM/MLIR 22: headers, libMLIR.so, mlir-tblgen, lit, FileCheck.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Build tools: clang-14 + lld with ninja is the fastest build here; ccache
  # lets the mutation tests' scratch copy (utils/mutants.py) and the
  # compiler-only build reuse the objects of the main build.
  cmake ninja-build clang-14 lld ccache
  # The format check of the test suite (clang-format over `git ls-files`);
  # the unit tests (googletest).
  clang-format-14 git libgtest-dev
  # lit runs under Debian's python3; the runtime tests compare with numpy.
  python3 python3-numpy
  # The runtime: the plan format (FlatBuffers, zlib's crc32), BLAS, MPI,
  # .npz files (libzip), bf16/f16 conversions (Eigen).
  flatbuffers-compiler libflatbuffers-dev zlib1g-dev libopenblas-dev
  openmpi-bin libopenmpi-dev libzip-dev libeigen3-dev
  # The cpu kernels' vector math (SLEEF: exp, tanh, erf on AVX2/AVX-512).
  libsleef-dev
  # The cost model reads cluster descriptions (JSON); timelines are drawn
  # with matplotlib; braid-compile allocates with tcmalloc.
  nlohmann-json3-dev python3-matplotlib libgoogle-perftools-dev
  # The PyTorch exporter (braid.export: AOT autograd of torch 1.13) and its
  # tests, which train the same models with PyTorch.
  python3-torch
  # The main job's text (utils/main.sh): the fortune cookies Debian ships,
  # 2.6 MB of quotations in 43 files under /usr/share/games/fortunes.
  fortunes
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
