//===- RunSave.h - what braid-run writes for --save -------------*- C++ -*-===//
//
// The --save path of each rank, checked before the first step; the state
// written after the last, half tensors widened for numpy, tensor-parallel
// values and a pipeline's stages gathered (every phase under the deadline,
// RunDeadline.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNSAVE_H
#define BRAID_RUNTIME_TOOLS_RUNSAVE_H

#include "RunInputs.h"
#include "RunOptions.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/Npz.h"
#include "braid-runtime/Plan.h"

#include <map>
#include <string>

namespace braid::rt {

/// The path a rank writes for --save: {rank} replaced by its number.
std::string savePathOf(const std::string &save, int rank);

/// Fails now, before any step runs, if this rank's --save file (or
/// `option`'s) cannot be written (a directory, a missing folder, no
/// permission), instead of after the last step. Leaves no file behind
/// where there was none.
void checkWritable(const std::string &save, int rank,
                   const char *option = "--save");

/// A saved half tensor, widened to f32 (numpy has no bf16; descrOf).
void widenSaved(NpyArray &array, DType dtype);

/// A pipeline's --save to one file: the first replica's ranks of the
/// other stages (tensor-parallel index 0, whose arrays are gathered
/// already) send theirs to rank 0, which writes them all. Every rank calls
/// it.
void gatherStages(const Plan &plan, int rank, int world,
                  std::map<std::string, NpyArray> &out);

/// --save after the last step: rank 0 writes the state (and the loss, the
/// schedules and the steps taken) to OUT.npz, or every rank its own where
/// the path has {rank}; tensor-parallel values gathered from their groups
/// and a pipeline's stages from their ranks first (every rank calls it). An
/// error stops every rank (MPI_Abort).
void saveState(const Options &o, const Plan &plan, Backend &backend,
               const Inputs &inputs, int rank, int world);

/// What saveState writes, to `pattern` (a path, {rank} as in --save),
/// with `steps_done` = `stepsTaken` where `withStepsDone`.
void writeState(const Options &o, const Plan &plan, Backend &backend,
                const Inputs &inputs, int rank, int world,
                const std::string &pattern, int64_t stepsTaken,
                bool withStepsDone);

/// Checkpoints: DIR/step-N.npz holds what --save writes after N steps
/// (steps_done included), written to a temporary file and renamed, so a
/// file of that name is always whole; --resume takes the one of most
/// steps as --params.
std::string checkpointPath(const std::string &dir, int64_t steps);

/// The checkpoint of most steps in `dir`, empty where it has none (or
/// does not exist).
std::string newestCheckpoint(const std::string &dir);

/// Makes --checkpoint-dir (rank 0) and checks it can be written, before
/// the first step.
void prepareCheckpointDir(const Options &o, int rank);

/// The checkpoint after `stepsTaken` steps (every rank calls it: the
/// gathers), then rank 0 removes all but the newest --keep-checkpoints.
void saveCheckpoint(const Options &o, const Plan &plan, Backend &backend,
                    const Inputs &inputs, int rank, int world,
                    int64_t stepsTaken);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNSAVE_H
