//===- RunSim.h - braid-run --backend=sim -----------------------*- C++ -*-===//
//
// One process plays every rank of a plan on a simulated cluster (the plan's
// or --cluster's) and prints the report; no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNSIM_H
#define BRAID_RUNTIME_TOOLS_RUNSIM_H

#include "RunOptions.h"

namespace braid::rt {

/// --backend=sim: simulates one step of `o.plan`, prints the report (and
/// writes --trace and --report); the process's exit code.
int simulate(const Options &o);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNSIM_H
