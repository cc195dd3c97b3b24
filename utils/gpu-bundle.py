#!/usr/bin/python3
"""Packs the GPU tests for a machine that has a GPU but none of braid's build
dependencies (no MLIR, no OpenMPI, no OpenBLAS): the lent device machine.

usage: /usr/bin/python3 utils/gpu-bundle.py OUT_DIR

Writes OUT_DIR/bundle.tar.xz holding
  bin/braid-run            this build's braid-run (with the cuda backend)
  bin/braid-gpu-bench      GEMM rates, bandwidth and launch times
  lib/                     the shared libraries it needs beyond glibc and CUDA
  openmpi/{lib,share}      OpenMPI's components and help files, relocated
  plans/                   a plan cache (BRAID_PLAN_CACHE) with every plan that
                           kernels.py, cuda-train.py and the timing run compile
and utils/gpu-check.sh, run on that machine from the repository root, unpacks
it and runs the tests. CUDA's own libraries (cudart, cuBLAS, NCCL) are taken
from that machine."""

import os
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
OMPI_COMPONENTS = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
OMPI_SHARE = "/usr/share/openmpi"
# glibc's libraries are on every machine; CUDA's come from the GPU machine.
SYSTEM = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
          "ld-linux", "linux-vdso", "libcudart", "libcublas", "libnccl",
          "libcuda.so")
# OpenMPI components for one node: shared memory and TCP only.
SKIP_COMPONENT_DEPS = ("libucp", "libucs", "libuct", "libucm", "libpsm",
                       "libinfinipath", "libfabric", "libibverbs", "librdmacm",
                       "libmunge", "libpmix", "libefa", "libnl-")


def deps(path):
    """(name, resolved path) of each shared library `path` needs."""
    out = subprocess.run(["ldd", path], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            found.append((parts[0], parts[2]))
        elif "not found" in line:
            sys.exit("gpu-bundle: %s needs %s, which is not installed" % (path, parts[0]))
    return found


def is_system(name):
    return any(name.startswith(s) for s in SYSTEM)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    stage = os.path.join(out, "bundle")
    shutil.rmtree(stage, ignore_errors=True)
    for d in ("bin", "lib", "openmpi/lib", "plans", "work"):
        os.makedirs(os.path.join(stage, d))
    run = os.path.join(BIN, "braid-run")
    if not os.path.exists(run):
        sys.exit("gpu-bundle: %s is missing: build first (utils/build.sh)" % run)
    shutil.copy(run, os.path.join(stage, "bin"))
    bench = os.path.join(BIN, "braid-gpu-bench")
    if not os.path.exists(bench):
        sys.exit("gpu-bundle: %s is missing: build first (utils/build.sh)" % bench)
    shutil.copy(bench, os.path.join(stage, "bin"))

    libs = {}

    def add_deps(path):
        for name, resolved in deps(path):
            if not is_system(name):
                libs[name] = resolved

    add_deps(run)
    add_deps(bench)
    components = []
    for f in sorted(os.listdir(OMPI_COMPONENTS)):
        path = os.path.join(OMPI_COMPONENTS, f)
        names = [n for n, _ in deps(path)]
        if any(n.startswith(SKIP_COMPONENT_DEPS) for n in names):
            continue
        components.append(path)
        add_deps(path)
    for name, resolved in sorted(libs.items()):
        shutil.copy(resolved, os.path.join(stage, "lib", name))
    for c in components:
        shutil.copy(c, os.path.join(stage, "openmpi/lib"))
    shutil.copytree(OMPI_SHARE, os.path.join(stage, "openmpi/share"))

    # The plans: kernels.py (cpu backend, which also fills the cache),
    # cuda-train.py's and the timing model's.
    env = dict(os.environ, BRAID_BIN=BIN, BRAID_PLAN_CACHE=os.path.join(stage, "plans"),
               PYTHONPATH=os.path.join(ROOT, "python"))
    tests = os.path.join(ROOT, "integration_test", "runtime")
    work = os.path.join(out, "work")
    for cmd in (["kernels.py", work + "/kernels"],
                ["cuda-train.py", "--compile-only", work + "/train"]):
        subprocess.run([sys.executable, os.path.join(tests, cmd[0])] + cmd[1:],
                       env=env, check=True)
    sys.path.insert(0, os.path.join(tests, "Inputs"))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.update(env)
    import braidtest
    for name, args in timing_models():
        mlir = os.path.join(work, name + ".mlir")
        braidtest.run([sys.executable, "-m", "braid.models"] + args + ["-o", mlir], env=env)
        for flags in timing_variants():
            braidtest.compile_step(mlir, os.path.join(work, "t.plan"), *flags)

    tar = os.path.join(out, "bundle.tar.xz")
    with tarfile.open(tar, "w:xz") as t:
        t.add(stage, arcname="bundle")
    shutil.rmtree(stage)
    shutil.rmtree(work)
    print("gpu-bundle: wrote %s (%.1f MB): braid-run, %d libraries, %d OpenMPI components" % (
        tar, os.path.getsize(tar) / 1e6, len(libs), len(components)))


def timing_models():
    """The models utils/gpu-check.sh times on the GPU (one rank)."""
    return [("gpt2-width", ["gpt", "--world-size", "1", "--batch", "8",
                            "--seq", "512"])]


def timing_variants():
    return [["--no-overlap"], ["--comm-streams=2"]]


if __name__ == "__main__":
    main()
