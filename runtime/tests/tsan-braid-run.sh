#!/usr/bin/env bash
# Runs a ThreadSanitizer build of braid-run (or of another MPI program,
# such as braid-tsan-self-test) with OpenMPI set up for TSan: the
# suppressions of tsan-mpi.supp, and the OpenMPI plugins they name loaded
# from the start, so that MPI_Finalize's dlclose does not unload them (TSan
# stops the program when a library it ignores is unloaded). Reports stop the
# program (halt_on_error) with a non-zero exit.
#
# Usage: BRAID_TSAN_PROGRAM=build/runtime-tsan/bin/braid-run \
#          tsan-braid-run.sh [braid-run options...]
# (a single path, so that tests can use it as BRAID_RUN under mpirun).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${BRAID_TSAN_PROGRAM:?names the TSan-built program to run}"
plugins=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
preload=()
for m in pml_ob1 bml_r2 btl_self btl_tcp btl_vader coll_basic coll_libnbc \
         coll_tuned; do
  [ -f "$plugins/mca_$m.so" ] || {
    echo "tsan-braid-run: OpenMPI plugin $plugins/mca_$m.so is missing" >&2
    exit 2
  }
  preload+=("$plugins/mca_$m.so")
done
LD_PRELOAD=$(IFS=:; echo "${preload[*]}")${LD_PRELOAD:+:$LD_PRELOAD}
export LD_PRELOAD
export TSAN_OPTIONS="suppressions=$here/tsan-mpi.supp halt_on_error=1 ${TSAN_OPTIONS:-}"
exec "$BRAID_TSAN_PROGRAM" "$@"
