//===- RunSteps.h - braid-run's steps ---------------------------*- C++ -*-===//
//
// The training loop: each step writes the rank's batch and its scheduled
// hyperparameters, runs the program, copies the carried state back to its
// arguments, and prints (rank 0) the loss averaged over the ranks that
// compute one; then the time per step and, with --profile, the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNSTEPS_H
#define BRAID_RUNTIME_TOOLS_RUNSTEPS_H

#include "RunInputs.h"
#include "RunOptions.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"

namespace braid::rt {

/// Runs the run's steps (Inputs::steps) of `plan` on `backend` as rank
/// `rank` of `world` (and --inject-fault's fault), with a checkpoint every
/// --save-every steps taken and after the last (--checkpoint-dir). An
/// error in a step stops every rank (MPI_Abort). Returns after the last
/// step, the end-of-run deadline armed.
void runSteps(const Options &o, const Plan &plan, Backend &backend,
              const Inputs &inputs, int rank, int world);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNSTEPS_H
