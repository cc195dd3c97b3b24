//===- TensorParallel.h - braid-tensor-parallel's analysis ------*- C++ -*-===//
//
// What braid-tensor-parallel would make of a step, asked before it runs:
// braid-pipeline cuts a tensor-parallel step only where the values that
// cross the cut are whole.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_TENSORPARALLEL_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_TENSORPARALLEL_H

#include "braid/Dialect/Braid/BraidAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/DenseMap.h"

namespace braid {

/// The sharding braid-tensor-parallel gives each argument and op result of
/// `func` over axis `axis` of `grid` (absent: replicated), found on a copy:
/// `func` is left as it is. Failure, with no diagnostic, where it could not
/// partition `func` (the pass says why when it runs).
mlir::FailureOr<llvm::DenseMap<mlir::Value, ShardingAttr>>
inferShardings(mlir::func::FuncOp func, mlir::shard::GridOp grid, int64_t axis);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_TENSORPARALLEL_H
