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

#include "braid/Dialect/Braid/BraidAttributes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace braid {

// The schedules are PipelineScheduleKind, declared in ODS
// (BraidAttributes.td: each schedule's description, its name and
// #braid.pipeline's spelling of it).

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
