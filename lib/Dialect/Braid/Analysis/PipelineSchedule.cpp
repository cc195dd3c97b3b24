//===- PipelineSchedule.cpp - the order of a stage's micro-batches --------===//

#include "braid/Dialect/Braid/Analysis/PipelineSchedule.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace braid;

bool braid::splitsBackward(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::ZeroBubbleH1;
}

unsigned braid::interleavedWarmup(unsigned p, unsigned rank, unsigned m,
                                  unsigned v) {
  // With one group of micro-batches, every forward first (Megatron's
  // all-warm-up case).
  unsigned total = m * v;
  return m == p ? total : std::min(2 * (p - rank - 1) + (v - 1) * p, total);
}

/// Megatron-LM's interleaved 1F1B (forward_backward_pipelining_with_
/// interleaving): the j-th forward of a rank is micro-batch
/// (j / (p v)) p + j mod p of chunk (j mod p v) / p, the j-th backward the
/// same micro-batch of chunk v - 1 - (j mod p v) / p.
static llvm::SmallVector<PipelineAction>
interleavedActions(unsigned p, unsigned rank, unsigned m, unsigned v) {
  unsigned total = m * v, group = p * v;
  auto nth = [&](PipelineAction::Kind kind, unsigned j) {
    unsigned chunk = (j % group) / p;
    if (kind == PipelineAction::Backward)
      chunk = v - 1 - chunk;
    return PipelineAction{kind, (j / group) * p + j % p, chunk};
  };
  unsigned warmup = interleavedWarmup(p, rank, m, v);
  llvm::SmallVector<PipelineAction> actions;
  for (unsigned j = 0; j < warmup; ++j)
    actions.push_back(nth(PipelineAction::Forward, j));
  for (unsigned j = 0; j + warmup < total; ++j) {
    actions.push_back(nth(PipelineAction::Forward, j + warmup));
    actions.push_back(nth(PipelineAction::Backward, j));
  }
  for (unsigned j = total - warmup; j < total; ++j)
    actions.push_back(nth(PipelineAction::Backward, j));
  return actions;
}

llvm::SmallVector<PipelineAction>
braid::pipelineActions(PipelineScheduleKind kind, unsigned stages,
                       unsigned stage, unsigned microBatches, unsigned chunks) {
  if (kind == PipelineScheduleKind::Interleaved)
    return interleavedActions(stages, stage, microBatches, chunks);
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
