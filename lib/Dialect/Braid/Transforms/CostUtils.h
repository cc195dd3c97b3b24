//===- CostUtils.h - the cost model, seen from the IR ----------*- C++ -*-===//
//
// The passes time ops with the same cost model as the simulator
// (common/include/braid-common/CostModel.h): an op's flops and bytes come
// from CostOpInterface, a collective's group from its grid.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H
#define BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H

#include "braid/Dialect/Braid/BraidOps.h"

#include "braid-common/CostModel.h"

#include "mlir/IR/Operation.h"

namespace braid {

/// The cluster a step is compiled for when neither a pass option nor the
/// module's `braid.cluster` names one.
inline constexpr const char *kDefaultCluster = "h100-8";

/// The cluster `nameOrPath` (a preset or a JSON file); empty: the one the
/// module of `op` names (`braid.cluster`), else kDefaultCluster. An error
/// on `op` names the problem.
mlir::FailureOr<cost::Cluster> loadClusterFor(mlir::Operation *op,
                                              llvm::StringRef nameOrPath);

/// The cost model's type of a float element type (f32 for any other).
DType getCostType(mlir::Type elementType);

/// Seconds `op` takes on one GPU of `cluster` (0 for ops without
/// CostOpInterface and for views).
double getOpSeconds(mlir::Operation *op, const cost::Cluster &cluster);

/// `bytes` in the largest binary unit they fill, `28.35 MiB` style (for
/// remarks and reports).
std::string humanBytes(uint64_t bytes);

/// How rank 0's group of `op` sits on `cluster`.
cost::GroupShape getGroupShape(CollectiveOpInterface op,
                               const cost::Cluster &cluster);

} // namespace braid

#endif // BRAID_LIB_DIALECT_BRAID_TRANSFORMS_COSTUTILS_H
