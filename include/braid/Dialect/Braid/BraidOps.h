//===- BraidOps.h - braid operations ----------------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDOPS_H
#define BRAID_DIALECT_BRAID_BRAIDOPS_H

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidInterfaces.h"
#include "braid/Dialect/Braid/BraidTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "braid/Dialect/Braid/BraidOps.h.inc"

namespace braid {

/// The braid.wait of the future that the collective start `start` yields, or
/// null when it is never waited (braid-verify-schedule rejects that).
WaitOp getWaitOf(mlir::Operation *start);

/// The first dimension of `shape` whose size is not 1, or -1. Pieces cut
/// along it (a gather's, a reduce-scatter's, a shard op's) are contiguous
/// blocks of the row-major buffer, whatever its reshapes.
int64_t outermostDim(llvm::ArrayRef<int64_t> shape);

} // namespace braid

#endif // BRAID_DIALECT_BRAID_BRAIDOPS_H
