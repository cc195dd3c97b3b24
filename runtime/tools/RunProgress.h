//===- RunProgress.h - braid-run's progress lines and metrics ---*- C++ -*-===//
//
// What rank 0 says of each step besides its loss: --log-every N prints a
// progress line every N steps (loss, learning rates, tokens a second, time
// a step, the time left), --metrics FILE writes a JSON line a step with
// the same figures for plotting (python3 -m braid.curves).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNPROGRESS_H
#define BRAID_RUNTIME_TOOLS_RUNPROGRESS_H

#include "RunInputs.h"
#include "RunOptions.h"

#include "braid-runtime/Plan.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace braid::rt {

class Progress {
public:
  /// Opens --metrics (rank 0; appended to with --resume, so that a
  /// restarted run continues its log). Throws std::runtime_error when it
  /// cannot.
  Progress(const Options &o, const Plan &plan, const Inputs &inputs, int rank);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// Step `step` of this run (1-based) took `ms`; `loss` is NaN where no
  /// rank computes one.
  void step(int64_t step, double loss, double ms);
  /// The evaluation loss after step `taken` of the training (counting
  /// earlier runs'): a JSON line {"step": taken, "eval_loss": loss}.
  void evaluation(int64_t taken, double loss);

private:
  const Options &o;
  const Inputs &inputs;
  bool active;
  std::FILE *metrics = nullptr;
  /// The scheduled hyperparameters, by name, and their values.
  std::vector<std::pair<std::string, const std::vector<float> *>> rates;
  int64_t tokensPerStep = 0;
  double totalMs = 0;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNPROGRESS_H
