//===- CostUtils.cpp - the runtime's cost model, seen from the IR ---------===//

#include "CostUtils.h"

#include "braid-common/DeviceGroup.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace braid;

FailureOr<cost::Cluster> braid::loadClusterFor(Operation *op,
                                               StringRef nameOrPath) {
  std::string name = nameOrPath.str();
  if (name.empty()) {
    // The module's cluster (braid-compile --cluster), else the default.
    auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                    : op->getParentOfType<ModuleOp>();
    auto attr =
        module
            ? module->getAttrOfType<StringAttr>(BraidDialect::kClusterAttrName)
            : StringAttr();
    name = attr ? attr.getValue().str() : kDefaultCluster;
  }
  cost::Cluster cluster;
  std::string error;
  if (!cost::loadCluster(name, cluster, error))
    return op->emitError() << "cannot load the cluster: " << error;
  return cluster;
}

DType braid::getCostType(Type type) {
  if (type.isBF16())
    return DType::BF16;
  if (type.isF16())
    return DType::F16;
  if (type.isF64())
    return DType::F64;
  return DType::F32;
}

double braid::getOpSeconds(Operation *op, const cost::Cluster &cluster) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost)
    return 0;
  // The type it computes in: its first float result, else operand.
  DType dtype = DType::F32;
  bool found = false;
  for (TypeRange types :
       {TypeRange(op->getResultTypes()), TypeRange(op->getOperandTypes())}) {
    for (Type t : types)
      if (auto tensor = dyn_cast<RankedTensorType>(t);
          tensor && isa<FloatType>(tensor.getElementType())) {
        dtype = getCostType(tensor.getElementType());
        found = true;
        break;
      }
    if (found)
      break;
  }
  return cost::kernelSeconds(cluster, cost.getFlops(),
                             cost.getBytesRead() + cost.getBytesWritten(),
                             dtype, cost.getProductShape());
}

cost::GroupShape braid::getGroupShape(CollectiveOpInterface op,
                                      const cost::Cluster &cluster) {
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid)
    return cost::GroupShape();
  // Rank 0's group (color 0).
  std::vector<int64_t> shape(grid.getShape().begin(), grid.getShape().end());
  std::vector<int64_t> axes(op.getGridAxes().begin(), op.getGridAxes().end());
  for (int64_t axis : axes)
    if (axis < 0 || size_t(axis) >= shape.size())
      return cost::GroupShape(); // The verifier rules this out.
  std::vector<int64_t> members = groupMembers(shape, axes, 0);
  return cost::groupShapeOf(cluster, members);
}

std::string braid::humanBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  unsigned unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return llvm::formatv("{0:f2} {1}", value, units[unit]).str();
}
