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
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace braid::rt {

class TokenStream;
class SampleStream;

/// Everything a rank needs before its first step, on the host.
struct Inputs {
  std::map<uint32_t, std::vector<uint8_t>> state, batch;
  /// A token file as --data: the batch inputs it fills each step
  /// (RunData.h), which `batch` then does not hold.
  std::shared_ptr<TokenStream> tokens;
  /// A .npz of samples as --data (--sampling): the batch inputs it fills
  /// each step (RunData.h), which `batch` then does not hold.
  std::shared_ptr<SampleStream> samples;
  /// --eval-data: the held-out token file and the evaluation program's
  /// batch inputs it fills (sequential windows from its start, the same
  /// --eval-batches batches at every evaluation).
  std::shared_ptr<TokenStream> evalTokens;
  /// Each hyperparameter argument's schedule (buffer -> one value a step,
  /// from the first step of the schedule), and the steps of it already
  /// taken (`steps_done` in --params, 0 when absent): step k of this run
  /// (1-based) reads value stepsDone + k - 1.
  std::map<uint32_t, std::vector<float>> schedules;
  int64_t stepsDone = 0;
  /// The steps this run takes: --steps, or with --resume the steps left of
  /// --steps after stepsDone (none where the checkpoint is past it).
  int64_t steps = 0;
};

/// The --params array that counts the steps a saved run has taken.
inline constexpr const char *kStepsDoneName = "steps_done";

/// How the plan reads an integer batch input, following reshapes and other
/// data movement: as an embedding's ids, as a loss's labels, and the
/// largest value either takes (the table size or the class count;
/// INT64_MAX where nothing bounds it).
struct IndexUse {
  bool embedding = false, loss = false;
  int64_t limit = INT64_MAX;
};
IndexUse indexUse(const Plan &plan, uint32_t buffer);

/// "(2, 3)", "(4,)": a shape as numpy prints it.
std::string shapeText(const std::vector<int64_t> &shape);

/// The .npy dtype string of `dtype` ("<f4"), empty for one numpy lacks.
std::string descrOf(DType dtype);

/// The names the --params file may hold (state, hyperparameters, the other
/// results --save writes, the step count) and the --data file may hold
/// (batch inputs), over every program of `plan` (its stages, or itself).
void collectInputNames(const Plan &plan, std::set<std::string> &paramNames,
                       std::set<std::string> &dataNames);

/// Reads and checks what rank `rank` of `world` needs to run `program`; an
/// array whose name is not in `paramNames` or `dataNames` (from
/// collectInputNames of the whole plan) is an error. Throws NpzError or
/// PlanError naming the problem.
Inputs prepareInputs(const Plan &program, const Options &o, int rank, int world,
                     const std::set<std::string> &paramNames,
                     const std::set<std::string> &dataNames);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNINPUTS_H
