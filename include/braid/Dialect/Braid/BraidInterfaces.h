//===- BraidInterfaces.h - braid op interfaces ------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDINTERFACES_H
#define BRAID_DIALECT_BRAID_BRAIDINTERFACES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

namespace braid {

/// Bytes one element of `elementType` takes in memory (bf16: 2, i1: 1).
uint64_t getElementBytes(mlir::Type elementType);

/// Elements of a statically shaped tensor type; 0 for anything else.
uint64_t getNumElements(mlir::Type type);

/// Bytes of a statically shaped tensor type; 0 for anything else (futures,
/// events).
uint64_t getTensorBytes(mlir::Type type);

/// Sum of getTensorBytes over `types`.
uint64_t sumTensorBytes(mlir::TypeRange types);

namespace detail {
/// Bytes one rank contributes to the collective `op`: its tensor operands,
/// or, for a receive, the tensor it receives.
uint64_t getCollectiveCommBytes(mlir::Operation *op);
/// Whether the collective `op` is a start form (it yields a future).
bool isAsyncCollective(mlir::Operation *op);
} // namespace detail

} // namespace braid

#include "braid/Dialect/Braid/BraidInterfaces.h.inc"

#endif // BRAID_DIALECT_BRAID_BRAIDINTERFACES_H
