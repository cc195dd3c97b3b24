//===- TsanSelfTest.cpp - ThreadSanitizer still sees braid's races --------===//
//
// Run under ThreadSanitizer with OpenMPI as braid-run is
// (tsan-braid-run.sh, tsan-mpi.supp): two threads call MPI collectives on
// their own communicators, as braid-run's stream threads do, and race on a
// counter of this file's. TSan must report the race: the suppressions that
// quiet OpenMPI's internals must not hide a race in braid's code
// (integration_test/runtime/sanitizers.test).
//
//===----------------------------------------------------------------------===//

#include <mpi.h>

#include <cstdio>
#include <thread>

namespace {
long counter = 0; // Written by both threads without a lock: the race.
} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "braid-tsan-self-test: MPI_THREAD_MULTIPLE is "
                         "not available\n");
    return 2;
  }
  MPI_Comm comms[2];
  for (MPI_Comm &comm : comms)
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  auto work = [&](int t) {
    for (int i = 0; i < 100; ++i) {
      float x = 1.0f, sum = 0.0f;
      MPI_Allreduce(&x, &sum, 1, MPI_FLOAT, MPI_SUM, comms[t]);
      counter += long(sum);
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (MPI_Comm &comm : comms)
    MPI_Comm_free(&comm);
  std::printf("braid-tsan-self-test: counter %ld\n", counter);
  MPI_Finalize();
  return 0;
}
