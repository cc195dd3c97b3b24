//===- RunInputs.h - what a rank loads before its first step ----*- C++ -*-===//
//
// braid-run's inputs: parameters and optimizer state from --params (or
// initialized), the rank's batch from --data (or synthesized within the
// ranges its embeddings and losses accept), each converted to the plan's
// types with its shape and dtype checked.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNINPUTS_H
#define BRAID_RUNTIME_TOOLS_RUNINPUTS_H

#include "RunOptions.h"

#include "braid-runtime/Plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace braid::rt {

/// Everything a rank needs before its first step, on the host.
struct Inputs {
  std::map<uint32_t, std::vector<uint8_t>> state, batch;
};

/// The .npy dtype string of `dtype` ("<f4"), empty for one numpy lacks.
std::string descrOf(DType dtype);

/// Reads and checks what rank `rank` of `world` needs; throws NpzError or
/// PlanError naming the problem.
Inputs prepareInputs(const Plan &plan, const Options &o, int rank, int world);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNINPUTS_H
