//===- RunStartup.h - braid-run from MPI_Init to the first step -*- C++ -*-===//
//
// Every rank initializes MPI, loads and checks the plan and its inputs,
// prepares its backend and connects the communicators, in phases that all
// ranks agree on: an error on one rank stops every rank together, with a
// non-zero exit, before any collective of a step.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNSTARTUP_H
#define BRAID_RUNTIME_TOOLS_RUNSTARTUP_H

#include "RunInputs.h"
#include "RunOptions.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"

#include <memory>
#include <string>

namespace braid::rt {

/// What a rank has once it started.
struct Started {
  int rank = 0, world = 1;
  /// This rank's program, its state and batch, its connected backend.
  Plan plan;
  Inputs inputs;
  std::unique_ptr<Backend> backend;
};

/// Prints `message` as rank `rank`'s error; returns the exit code 1.
int rankError(int rank, const std::string &message);

/// MPI_Init to the first step under --timeout's startup deadline. Returns
/// 0 when every rank started; otherwise this rank's exit code, after
/// MPI_Finalize (the ranks stop together).
int startRanks(int *argc, char ***argv, const Options &o, Started &started);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNSTARTUP_H
