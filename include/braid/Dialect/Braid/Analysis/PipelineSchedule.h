//===- PipelineSchedule.h - the order of a stage's micro-batches -*- C++
//-*-===//
//
// A pipeline schedule as torch.distributed.pipelining writes one: per
// stage, the list of its actions (a micro-batch's forward, backward, or
// weight gradient) in the order the stage runs them. braid-pipeline builds each
// stage program by emitting its actions in this order; the schedules are
// IR-free so that their arithmetic (the micro-batches a stage holds) is tested
// without a model (unittests/PipelineScheduleTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
#define BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace braid {

enum class PipelineScheduleKind {
  /// Every micro-batch's forward, then every backward (Huang et al. 2019).
  GPipe,
  /// Stage i runs p - i - 1 forwards, then one forward and one backward in
  /// turn, then the remaining backwards (PipeDream-Flush, Megatron-LM's
  /// non-interleaved schedule, Narayanan et al. 2021).
  OneForwardOneBackward,
  /// 1F1B with each backward split into B, the gradient of the stage's
  /// input that the previous stage waits for, and W, the rest (the weights'
  /// gradients); stage i runs micro-batch k's W right after the B of
  /// micro-batch k + i, and the last i at the end, so that they fill the
  /// waits of 1F1B's drain: ZB-H1 of Qi et al. 2024, a bubble of
  /// (p - 1)(F + B - W) instead of (p - 1)(F + B + W) for m >= p, holding
  /// p micro-batches on every stage (1F1B's most, on its first).
  ZeroBubbleH1,
  /// 1F1B over v virtual stages per rank (model chunks: rank r holds
  /// virtual stages r, r + p, ..., r + (v - 1) p of p v): Megatron-LM's
  /// interleaved schedule (Narayanan et al. 2021). Its forwards run in
  /// groups of p micro-batches, each group through chunk 0, then chunk 1,
  /// and so on (its backwards the chunks in reverse); rank r warms up with
  /// 2 (p - r - 1) + (v - 1) p forwards, then alternates, then drains. A
  /// bubble of (p - 1)(F + B) / v for m a multiple of p: 1F1B's divided by
  /// v, for v times the transfers.
  Interleaved,
};

/// The schedule a name (`gpipe`, `1f1b`, `zb-h1`, `interleaved`) spells,
/// if any.
std::optional<PipelineScheduleKind> parsePipelineSchedule(llvm::StringRef name);

/// The names parsePipelineSchedule knows, for messages.
llvm::StringRef pipelineScheduleNames();

/// Whether the schedule splits each backward into B and W.
bool splitsBackward(PipelineScheduleKind kind);

struct PipelineAction {
  /// Backward is the whole backward, or B where the schedule splits it;
  /// Weight is W.
  enum Kind { Forward, Backward, Weight } kind;
  unsigned microBatch;
  /// The model chunk (virtual stage chunk p + rank) under the interleaved
  /// schedule; 0 under the others.
  unsigned chunk = 0;
  bool operator==(const PipelineAction &other) const {
    return kind == other.kind && microBatch == other.microBatch &&
           chunk == other.chunk;
  }
};

/// Stage `stage`'s actions, of `stages` stages running `microBatches`
/// micro-batches: each micro-batch's forward once and its backward once
/// (and its W once, after its B, where the schedule splits the backward),
/// the forward first, each kind in micro-batch order. Under the interleaved
/// schedule, `stage` is a rank of `stages` holding `chunks` chunks each,
/// and each micro-batch's forward and backward come once per chunk;
/// `microBatches` must then be a multiple of `stages` (the caller checks).
llvm::SmallVector<PipelineAction>
pipelineActions(PipelineScheduleKind kind, unsigned stages, unsigned stage,
                unsigned microBatches, unsigned chunks = 1);

/// The interleaved schedule's warm-up on rank `stage` of `stages`: the
/// forwards it runs before its first backward, 2 (p - r - 1) + (v - 1) p,
/// or all of them with one group of micro-batches (m = p); its next
/// actions alternate a forward and a backward (its steady state) until the
/// forwards are done.
unsigned interleavedWarmup(unsigned stages, unsigned stage,
                           unsigned microBatches, unsigned chunks);

/// The most micro-batches (of one chunk each) whose forward has run and
/// whose backward (its W, where there is one) has not, over `actions`: the
/// activations a stage holds at its peak.
unsigned peakInFlight(llvm::ArrayRef<PipelineAction> actions);

} // namespace braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
