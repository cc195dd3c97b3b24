//===- ScheduleUtils.h - helpers shared by the overlap passes ---*- C++ -*-===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <optional>
#include <string>

namespace braid {

/// The device group of a collective, `@world[0, 1]`: collectives with the
/// same key run on the same communicator.
std::string getGroupKey(CollectiveOpInterface op);

/// The body of a function the overlap passes can schedule: one block. Emits
/// an error and returns null for a function with several blocks.
mlir::Block *getSchedulableBody(mlir::FunctionOpInterface func);

/// The dense index of a stream: 0 for `#braid.stream<compute, 0>`, 1 + i for
/// `#braid.stream<comm, i>`; std::nullopt without a `braid.stream`. (braid
/// has one compute stream.)
std::optional<unsigned> getStreamIndex(mlir::Operation *op);

/// The attribute for stream index `index` (see getStreamIndex).
StreamAttr getStreamAttr(mlir::MLIRContext *context, unsigned index);

/// The largest number of tensor bytes live at once when the ops of `block`
/// run in the order `order` (all ops of the block but its terminator). A
/// value is live from its producer to its last use; block arguments are
/// live from the start, values the terminator uses to the end.
uint64_t getPeakLiveBytes(mlir::Block &block,
                          llvm::ArrayRef<mlir::Operation *> order);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_SCHEDULEUTILS_H
