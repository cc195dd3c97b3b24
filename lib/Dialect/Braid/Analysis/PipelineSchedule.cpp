//===- PipelineSchedule.cpp - the order of a stage's micro-batches --------===//

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace braid;

std::optional<PipelineScheduleKind>
braid::parsePipelineSchedule(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<PipelineScheduleKind>>(name)
      .Case("gpipe", PipelineScheduleKind::GPipe)
      .Case("1f1b", PipelineScheduleKind::OneForwardOneBackward)
      .Default(std::nullopt);
}

llvm::StringRef braid::pipelineScheduleNames() { return "gpipe, 1f1b"; }

llvm::SmallVector<PipelineAction>
braid::pipelineActions(PipelineScheduleKind kind, unsigned stages,
                       unsigned stage, unsigned microBatches) {
  llvm::SmallVector<PipelineAction> actions;
  auto forward = [&](unsigned k) {
    actions.push_back({PipelineAction::Forward, k});
  };
  auto backward = [&](unsigned k) {
    actions.push_back({PipelineAction::Backward, k});
  };
  unsigned warmup = microBatches;
  if (kind == PipelineScheduleKind::OneForwardOneBackward)
    warmup = std::min(stages - stage - 1, microBatches);
  for (unsigned k = 0; k < warmup; ++k)
    forward(k);
  for (unsigned k = warmup; k < microBatches; ++k) {
    forward(k);
    backward(k - warmup);
  }
  for (unsigned k = microBatches - warmup; k < microBatches; ++k)
    backward(k);
  return actions;
}

unsigned braid::peakInFlight(llvm::ArrayRef<PipelineAction> actions) {
  unsigned live = 0, peak = 0;
  for (const PipelineAction &a : actions) {
    if (a.kind == PipelineAction::Forward)
      peak = std::max(peak, ++live);
    else
      --live;
  }
  return peak;
}
