//===- StagePrograms.h - check the programs of a pipeline -------*- C++ -*-===//
//
// A module whose functions carry `braid.stage` is a pipeline: one program
// per stage, each run by the ranks whose coordinate on the pipeline axis is
// its index. braid-verify-schedule checks such programs together with
// verifyStagePrograms (docs/Pipeline.md gives the argument).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEPROGRAMS_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEPROGRAMS_H

#include "mlir/IR/BuiltinOps.h"

namespace braid {

/// Checks the stage programs of `module` (its functions with `braid.stage`)
/// together: the stages cover the pipeline axis of one grid, each index
/// once; transfers between stages run on the pipeline axis alone; every
/// send has its receive, of the same type, in the peer's program; the
/// collectives whose group spans stages are the same in every program; and
/// the programs' issue orders cannot deadlock (StageSimulation). Succeeds
/// at once without stage functions. Reports every problem it finds.
mlir::LogicalResult verifyStagePrograms(mlir::ModuleOp module);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_STAGEPROGRAMS_H
