//===- PipelineSchedule.cpp - the order of a stage's micro-batches --------===//

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace braid;

std::optional<PipelineScheduleKind>
braid::parsePipelineSchedule(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<PipelineScheduleKind>>(name)
      .Case("gpipe", PipelineScheduleKind::GPipe)
      .Case("1f1b", PipelineScheduleKind::OneForwardOneBackward)
      .Case("zb-h1", PipelineScheduleKind::ZeroBubbleH1)
      .Default(std::nullopt);
}

llvm::StringRef braid::pipelineScheduleNames() { return "gpipe, 1f1b, zb-h1"; }

bool braid::splitsBackward(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::ZeroBubbleH1;
}

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
  if (kind != PipelineScheduleKind::GPipe)
    warmup = std::min(stages - stage - 1, microBatches);
  for (unsigned k = 0; k < warmup; ++k)
    forward(k);
  for (unsigned k = warmup; k < microBatches; ++k) {
    forward(k);
    backward(k - warmup);
  }
  for (unsigned k = microBatches - warmup; k < microBatches; ++k)
    backward(k);
  if (!splitsBackward(kind))
    return actions;
  // Micro-batch k's W after the B of k + stage, the last ones at the end.
  llvm::SmallVector<PipelineAction> split;
  for (const PipelineAction &a : actions) {
    split.push_back(a);
    if (a.kind == PipelineAction::Backward && a.microBatch >= stage)
      split.push_back({PipelineAction::Weight, a.microBatch - stage});
  }
  for (unsigned k = microBatches - std::min(stage, microBatches);
       k < microBatches; ++k)
    split.push_back({PipelineAction::Weight, k});
  return split;
}

unsigned braid::peakInFlight(llvm::ArrayRef<PipelineAction> actions) {
  bool split = llvm::any_of(actions, [](const PipelineAction &a) {
    return a.kind == PipelineAction::Weight;
  });
  PipelineAction::Kind release =
      split ? PipelineAction::Weight : PipelineAction::Backward;
  unsigned live = 0, peak = 0;
  for (const PipelineAction &a : actions) {
    if (a.kind == PipelineAction::Forward)
      peak = std::max(peak, ++live);
    else if (a.kind == release)
      --live;
  }
  return peak;
}
