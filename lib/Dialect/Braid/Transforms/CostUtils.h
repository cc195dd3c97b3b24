//===- CostUtils.h - the runtime's cost model, seen from the IR -*- C++ -*-===//
//
// The passes time ops with the same cost model as the simulator
// (runtime/include/braid-runtime/CostModel.h): an op's flops and bytes come
// from CostOpInterface, a collective's group from its grid.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H

#include "braid/Dialect/Braid/BraidOps.h"

#include "braid-runtime/CostModel.h"

#include "mlir/IR/Operation.h"

namespace braid {

/// The cluster `nameOrPath` (a preset or a JSON file); an error on `op`
/// names the problem.
mlir::FailureOr<rt::Cluster> loadClusterFor(mlir::Operation *op,
                                            llvm::StringRef nameOrPath);

/// Seconds `op` takes on one GPU of `cluster` (0 for ops without
/// CostOpInterface and for views).
double getOpSeconds(mlir::Operation *op, const rt::Cluster &cluster);

/// How rank 0's group of `op` sits on `cluster`.
rt::GroupShape getGroupShape(CollectiveOpInterface op,
                             const rt::Cluster &cluster);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H
