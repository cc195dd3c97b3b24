//===- PipelineSchedule.h - the order of a stage's micro-batches -*- C++
//-*-===//
//
// A pipeline schedule as torch.distributed.pipelining writes one: per
// stage, the list of its actions (a micro-batch's forward or backward) in
// the order the stage runs them. braid-pipeline builds each stage program
// by emitting its actions in this order; the schedules are IR-free so that
// their arithmetic (the micro-batches a stage holds) is tested without a
// model (unittests/PipelineScheduleTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
#define BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace braid {

enum class PipelineScheduleKind {
  /// Every micro-batch's forward, then every backward (Huang et al. 2019).
  GPipe,
  /// Stage i runs p - i - 1 forwards, then one forward and one backward in
  /// turn, then the remaining backwards (PipeDream-Flush, Megatron-LM's
  /// non-interleaved schedule, Narayanan et al. 2021).
  OneForwardOneBackward,
};

/// The schedule a name (`gpipe`, `1f1b`) spells, if any.
std::optional<PipelineScheduleKind> parsePipelineSchedule(llvm::StringRef name);

/// The names parsePipelineSchedule knows, for messages.
llvm::StringRef pipelineScheduleNames();

struct PipelineAction {
  enum Kind { Forward, Backward } kind;
  unsigned microBatch;
  bool operator==(const PipelineAction &other) const {
    return kind == other.kind && microBatch == other.microBatch;
  }
};

/// Stage `stage`'s actions, of `stages` stages running `microBatches`
/// micro-batches: each micro-batch's forward once and its backward once,
/// the forward first, forwards and backwards each in micro-batch order.
llvm::SmallVector<PipelineAction> pipelineActions(PipelineScheduleKind kind,
                                                  unsigned stages,
                                                  unsigned stage,
                                                  unsigned microBatches);

/// The most micro-batches whose forward has run and whose backward has not,
/// over `actions`: the activations a stage holds at its peak.
unsigned peakInFlight(llvm::ArrayRef<PipelineAction> actions);

} // namespace braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
