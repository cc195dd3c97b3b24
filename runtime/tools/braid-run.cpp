//===- braid-run.cpp - execute a plan: train for K steps ------------------===//
//
//   mpirun -np N braid-run [--backend=cpu|cuda] step.plan --steps K
//       [--params p.npz] [--data d.npz] [--save out.npz] [--seed S]
//       [--timeout SECONDS]
//   braid-run --dump step.plan
//
// Every rank loads the plan, binds parameters, optimizer state and its batch,
// runs the steps and prints (rank 0) the loss averaged over ranks. Errors
// before the first step are agreed on by all ranks, which then exit non-zero
// together; an error during a step (a collective past --timeout, bad data)
// stops every rank through MPI_Abort. The phases have files of their own:
// RunOptions (the command line), RunSim (--backend=sim), RunStartup (MPI_Init
// to the first step, with RunInputs), RunSteps, RunSave (--save) and
// RunDeadline (the deadline outside the steps).
//
//===----------------------------------------------------------------------===//

#include "RunDeadline.h"
#include "RunOptions.h"
#include "RunSave.h"
#include "RunSim.h"
#include "RunStartup.h"
#include "RunSteps.h"

#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/CpuBackend.h"
#include "braid-runtime/Plan.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

using namespace braid;
using namespace braid::rt;

int main(int argc, char **argv) {
  registerBuiltinBackends();
  Options o = parseOptions(argc, argv);
  // Before anything else (no thread, no MPI yet): OpenBLAS read its
  // environment when it loaded. Where it fell back to generic kernels on a
  // CPU it does not know (CpuBackend.h), run again with the right core. If
  // the exec fails, go on as it is.
  if (const char *core = betterOpenblasCore()) {
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
  }
  if (o.dump) {
    try {
      std::cout << dumpPlan(loadPlanFile(o.plan));
      return 0;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "braid-run: error: %s\n", e.what());
      return 1;
    }
  }

  if (o.backend == "sim")
    return simulate(o);
  if (!o.cluster.empty() || !o.trace.empty() || o.traceRanks >= 0 ||
      !o.report.empty())
    usageError("--cluster, --trace, --trace-ranks and --report go with "
               "--backend=sim");

  // --resume DIR: the newest checkpoint there stands for --params (none:
  // the run starts from --params, so one command line starts and
  // restarts a run).
  if (!o.resume.empty()) {
    try {
      o.resumedFrom = newestCheckpoint(o.resume);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "braid-run: error: %s\n", e.what());
      return 1;
    }
    if (!o.resumedFrom.empty())
      o.params = o.resumedFrom;
  }
  Started started;
  if (int code = startRanks(&argc, &argv, o, started))
    return code;
  if (!o.resume.empty() && started.rank == 0) {
    if (o.resumedFrom.empty())
      std::printf("resume: no checkpoint in %s; starting from %s\n",
                  o.resume.c_str(),
                  o.params.empty() ? "seeded values" : o.params.c_str());
    else
      std::printf("resume: from %s (%lld steps done); %lld of --steps %lld "
                  "left\n",
                  o.resumedFrom.c_str(), (long long)started.inputs.stepsDone,
                  (long long)started.inputs.steps, (long long)o.steps);
    std::fflush(stdout);
  }
  runSteps(o, started.plan, *started.backend, started.inputs, started.rank,
           started.world);
  saveState(o, started.plan, *started.backend, started.inputs, started.rank,
            started.world);
  endPhase("stopping: freeing the backend's communicators");
  started.backend.reset();
  endPhase("stopping: in MPI_Finalize");
  MPI_Finalize();
  return 0;
}
