//===- ScheduleUtils.h - helpers shared by the overlap passes ---*- C++ -*-===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H

#include "braid/Dialect/Braid/Analysis/CollectiveGroup.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace braid {

/// A `braid.all_reduce` with `reduction = sum` of `value` over grid axis
/// `axis` of `grid`, at `builder`'s insertion point: the sum of a partial
/// value over the tensor-parallel axis (braid-tensor-parallel and
/// braid-sequence-parallel make it).
AllReduceOp createAxisSum(mlir::OpBuilder &builder, mlir::Value value,
                          mlir::FlatSymbolRefAttr grid, int64_t axis);

/// This rank's index in the group grid axes `axes` of `grid` span in
/// `func`: the function's braid.axis_index of those axes, or a new one at
/// the top of its body (braid-tensor-parallel, braid-sequence-parallel and
/// braid-collective-matmul share it).
mlir::Value getOrCreateAxisIndex(mlir::FunctionOpInterface func,
                                 mlir::FlatSymbolRefAttr grid,
                                 llvm::ArrayRef<int16_t> axes);
/// The same over the one grid axis `axis`.
mlir::Value getOrCreateAxisIndex(mlir::FunctionOpInterface func,
                                 mlir::FlatSymbolRefAttr grid, int64_t axis);

/// The block the overlap passes schedule in `func`: null for a declaration
/// (nothing to do), failure (diagnosed) for a body of several blocks.
mlir::FailureOr<mlir::Block *> schedulableBody(mlir::FunctionOpInterface func);

/// Calls `fn` on the body of every function of `module` that has one. The
/// overlap passes schedule one block: a function with several blocks is an
/// error. Goes on after a failure, so that every function is diagnosed, and
/// fails if any call or function failed.
mlir::LogicalResult forEachSchedulableBody(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(mlir::FunctionOpInterface,
                                           mlir::Block &)>
        fn);

/// Moves `op` right after `anchor` (to the block start for a null anchor),
/// after the ops placed there before it, so that ops placed at one anchor
/// keep the order in which they were placed. `lastPlaced` remembers, per
/// anchor, the last op placed there.
void placeAfter(
    mlir::Operation *op, mlir::Operation *anchor, mlir::Block &body,
    llvm::DenseMap<mlir::Operation *, mlir::Operation *> &lastPlaced);

/// The dense index of a stream: 0 for `#braid.stream<compute, 0>`, 1 + i for
/// `#braid.stream<comm, i>`; std::nullopt without a `braid.stream`. (braid
/// has one compute stream.)
std::optional<unsigned> getStreamIndex(mlir::Operation *op);

/// Whether `op` runs on the compute stream (or is not scheduled at all).
bool isOnComputeStream(mlir::Operation *op);

/// The attribute for stream index `index` (see getStreamIndex).
StreamAttr getStreamAttr(mlir::MLIRContext *context, unsigned index);

/// The parameter argument of `func` that `result`, a value the step
/// returns as that parameter (and nothing else reads), carries into after
/// the step: the argument with the result's role and type; null if none
/// (braid-plan-memory places a sharded parameter's all-gather there,
/// braid-verify-schedule checks it).
mlir::BlockArgument getCarriedParameter(mlir::FunctionOpInterface func,
                                        mlir::Value result);

/// The largest number of tensor bytes live at once when the ops of `block`
/// run in the order `order` (all ops of the block but its terminator). A
/// value is live from its producer to its last use; block arguments are
/// live from the start, values the terminator uses to the end.
uint64_t getPeakLiveBytes(mlir::Block &block,
                          llvm::ArrayRef<mlir::Operation *> order);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H
