//===- RunSave.h - what braid-run writes for --save -------------*- C++ -*-===//
//
// The --save path of each rank, checked before the first step; half
// tensors widened for numpy; a pipeline's stages gathered on rank 0 (every
// phase under the deadline, RunDeadline.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNSAVE_H
#define BRAID_RUNTIME_TOOLS_RUNSAVE_H

#include "braid-runtime/Npz.h"
#include "braid-runtime/Plan.h"

#include <map>
#include <string>

namespace braid::rt {

/// The path a rank writes for --save: {rank} replaced by its number.
std::string savePathOf(const std::string &save, int rank);

/// Fails now, before any step runs, if this rank's --save file cannot be
/// written (a directory, a missing folder, no permission), instead of after
/// the last step. Leaves no file behind where there was none.
void checkWritable(const std::string &save, int rank);

/// A saved half tensor, widened to f32 (numpy has no bf16; descrOf).
void widenSaved(NpyArray &array, DType dtype);

/// A pipeline's --save to one file: the first replica's ranks of the
/// other stages (tensor-parallel index 0, whose arrays are gathered
/// already) send theirs to rank 0, which writes them all. Every rank calls
/// it.
void gatherStages(const Plan &plan, int rank, int world,
                  std::map<std::string, NpyArray> &out);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNSAVE_H
